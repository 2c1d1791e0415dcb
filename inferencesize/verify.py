"""``plan --verify``: the instance count searched again request by request with the
discrete-event simulator.

The chosen plan's candidate gets the peak rate behind the question's router (least-loaded by
default): Poisson arrivals, evenly spaced ones at ``cv`` 0, or gamma gaps with the scenario's
coefficient of variation ``cv``; lengths as the question states them, jittered by 2 %
(:data:`LENGTH_JITTER`). Each latency limit
is held to the simulated requests at its own statistic (the mean, or p50 … p99 of the measured
requests under ``arrivals: poisson``), and a run whose instances do not keep up with the
arrivals (``simulate.stats.keeps_up``) misses whatever its latencies say.

The search runs in both directions from the analytic count N: when N meets the limits it
gallops down (N − 1, N − 2, N − 4, …) until a count misses, when N misses it gallops up (N + 1,
N + 2, N + 4, … up to :data:`MAX_FACTOR` · N) until one meets, then bisects the bracket (more
instances never raise a latency, so the smallest count that meets is the answer). Every count
is simulated on the same random requests and arrival times (one seed, one request count), so
the counts differ only in the instances; a search simulates O(log N) counts. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from inferencesize.estimate import Estimator
from inferencesize.limits import Limits
from inferencesize.planner import Plan
from inferencesize.question import Question
from inferencesize.simulate import (
    BatchingConfig,
    Workload,
    gamma_arrivals,
    lengths,
    per_request,
    poisson_arrivals,
    simulate_llm,
)
from inferencesize.simulate.stats import keeps_up, measured_mask, percentile_of
from inferencesize.vocabulary import (
    DEFAULT_ROUTER,
    Batching,
    BatchingMode,
    Router,
    Statistic,
    fraction_of,
)

#: Requests simulated per planned instance (at least MIN_REQUESTS in all), for every count.
REQUESTS_PER_INSTANCE = 400
MIN_REQUESTS = 4000
#: The run lasts at least this many planned E2E latencies (at most MAX_REQUESTS requests),
#: and its warm-up at least WARMUP_E2E of them: the instances fill up over about one E2E, and
#: a window that opens before they are full counts too few completions (a false overload).
RUN_E2E = 10.0
WARMUP_E2E = 2.5
MAX_REQUESTS = 20_000
#: Arrivals go on for this many planned E2E latencies after the last measured request (at
#: most as many requests again as the measured run), not measured: without them the last
#: measured requests would finish while the instances drain, in lighter batches than in
#: steady state, and read as faster than they are.
COOLDOWN_E2E = 1.5
#: Give up after this many times the planned instances.
MAX_FACTOR = 8
#: Share of the first requests left out as warm-up (at least; at most MAX_WARMUP).
WARMUP = 0.1
MAX_WARMUP = 0.5
#: Relative standard deviation of the simulated lengths around the question's. Real answers
#: never all end on the same token; exactly equal lengths lock a least-loaded router's
#: instances into cohorts that finish together, refill together and merge, a state that grows
#: with the run (a simulation of 40 minutes of Llama-3.1-70B traffic had its p99 TTFT still
#: rising at 3.3 s, against 0.35 s with 2 % of jitter, which any realistic spread gives).
LENGTH_JITTER = 0.02
#: Statistics every simulated count reports.
STATISTICS: tuple[str, ...] = tuple(s.value for s in Statistic)


@dataclass(frozen=True)
class Latencies:
    """TTFT, ITL and E2E of the simulated requests at one statistic each, seconds."""

    ttft_s: float
    itl_s: float
    e2e_s: float

    def by_name(self) -> dict[str, float]:
        return {"ttft": self.ttft_s, "itl": self.itl_s, "e2e": self.e2e_s}


@dataclass(frozen=True)
class Run:
    """One simulated instance count: every statistic of TTFT, ITL and E2E, the values the
    limits are held to (each at its statistic), whether it kept up and meets them."""

    instances: int
    stats: Mapping[str, Latencies]
    held: Latencies
    overloaded: bool
    meets: bool


@dataclass(frozen=True)
class Verification:
    """The analytic count's run, the smallest count that meets the limits by simulation (or
    the largest tried, ``meets`` False) and its run, and what was simulated."""

    statistics: tuple[str, str, str]
    cv: float
    requests: int
    seed: int
    planned: Run
    found: Run
    searched: tuple[int, ...] = field(default_factory=tuple)
    router: str = str(DEFAULT_ROUTER)

    @property
    def planned_instances(self) -> int:
        return self.planned.instances

    @property
    def instances(self) -> int:
        return self.found.instances

    @property
    def meets(self) -> bool:
        return self.found.meets

    @property
    def delta(self) -> int:
        """Simulated minus analytic instances."""
        return self.found.instances - self.planned.instances

    @property
    def agrees(self) -> bool:
        """The two counts within one instance or 10 % of the analytic count (and the
        simulated one meets the limits)."""
        return self.meets and abs(self.delta) <= max(1.0, 0.1 * self.planned.instances)


def statistic_of(values: np.ndarray, statistic: str) -> float:
    """``statistic`` ("mean", "p50" … "p99") of the non-NaN ``values``."""
    q = fraction_of(statistic)
    if q is None:
        v = values[~np.isnan(values)]
        return float(v.mean()) if v.size else float("nan")
    return percentile_of(values, q)


def workload(
    isl: int,
    osl: int,
    rate_rps: float,
    cv: float,
    requests: int,
    seed: int,
    jitter: float = LENGTH_JITTER,
) -> Workload:
    """The requests every count is simulated on: the question's lengths, each jittered by
    ``jitter`` of itself (normal, rounded), arrivals at ``rate_rps`` (Poisson when ``cv`` is
    1, evenly spaced at 0, else gamma gaps)."""
    rng = np.random.default_rng(seed)
    isl_a = lengths(rng, requests, isl, jitter * isl)
    osl_a = lengths(rng, requests, osl, jitter * osl)
    if cv == 1.0:
        times = poisson_arrivals(rng, requests, rate_rps)
    else:
        times = gamma_arrivals(rng, requests, rate_rps, cv)
    return Workload(isl_a, osl_a, times)


def _run(
    est: Estimator,
    p: Plan,
    isl: int,
    osl: int,
    batching: BatchingMode,
    wl: Workload,
    instances: int,
    limits: Limits,
    warmup: float = WARMUP,
    cooldown: int = 0,
    router: Router = DEFAULT_ROUTER,
    seed: int = 0,
) -> Run:
    res = est.resolve(p.candidate, isl + osl)
    assert res.deployment is not None
    if batching == Batching.STATIC:
        cfg = BatchingConfig("static", int(p.point.concurrency))  # a whole batch
    else:
        cfg = BatchingConfig("inflight", res.max_concurrency)
    sim = simulate_llm(
        res.deployment, p.candidate.gpu.memory_bytes, wl, cfg, instances, router, seed=seed
    )
    keep = measured_mask(sim, warmup, cooldown)
    pr = per_request(sim)
    values = {"ttft": pr.ttft_s[keep], "itl": pr.itl_s[keep], "e2e": pr.e2e_s[keep]}
    stats = {
        s: Latencies(*(statistic_of(values[n], s) for n in ("ttft", "itl", "e2e")))
        for s in STATISTICS
    }
    held = Latencies(
        *(statistic_of(values[n], limits.statistic(n)) for n in ("ttft", "itl", "e2e"))
    )
    overloaded = keeps_up(sim, keep)[2]
    by_name = held.by_name()
    meets = not overloaded and all(by_name[n] <= limit for n, limit in limits.active())
    return Run(instances, stats, held, overloaded, meets)


def _per_e2e(rate_rps: float, e2e_s: float) -> float:
    """Arrivals in one planned E2E latency (none when it is NaN or not positive)."""
    e2e = e2e_s if e2e_s == e2e_s and e2e_s > 0 else 0.0
    return e2e * rate_rps


def _warmup(per_e2e: float, count: int) -> float:
    """Warm-up share of ``count`` measured-run requests: WARMUP of them or WARMUP_E2E
    latencies, whichever is longer (at most MAX_WARMUP)."""
    return min(MAX_WARMUP, max(WARMUP, WARMUP_E2E * per_e2e / count))


def run_length(
    rate_rps: float, e2e_s: float, planned: int, requests: int | None = None
) -> tuple[int, float, int]:
    """(requests, warm-up share, cool-down requests) of a verification run at ``rate_rps``
    whose requests take about ``e2e_s``: at least MIN_REQUESTS and REQUESTS_PER_INSTANCE per
    planned instance, and RUN_E2E latencies long (at most MAX_REQUESTS); the warm-up
    (:func:`_warmup`); then COOLDOWN_E2E latencies of arrivals more, at most as many as the
    requests, not measured."""
    per = _per_e2e(rate_rps, e2e_s)
    count = requests or min(
        MAX_REQUESTS, max(MIN_REQUESTS, REQUESTS_PER_INSTANCE * planned, round(RUN_E2E * per))
    )
    return count, _warmup(per, count), min(count, math.ceil(COOLDOWN_E2E * per))


def replay_length(rate_rps: float, e2e_s: float, total: int) -> tuple[int, float, int]:
    """(measured-run requests, warm-up share, cool-down requests) of a replay of ``total``
    requests: the cool-down COOLDOWN_E2E latencies of its last requests (at most a quarter),
    the warm-up as for a generated run."""
    per = _per_e2e(rate_rps, e2e_s)
    cooldown = min(total // 4, math.ceil(COOLDOWN_E2E * per))
    return total - cooldown, _warmup(per, total - cooldown), cooldown


def verify_plan(
    est: Estimator,
    p: Plan,
    q: Question,
    requests: int | None = None,
    seed: int = 0,
    replay: Workload | None = None,
) -> Verification:
    """The smallest instance count of ``p``'s candidate whose simulation at the plan's peak
    meets the limits of question ``q`` (the one ``p`` was planned for: its lengths, limits at
    their statistics, batching, and its arrivals' cv and router), searched from the analytic
    count in both directions (module docstring). ``replay``: the requests to simulate instead
    of generated ones (a trace brought to the peak rate), every one of them: the warm-up as
    for a generated run, the cool-down the last of them (at most a quarter)."""
    isl, osl, limits, batching = q.isl, q.osl, q.limits, q.batching
    cv, router = q.arrivals.cv, q.arrivals.router
    planned = p.instances
    if replay is not None:
        count, warmup, cooldown = replay_length(p.peak_rps, p.point.e2e_s, len(replay.isl))
        wl = replay
    else:
        count, warmup, cooldown = run_length(p.peak_rps, p.point.e2e_s, planned, requests)
        wl = workload(isl, osl, p.peak_rps, cv, count + cooldown, seed)
    cache: dict[int, Run] = {}

    def at(n: int) -> Run:
        if n not in cache:
            cache[n] = _run(
                est, p, isl, osl, batching, wl, n, limits, warmup, cooldown, router, seed
            )
        return cache[n]

    def done(n: int) -> Verification:
        return Verification(
            limits.stats,
            cv,
            count + cooldown,
            seed,
            at(planned),
            at(n),
            tuple(sorted(cache)),
            str(router),
        )

    if at(planned).meets:
        lo, hi, step = 0, planned, 1  # lo misses (no instance serves nothing), hi meets
        while planned - step >= 1:
            n = planned - step
            if not at(n).meets:
                lo = n
                break
            hi, step = n, step * 2
    else:
        lo, hi, step = planned, 0, 1  # lo misses; hi meets once found
        while planned + step <= planned * MAX_FACTOR:
            n = planned + step
            if at(n).meets:
                hi = n
                break
            lo, step = n, step * 2
        if hi == 0:
            return done(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid).meets:
            hi = mid
        else:
            lo = mid
    return done(hi)
