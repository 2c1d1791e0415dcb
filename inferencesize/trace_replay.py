"""``plan --verify`` on a trace: the trace replayed as it came (its own times, lengths and
bursts; rates times ``--trace-scale``) through the simulator against a fleet window by
window, with the plan's router, and each limit held at its statistic per window and over the
whole trace.

Each window's requests are simulated on the instances the fleet runs in it (a fixed count, or
the autoscaled fleet's count for that window): the simulator holds one instance count per
run, so a window starts with idle instances and what is still running at its end is
finished on them (a window's first requests wait a little less than behind a busy fleet:
optimistic by at most the work in flight at a boundary, a few seconds in windows of
minutes). Every request counts (no warm-up is cut: the trace is the traffic). The whole
trace's statistics pool every request of every window.

Pure: the trace's requests come in (:class:`inferencesize.simulate.Workload`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from inferencesize.estimate import Estimator
from inferencesize.planner import Limits, Plan
from inferencesize.simulate import BatchingConfig, Workload, per_request, simulate_llm
from inferencesize.verify import Latencies, statistic_of
from inferencesize.vocabulary import DEFAULT_ROUTER, Batching, BatchingMode, Router

METRICS: tuple[Literal["ttft", "itl", "e2e"], ...] = ("ttft", "itl", "e2e")


@dataclass(frozen=True)
class WindowReplay:
    """One window replayed: its instances, requests, latencies at the limits' statistics."""

    start_s: float
    end_s: float
    instances: int
    requests: int
    held: Latencies
    meets: bool


@dataclass(frozen=True)
class TraceReplay:
    """A trace replayed window by window against one fleet."""

    windows: tuple[WindowReplay, ...]
    held: Latencies  # over the whole trace
    meets: bool  # every limit held over the whole trace
    requests: int
    router: str = str(DEFAULT_ROUTER)

    @property
    def missed(self) -> list[int]:
        """Indexes of the windows that miss a limit."""
        return [k for k, w in enumerate(self.windows) if not w.meets]


def _held(values: dict[str, np.ndarray], limits: Limits) -> tuple[Latencies, bool]:
    held = Latencies(*(statistic_of(values[n], limits.statistic(n)) for n in METRICS))
    by_name = held.by_name()
    return held, all(by_name[n] <= limit for n, limit in limits.active())


def replay_trace(
    est: Estimator,
    p: Plan,
    isl: int,
    osl: int,
    limits: Limits,
    trace: Workload,
    bounds_s: Sequence[tuple[float, float]],
    instances: Sequence[int],
    *,
    batching: BatchingMode = Batching.INFLIGHT,
    router: Router = DEFAULT_ROUTER,
    seed: int = 0,
) -> TraceReplay:
    """Replay ``trace`` (arrival times from the first window's start, sorted) window by
    window, window k's requests (arriving in ``bounds_s[k]``; the last window's end
    included) on ``instances[k]`` instances of ``p``'s candidate (module docstring)."""
    assert trace.arrival_s is not None
    res = est.resolve(p.candidate, isl + osl)
    assert res.deployment is not None
    if batching == Batching.STATIC:
        cfg = BatchingConfig("static", int(p.point.concurrency))
    else:
        cfg = BatchingConfig("inflight", res.max_concurrency)
    t = trace.arrival_s
    pooled: dict[str, list[np.ndarray]] = {n: [] for n in METRICS}
    out = []
    for k, ((start, end), n) in enumerate(zip(bounds_s, instances, strict=True)):
        last = k == len(bounds_s) - 1
        lo = int(np.searchsorted(t, start, side="left"))
        hi = int(np.searchsorted(t, end, side="right" if last else "left"))
        if hi <= lo:
            out.append(WindowReplay(start, end, n, 0, Latencies(0.0, 0.0, 0.0), True))
            continue
        wl = Workload(trace.isl[lo:hi], trace.osl[lo:hi], t[lo:hi] - t[lo])
        sim = simulate_llm(
            res.deployment, p.candidate.gpu.memory_bytes, wl, cfg, max(n, 1), router, seed=seed
        )
        pr = per_request(sim)
        values = {"ttft": pr.ttft_s, "itl": pr.itl_s, "e2e": pr.e2e_s}
        for name in METRICS:
            pooled[name].append(values[name])
        held, meets = _held(values, limits)
        out.append(WindowReplay(start, end, n, hi - lo, held, meets))
    values = {n: np.concatenate(v) if v else np.zeros(0) for n, v in pooled.items()}
    held, meets = _held(values, limits)
    requests = int(sum(w.requests for w in out))
    return TraceReplay(tuple(out), held, meets, requests, str(router))
