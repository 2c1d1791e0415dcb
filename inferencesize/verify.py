"""``plan --verify``: check a plan request by request with the discrete-event simulator.

The chosen plan's instances get Poisson arrivals at the peak rate behind a least-loaded
balancer; the simulated mean TTFT, ITL and E2E are held to the plan's limits (mean limits, the
statistic the planner sizes for), and the scenario's percentile (e.g. p95) of each is reported
beside them. When a mean misses, instances are added (doubling, then bisection on the count,
with the same random arrivals for every count) until the means meet the limits.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inferencesize.estimate import Estimator
from inferencesize.planner import Limits, Plan
from inferencesize.simulate import (
    BatchingConfig,
    Workload,
    lengths,
    per_request,
    poisson_arrivals,
    simulate_llm,
)
from inferencesize.simulate.stats import measured_mask, percentile_of
from inferencesize.units import Batching, BatchingMode

#: Requests simulated per instance (at least MIN_REQUESTS in all).
REQUESTS_PER_INSTANCE = 400
MIN_REQUESTS = 4000
#: Give up after this many times the planned instances.
MAX_FACTOR = 8


@dataclass(frozen=True)
class Latencies:
    """TTFT, ITL and E2E of the simulated requests at one statistic, seconds."""

    ttft_s: float
    itl_s: float
    e2e_s: float

    def meets(self, limits: Limits) -> bool:
        by_name = {"ttft": self.ttft_s, "itl": self.itl_s, "e2e": self.e2e_s}
        return all(by_name[name] <= limit for name, limit in limits.active())


@dataclass(frozen=True)
class Verification:
    """Simulated latencies of a plan (the mean, which the limits are held to, and the
    ``percentile``) and the instances it needed."""

    percentile: float
    requests: int
    seed: int
    planned_instances: int
    instances: int
    mean: Latencies
    tail: Latencies
    meets: bool

    @property
    def added(self) -> int:
        return self.instances - self.planned_instances


def _run(
    est: Estimator,
    p: Plan,
    isl: int,
    osl: int,
    batching: BatchingMode,
    instances: int,
    requests: int,
    seed: int,
    q: float,
) -> tuple[Latencies, Latencies]:
    res = est.resolve(p.candidate, isl + osl)
    assert res.deployment is not None
    rng = np.random.default_rng(seed)
    wl = Workload(
        lengths(rng, requests, isl),
        lengths(rng, requests, osl),
        poisson_arrivals(rng, requests, p.peak_rps),
    )
    if batching == Batching.STATIC:
        cfg = BatchingConfig("static", int(p.point.concurrency))  # a whole batch
    else:
        cfg = BatchingConfig("inflight", res.max_concurrency)
    sim = simulate_llm(res.deployment, p.candidate.gpu.memory_bytes, wl, cfg, instances)
    keep = measured_mask(sim, 0.1)
    pr = per_request(sim)
    ttft, itl, e2e = pr.ttft_s[keep], pr.itl_s[keep], pr.e2e_s[keep]
    mean = Latencies(*(float(np.nanmean(v)) for v in (ttft, itl, e2e)))
    tail = Latencies(*(percentile_of(v, q) for v in (ttft, itl, e2e)))
    return mean, tail


def _meets(limits: Limits, values: tuple[Latencies, Latencies]) -> bool:
    """The limits are mean limits (what the planner sizes for): held to the simulated means."""
    return values[0].meets(limits)


def verify_plan(
    est: Estimator,
    p: Plan,
    isl: int,
    osl: int,
    limits: Limits,
    percentile: float,
    batching: BatchingMode = Batching.INFLIGHT,
    requests: int | None = None,
    seed: int = 0,
) -> Verification:
    """Simulate ``p`` at its peak rate; add instances until the simulated mean latencies meet
    ``limits`` (mean limits, as planned); report the ``percentile`` of each as well."""
    if not 0 < percentile < 1:
        raise ValueError(f"percentile must be in (0, 1) (got {percentile})")
    planned = p.instances

    def count(inst: int) -> int:
        return requests or max(MIN_REQUESTS, REQUESTS_PER_INSTANCE * inst)

    cache: dict[int, tuple[Latencies, Latencies]] = {}

    def at(inst: int) -> tuple[Latencies, Latencies]:
        if inst not in cache:
            cache[inst] = _run(est, p, isl, osl, batching, inst, count(inst), seed, percentile)
        return cache[inst]

    def result(inst: int, ok: bool) -> Verification:
        mean, tail = at(inst)
        return Verification(percentile, count(inst), seed, planned, inst, mean, tail, ok)

    if _meets(limits, at(planned)):
        return result(planned, True)
    lo, hi = planned, 0  # lo misses; hi meets once found
    step = 1
    while planned + step <= planned * MAX_FACTOR:
        if _meets(limits, at(planned + step)):
            hi = planned + step
            break
        lo = planned + step
        step *= 2
    if hi == 0:
        return result(lo, False)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _meets(limits, at(mid)):
            hi = mid
        else:
            lo = mid
    return result(hi, True)
