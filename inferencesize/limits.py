"""Latency limits as a resolved question holds them: seconds, each at its statistic.

A scenario states its limits in milliseconds (``ttft_ms``) with ``latency_stat``; they are
turned into :class:`Limits` once (:meth:`Limits.of`), and every solver reads them from there.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inferencesize.serving import OperatingPoint
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.units import ms_to_s
from inferencesize.vocabulary import Metric, Mode


@dataclass(frozen=True)
class Limits:
    """Latency limits in seconds (None = no limit), each held at a statistic over requests
    (``stats``: TTFT, ITL, E2E; "mean" or "p50" … "p99"). The closed-loop model predicts
    means only; percentiles need the open-loop model (:mod:`inferencesize.openloop`)."""

    ttft_s: float | None = None
    itl_s: float | None = None
    e2e_s: float | None = None
    mode: Mode = Mode.STREAMING
    stats: tuple[str, str, str] = ("mean", "mean", "mean")

    @classmethod
    def from_ms(
        cls, ttft_ms: float | None, itl_ms: float | None, e2e_ms: float | None, mode: Mode
    ) -> Limits:
        """Limits from millisecond values as scenarios and flags state them."""

        return cls(ms_to_s(ttft_ms), ms_to_s(itl_ms), ms_to_s(e2e_ms), mode)

    @classmethod
    def of(cls, scenario: ScenarioSpec) -> Limits:
        """A scenario's limits, at their statistics."""
        plain = cls.from_ms(scenario.ttft_ms, scenario.itl_ms, scenario.e2e_ms, scenario.mode)
        return replace(plain, stats=scenario.statistics)

    def statistic(self, name: Metric) -> str:
        return self.stats[("ttft", "itl", "e2e").index(name)]

    def open_loop_limits(self) -> dict[str, tuple[str, float]]:
        """metric -> (statistic, seconds) of the active limits (``openloop.max_rate_within``)."""
        return {name: (self.statistic(name), limit) for name, limit in self.active()}

    def active(self) -> list[tuple[Metric, float]]:
        """The (name, limit) pairs that apply in this mode."""
        if self.mode == "sequential":
            return [("e2e", self.e2e_s)] if self.e2e_s is not None else []
        pairs: list[tuple[Metric, float | None]] = [
            ("ttft", self.ttft_s),
            ("itl", self.itl_s),
            ("e2e", self.e2e_s),
        ]
        return [(k, v) for k, v in pairs if v is not None]

    def miss(self, op: OperatingPoint) -> tuple[Metric, float, float] | None:
        """The first limit ``op`` misses as (name, value, limit), or None when it meets all."""
        for name, limit in self.active():
            value = _metric(op, name)
            if value > limit:
                return name, value, limit
        return None

    def worst_ratio(self, op: OperatingPoint) -> tuple[Metric, float, float, float]:
        """The limit ``op`` misses by the largest factor: (name, value, limit, value/limit)."""
        worst: tuple[Metric, float, float, float] | None = None
        for name, limit in self.active():
            value = _metric(op, name)
            ratio = value / limit
            if worst is None or ratio > worst[3]:
                worst = (name, value, limit, ratio)
        assert worst is not None
        return worst


def _metric(op: OperatingPoint, name: Metric) -> float:
    if name == "ttft":
        return op.ttft_s
    if name == "itl":
        return op.itl_s
    return op.e2e_s
