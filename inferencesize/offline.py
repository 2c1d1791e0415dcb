"""Offline sizing: a batch of requests finished by a deadline, with no latency limit.

Every request of the batch is waiting from the start, so an instance runs at its
throughput-optimal load: the closed-loop concurrency in [1, KV capacity] with the highest
request rate X (``planner.search_point`` with no active limit, which is exactly that maximum).
N requests within a deadline of D seconds need the throughput N / D, and so

    instances = ⌈ (N / D) / X ⌉,

packed onto servers as any plan. ``tokens_per_day`` = T states the volume as tokens (input +
output) every day: N = T / (ISL + OSL) requests, D = the deadline (24 h unless stated). The
batch takes N / (instances · X) to run through, plus the drain: the last requests admitted
finish one E2E later (:func:`finish_s`). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferencesize.units import SECONDS_PER_DAY, SECONDS_PER_HOUR


@dataclass(frozen=True)
class OfflineBatch:
    """``requests`` to finish within ``deadline_s`` seconds (``tokens_per_day``: the volume
    they came from, when stated as tokens)."""

    requests: float
    deadline_s: float
    tokens_per_day: float | None = None

    def __post_init__(self) -> None:
        if not (self.requests > 0 and self.deadline_s > 0):
            raise ValueError(
                f"an offline batch needs requests > 0 and a deadline > 0 s (got"
                f" {self.requests}, {self.deadline_s})"
            )

    @property
    def rate_rps(self) -> float:
        """The throughput the batch needs, requests/s."""
        return self.requests / self.deadline_s


def offline_batch(
    isl: float,
    osl: float,
    *,
    requests: float | None = None,
    tokens_per_day: float | None = None,
    deadline_h: float | None = None,
) -> OfflineBatch:
    """The batch of a scenario's ``offline:`` block: ``requests`` within ``deadline_h`` hours,
    or ``tokens_per_day`` (input + output) of ``isl`` + ``osl``-token requests within
    ``deadline_h`` (default a day)."""
    if (requests is None) == (tokens_per_day is None):
        raise ValueError("give exactly one of requests or tokens_per_day")
    if requests is not None:
        if deadline_h is None:
            raise ValueError("a batch of requests needs a deadline")
        return OfflineBatch(requests, deadline_h * SECONDS_PER_HOUR)
    assert tokens_per_day is not None
    deadline_s = deadline_h * SECONDS_PER_HOUR if deadline_h is not None else SECONDS_PER_DAY
    return OfflineBatch(tokens_per_day / (isl + osl), deadline_s, tokens_per_day)


def finish_s(batch: OfflineBatch, capacity_rps: float, e2e_s: float) -> float:
    """Seconds until the last request of ``batch`` is answered by a fleet serving
    ``capacity_rps`` at a load whose requests take ``e2e_s`` each: the batch passes through at
    the fleet's rate, and the last ones admitted finish one E2E later."""
    if capacity_rps <= 0:
        raise ValueError(f"capacity must be > 0 requests/s (got {capacity_rps})")
    return batch.requests / capacity_rps + e2e_s
