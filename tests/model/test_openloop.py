"""The open-loop model of one in-flight instance (the openloop package): hand-checked limits,
classical queues it reduces to, its closed forms against quadrature, monotonicity, and the
simulator."""

from __future__ import annotations

import itertools
import math
from functools import cache
from typing import Any

import numpy as np
import pytest
from scipy import stats
from shipped import catalog, estimator

from inferencesize.estimate import Candidate, Resolved
from inferencesize.latency import per_token_decode_s, prefill, step_time
from inferencesize.openloop import (
    QUANTILES,
    STEP_TOKENS,
    InstanceSearch,
    OpenLoopPoint,
    RateSearch,
    max_rate_rps,
    max_rate_within,
    open_loop,
    steps_of,
)
from inferencesize.openloop import arrivals as arrivals_module
from inferencesize.openloop.arrivals import Counts, arrivals
from inferencesize.openloop.dist import cdf_roots
from inferencesize.openloop.point import Quantiles, point
from inferencesize.openloop.queue import (
    MAX_PERIODS,
    MAX_REDUCTION_WORK,
    MAX_STATES,
    Levels,
    LowerSolve,
    build_queue,
    chain,
    counts_after,
    level_cap,
    merge_periods,
    queue_size,
    ttft_atoms,
)
from inferencesize.openloop.running import (
    batch_mean,
    batch_pmf,
    feedback,
    log_rising,
    supply,
    supply_slope,
)
from inferencesize.openloop.steps import Steps, steps
from inferencesize.parallelism import Parallelism
from inferencesize.simulate import (
    BatchingConfig,
    Workload,
    per_request,
    poisson_arrivals,
    simulate_llm,
)
from inferencesize.simulate.stats import measured_mask

ISL, OSL = 2000, 200


@cache
def _resolved(model: str, hardware: str, tp: int, isl: int, osl: int) -> Resolved:
    gpu, system = catalog().hardware(hardware)
    cand = Candidate(catalog().model(model), gpu, system, "fp8", "fp8", Parallelism(tp))
    res = estimator().resolve(cand, isl + osl)
    assert res.deployment is not None and res.reason is None
    return res


def _case() -> Resolved:
    return _resolved("llama-3-8b", "h100-sxm", 1, ISL, OSL)


# ---------------------------------------------------------------------------------------------
# Limits by hand
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "tp"), [("llama-3-8b", 1), ("mixtral-8x7b", 2)], ids=["one-gpu", "tp2-handoff"]
)
def test_vanishing_load_is_one_prefill_alone_then_decode_alone(model: str, tp: int) -> None:
    res = _resolved(model, "h100-sxm", tp, ISL, OSL)
    dep = res.deployment
    assert dep is not None
    c = res.max_concurrency
    # a request alone: its prompt step p(1), the hand-off on more than one GPU, then decode
    # steps of one sequence at the mean context ISL + OSL/2 = 2100 tokens
    p1 = float(prefill(dep, 1, ISL).total_s)
    d1 = float(per_token_decode_s(dep, 1, ISL + OSL / 2))
    assert (dep.handoff_s > 0) == (tp > 1)
    rate = 1e-5 * max_rate_rps(dep, ISL, OSL, max_in_flight=c)
    p = open_loop(dep, ISL, OSL, rate, max_in_flight=c)
    assert p.stable
    assert p.ttft_s == pytest.approx(p1 + dep.handoff_s, rel=1e-3)
    assert p.itl_s == pytest.approx(d1, rel=1e-3)
    assert p.e2e_s == pytest.approx(p1 + dep.handoff_s + (OSL - 1) * d1, rel=1e-3)
    assert p.ttft_q[0.5] == pytest.approx(p1 + dep.handoff_s, rel=1e-3)


def test_sustainable_rate_by_hand_and_instability_past_it() -> None:
    res = _case()
    dep = res.deployment
    assert dep is not None
    c = res.max_concurrency
    # saturated: c sequences decode; prompt steps hold K = ⌊8192 / 2000⌋ = 4 prompts
    k = 8192 // ISL
    assert k == 4
    p4 = float(step_time(dep, 0, 0, 4, ISL).total_s)
    dc = float(per_token_decode_s(dep, c, ISL + OSL / 2))
    want = 1.0 / (p4 / 4 + (OSL - 1) * dc / c)
    top = max_rate_rps(dep, ISL, OSL, max_in_flight=c)
    assert top == pytest.approx(want, rel=1e-12)
    below = open_loop(dep, ISL, OSL, 0.5 * top, max_in_flight=c)
    assert below.stable and below.utilisation == pytest.approx(0.5)
    assert below.max_rate_rps == pytest.approx(top)
    for f in (1.0, 1.5):
        p = open_loop(dep, ISL, OSL, f * top, max_in_flight=c)
        assert not p.stable and p.utilisation == pytest.approx(f)
        assert math.isinf(p.ttft_s) and math.isinf(p.e2e_q[0.99])


def _md1_wait_cdf(t: float, lam: float, d: float) -> float:
    """P(W ≤ t) in M/D/1 (Erlang 1909): (1 − ρ) Σ_{k=0}^{⌊t/D⌋} (λ(kD − t))^k / k! · e^{λ(t − kD)}."""
    rho = lam * d
    return (1 - rho) * sum(
        (lam * (k * d - t)) ** k / math.factorial(k) * math.exp(lam * (t - k * d))
        for k in range(int(t // d) + 1)
    )


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.9])
def test_one_prompt_per_step_and_one_token_answers_is_md1(rho: float) -> None:
    """K = 1 (step_tokens below the prompt) and OSL = 1 (no decode): the prompt steps are an
    M/D/1 queue with service S = p(1): W = ρS/(2(1 − ρ)) (Pollaczek–Khinchine)."""
    res = _case()
    dep = res.deployment
    assert dep is not None
    s = float(prefill(dep, 1, ISL).total_s)
    assert max_rate_rps(dep, ISL, 1, max_in_flight=64, step_tokens=1) == pytest.approx(1 / s)
    lam = rho / s
    p = open_loop(dep, ISL, 1, lam, max_in_flight=64, step_tokens=1)
    # e.g. ρ = 0.6: W = 0.6 S / (2 · 0.4) = 0.75 S, TTFT = 1.75 S
    assert p.ttft_s == pytest.approx(s + rho * s / (2 * (1 - rho)), rel=1e-6)
    assert p.e2e_s == p.ttft_s and math.isnan(p.itl_s)
    # the waiting time's p90 from Erlang's exact M/D/1 distribution, by bisection
    lo, hi = 0.0, 40 * s
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _md1_wait_cdf(mid, lam, s) < 0.9 else (lo, mid)
    assert p.ttft_q[0.9] == pytest.approx(s + hi, rel=5e-3)  # 16-cell position quadrature


@pytest.mark.parametrize("rho", [0.3, 0.8, 0.95])
def test_decode_steps_are_vacations_fuhrmann_cooper(rho: float) -> None:
    """Prompt steps of S = 50 ms one at a time; when no prompt waits the server takes a decode
    step of 20 or 60 ms (even odds): M/D/1 with multiple vacations, W = ρS/(2(1 − ρ)) +
    E[V²]/(2E[V]) = ρS/(2(1 − ρ)) + (0.0004 + 0.0036)/2 / (2 · 0.04) = … + 25 ms."""
    s = 0.05
    st = Steps(float(ISL), 1.0, 1, 8, np.array([0.0, s]), np.full(9, 0.01), 0.0)
    arr = arrivals(rho / s, 1.0)
    qu = build_queue(st, arr, queue_size(st, arr))
    lens, probs = np.array([0.02, 0.06]), np.array([0.5, 0.5])
    values, weights = ttft_atoms(st, arr, qu, chain(st, arr, qu, lens, probs, 0.0))
    want = rho * s / (2 * (1 - rho)) + 0.025
    assert float(values @ weights) - s == pytest.approx(want, rel=1e-6)
    # exponential-like vacations are not special: the residual of the one in progress is
    # E[V²]/(2E[V]); with the server idle instead (no vacations) it is Pollaczek–Khinchine
    values, weights = ttft_atoms(st, arr, qu, chain(st, arr, qu, lens, probs, 1.0))
    assert float(values @ weights) - s == pytest.approx(rho * s / (2 * (1 - rho)), rel=1e-6)


def test_poisson_counts_are_poisson() -> None:
    # λ = 5/s over τ = 0.4 s: Poisson with mean 2, P(k) = e^{−2} 2^k / k!
    arr = arrivals(5.0, 1.0)
    pmf = Counts(arr, 64).from_phases(np.array([0.4]), np.array([1.0]))[0]
    want = [math.exp(-2) * 2**k / math.factorial(k) for k in range(12)]
    assert pmf[:12] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("cv", [1.5, 2.0, 3.0, 8.0, 10.0])
def test_gamma_gaps_as_a_mixture_of_exponentials(cv: float) -> None:
    """The five phases keep the mean gap and cv² exactly, and the gap distribution from 0.01
    mean gaps up within 0.03 (a burst is its short gaps: benchmarks/openloop_vs_sim.py checks
    what the phases give against simulated gamma arrivals)."""
    rate = 4.0
    arr = arrivals(rate, cv)
    assert arr.phases == 5
    mean = 1.0 / arr.exit  # hyperexponential: phase j is exponential with mean 1/s_j
    assert float(arr.start @ mean) == pytest.approx(1 / rate, rel=1e-9)
    second = 2 * float(arr.start @ mean**2)
    assert second * rate**2 - 1 == pytest.approx(cv * cv, rel=1e-6)
    k = 1 / cv**2
    for x in (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0):
        t = x / rate
        fit = float(arr.start @ (1 - np.exp(-t / mean)))
        assert fit == pytest.approx(stats.gamma.cdf(t, k, scale=1 / (k * rate)), abs=0.03)
    # smoother: a mixed Erlang with the same two moments (Tijms)
    smooth = arrivals(rate, 0.5)
    gaps = np.linalg.inv(-smooth.sub)
    m1 = float(smooth.start @ gaps @ np.ones(smooth.phases))
    m2 = 2 * float(smooth.start @ gaps @ gaps @ np.ones(smooth.phases))
    assert m1 == pytest.approx(1 / rate) and m2 / m1**2 - 1 == pytest.approx(0.25)


@pytest.mark.parametrize("cv", [1.0 + 2e-9, 1.0000001, 1.001, 1.0048, 1.02])
def test_barely_bursty_gaps_keep_their_moments(cv: float) -> None:
    """Gaps a hair burstier than Poisson (a measured trace's cv 1.0048) are a mixture whose
    weights sum to 1 and keep the mean and cv² (the bins' quadrature once overflowed here)."""
    arr = arrivals(2.0, cv)
    mean = 1.0 / arr.exit
    assert np.all(np.isfinite(mean)) and float(arr.start.sum()) == pytest.approx(1.0)
    assert float(arr.start @ mean) == pytest.approx(0.5, rel=1e-9)
    assert 2 * float(arr.start @ mean**2) * 4.0 - 1 == pytest.approx(cv * cv, rel=1e-6)


def test_feedback_integrals_closed_forms_match_quadrature() -> None:
    theta = np.linspace(1e-7, 3000.0, 1_500_001)
    h = (1 - np.exp(-1j * theta)) / (1j * theta)
    h2 = np.abs(h) ** 2
    for beta in (0.05, 0.3, 0.7, 0.9):
        j, j1, i1, i2 = feedback(beta)
        fb = 1 / (1 - beta * h)
        tail = 2 / 3000 / math.pi  # ∫_Θ^∞ 2(1 − cos θ)/θ² ≈ 2/Θ
        assert j == pytest.approx(np.trapezoid(h2 * np.abs(fb) ** 2, theta) / np.pi + tail, 1e-3)
        assert j1 == pytest.approx(np.trapezoid(h2 * fb.real, theta) / np.pi + tail, 1e-3)
        assert i1 == pytest.approx(np.trapezoid(h2 * (h * fb).real, theta) / np.pi, 1e-3)
        assert i2 == pytest.approx(np.trapezoid(h2 * h2 * np.abs(fb) ** 2, theta) / np.pi, 1e-3)
    # β → 0: no feedback, J = J₁ = 1, and the window's own integrals ½ and ⅔
    assert feedback(0.0) == pytest.approx((1.0, 1.0, 0.5, 2 / 3))


@pytest.mark.parametrize(
    ("phases", "reach", "up", "levels"),
    [(1, 3, None, 20), (3, 9, None, 20), (5, 14, None, 20), (1, 150, 7, 300), (2, 30, 12, 90)],
)
def test_state_reduction_matches_a_linear_solve(
    phases: int, reach: int, up: int | None, levels: int
) -> None:
    """Blocks of whole levels (48 states) reduced from the top, with the rows each block is
    reached from limited to ``up`` below it, give the stationary distribution of a dense
    solve (several blocks, a partial last one, and level 0's rows moving anywhere)."""
    rng = np.random.default_rng(3)
    n = levels * phases
    p = rng.random((n, n))
    for i in range(phases, n):  # levels ≥ 1 move down at most ``reach`` states
        p[i, : max(0, i - reach)] = 0.0
        if up is not None:  # and up at most ``up``
            p[i, i + up + 1 :] = 0.0
    p /= p.sum(axis=1, keepdims=True)
    a = p.T - np.eye(n)
    a[-1] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    want = np.linalg.solve(a, rhs)
    got = Levels(p, reach, phases, up=up).stationary(p[:phases].copy())
    assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize(
    ("isl", "rate", "cv"), [(11, 400.0, 6.0), (47, 30.0, 2.5), (2000, 5.0, 1.0)]
)
def test_the_chain_is_bounded_in_states_and_work(isl: int, rate: float, cv: float) -> None:
    """Whatever the prompt length and burstiness, the chain holds at most MAX_STATES states
    and its reduction costs at most MAX_REDUCTION_WORK (n·up·reach, the largest a prompt
    step's arrivals and K prompts move), so one point's cost is bounded."""
    res = _resolved("llama-3-8b", "h100-sxm", 1, isl, OSL)
    assert res.deployment is not None
    st = steps(res.deployment, isl, OSL, res.max_concurrency, STEP_TOKENS)
    arr = arrivals(rate, cv)
    n = level_cap(st, arr) * arr.phases
    assert n <= MAX_STATES
    mean = rate * float(st.prompt_s[st.per_step])
    up = (mean + 10.0 * math.sqrt(mean * max(arr.idc, 1.0) + 1.0) + 8.0) * arr.phases
    reach = st.per_step * arr.phases + arr.phases - 1
    assert n <= 24 * arr.phases or n * min(n, up) * min(n, reach) <= MAX_REDUCTION_WORK
    assert queue_size(st, arr) <= level_cap(st, arr)


def test_periods_merged_keep_their_mass_and_mean_cycle() -> None:
    rng = np.random.default_rng(5)
    periods, phases, carried = 9 + 500, 2, 40
    tau = np.concatenate([rng.uniform(0.01, 0.02, 9), np.linspace(0.03, 0.4, 500)])
    start = rng.random((periods, phases, carried)) * (rng.random(periods) > 0.3)[:, None, None]
    start[9:-1, :, 1:] = 0.0  # prompt steps below K carry nothing
    got_tau, got_start = merge_periods(tau, start, 9, periods - 1)
    assert got_tau.size <= 9 + MAX_PERIODS + 1
    assert got_tau[:9] == pytest.approx(tau[:9]) and got_tau[-1] == tau[-1]
    mass, got_mass = start.sum(axis=(1, 2)), got_start.sum(axis=(1, 2))
    assert got_mass.sum() == pytest.approx(mass.sum(), rel=1e-12)
    assert float(got_mass @ got_tau) == pytest.approx(float(mass @ tau), rel=1e-12)
    assert np.all(np.diff(got_tau[9:-1]) > 0)  # runs of neighbouring sizes, in order


def test_counts_between_windows_are_interpolated_within_a_small_distance() -> None:
    """Thousands of windows of phase-type gaps: counted on WAIT_NODES windows and mixed
    linearly between neighbours, each count's distribution within 0.02 in total variation
    of the exact one, and a distribution."""
    arr = arrivals(20.0, 3.0)
    counts = Counts(arr, 256, 1e-10 ** (1.0 / 256))
    taus = np.sort(np.random.default_rng(2).uniform(0.0, 2.0, 1500))
    got = counts_after(counts, taus, arr.start)
    want = counts.from_phases(taus, arr.start)
    assert got.sum(axis=1) == pytest.approx(want.sum(axis=1), abs=1e-5)
    assert float(0.5 * np.abs(got - want).sum(axis=1).max()) < 0.02


# ---------------------------------------------------------------------------------------------
# Shape of the answers
# ---------------------------------------------------------------------------------------------


@cache
def _sweep(cv: float) -> list[OpenLoopPoint]:
    res = _case()
    dep = res.deployment
    assert dep is not None
    top = max_rate_rps(dep, ISL, OSL, max_in_flight=res.max_concurrency)
    return [
        open_loop(dep, ISL, OSL, f * top, cv=cv, max_in_flight=res.max_concurrency)
        for f in (0.05, 0.2, 0.4, 0.6, 0.8, 0.9)
    ]


@pytest.mark.parametrize("cv", [1.0, 2.0])
def test_more_rate_never_lowers_a_mean_or_percentile(cv: float) -> None:
    points = _sweep(cv)
    for a, b in itertools.pairwise(points):
        assert b.rate_rps > a.rate_rps
        for metric in ("ttft", "itl", "e2e"):
            assert b.statistic(metric, "mean") >= a.statistic(metric, "mean") * (1 - 1e-9)
            for q in QUANTILES:
                assert b.statistic(metric, q) >= a.statistic(metric, q) * (1 - 1e-9)
        assert b.in_flight >= a.in_flight and b.prefill_share >= a.prefill_share


@pytest.mark.parametrize("cv", [1.0, 2.0])
def test_higher_percentiles_are_longer(cv: float) -> None:
    for p in _sweep(cv):
        for metric in ("ttft", "itl", "e2e"):
            values = [p.statistic(metric, q) for q in QUANTILES]
            assert values == sorted(values)
            assert p.statistic(metric, "p50") == p.statistic(metric, 0.5)


def test_burstier_traffic_waits_longer() -> None:
    for poisson, bursty in zip(_sweep(1.0), _sweep(2.0), strict=True):
        assert bursty.ttft_wait_s > poisson.ttft_wait_s
        assert bursty.ttft_s > poisson.ttft_s
        for q in (0.9, 0.95, 0.99):
            assert bursty.ttft_q[q] >= poisson.ttft_q[q]
            assert bursty.e2e_q[q] >= poisson.e2e_q[q]
        # the same work per request: the sustainable rate does not depend on burstiness
        assert bursty.max_rate_rps == poisson.max_rate_rps


def test_max_rate_within_limits() -> None:
    res = _case()
    dep = res.deployment
    assert dep is not None
    c = res.max_concurrency
    top = max_rate_rps(dep, ISL, OSL, max_in_flight=c)
    at_half = open_loop(dep, ISL, OSL, 0.5 * top, max_in_flight=c)
    # the mean grows strictly with the rate: the limit set at half the rate gives it back
    limit = {"ttft": ("mean", at_half.ttft_s)}
    rate = max_rate_within(dep, ISL, OSL, limit, max_in_flight=c)
    assert rate == pytest.approx(0.5 * top, rel=2e-3)
    # a percentile: the rate found meets it, 1 % more does not
    tail = {"e2e": ("p99", at_half.e2e_q[0.99])}
    found = max_rate_within(dep, ISL, OSL, tail, max_in_flight=c)
    assert open_loop(dep, ISL, OSL, found, max_in_flight=c).e2e_q[0.99] <= at_half.e2e_q[0.99]
    assert open_loop(dep, ISL, OSL, 1.01 * found, max_in_flight=c).e2e_q[0.99] > at_half.e2e_q[0.99]
    # a looser limit never lowers the rate; a second limit that holds changes nothing
    looser = max_rate_within(
        dep, ISL, OSL, {"ttft": ("mean", 1.2 * at_half.ttft_s)}, max_in_flight=c
    )
    assert looser > rate
    both = {**limit, "itl_s": ("mean", 10.0)}
    assert max_rate_within(dep, ISL, OSL, both, max_in_flight=c) == pytest.approx(rate)
    # a TTFT limit below one prompt step alone is never met
    p1 = float(prefill(dep, 1, ISL).total_s)
    assert max_rate_within(dep, ISL, OSL, {"ttft": ("mean", 0.9 * p1)}, max_in_flight=c) == 0
    # bursty traffic meets the same limit at a lower rate
    assert max_rate_within(dep, ISL, OSL, limit, cv=2.0, max_in_flight=c) < rate
    with pytest.raises(ValueError, match="unknown metric"):
        max_rate_within(dep, ISL, OSL, {"tpot": ("mean", 1.0)}, max_in_flight=c)


def test_bad_input_is_refused() -> None:
    res = _case()
    dep = res.deployment
    assert dep is not None
    with pytest.raises(ValueError, match="rate"):
        open_loop(dep, ISL, OSL, 0.0, max_in_flight=8)
    with pytest.raises(ValueError, match="coefficient of variation"):
        open_loop(dep, ISL, OSL, 1.0, cv=-0.5, max_in_flight=8)
    with pytest.raises(ValueError, match="coefficient of variation"):
        open_loop(dep, ISL, OSL, 1.0, cv=math.nan, max_in_flight=8)
    with pytest.raises(ValueError, match="max_in_flight"):
        open_loop(dep, ISL, OSL, 1.0, max_in_flight=0)
    with pytest.raises(ValueError, match="statistic"):
        _sweep(1.0)[0].statistic("ttft", "median")


# ---------------------------------------------------------------------------------------------
# Against the simulator
# ---------------------------------------------------------------------------------------------


def test_agrees_with_the_simulator() -> None:
    """Poisson at half the sustainable rate, 20 000 requests: the means within 3 %, the p95s
    within 6 % (benchmarks/openloop_vs_sim.py runs the whole grid)."""
    res = _case()
    dep = res.deployment
    assert dep is not None
    c = res.max_concurrency
    rate = 0.5 * max_rate_rps(dep, ISL, OSL, max_in_flight=c)
    n = 20_000
    rng = np.random.default_rng(11)
    wl = Workload(np.full(n, ISL), np.full(n, OSL), poisson_arrivals(rng, n, rate))
    gpu, _ = catalog().hardware("h100-sxm")
    sim = simulate_llm(dep, gpu.memory_bytes, wl, BatchingConfig("inflight", c))
    keep = measured_mask(sim, 0.1)
    pr = per_request(sim)
    p = open_loop(dep, ISL, OSL, rate, max_in_flight=c)
    for metric in ("ttft", "itl", "e2e"):
        values = getattr(pr, f"{metric}_s")[keep]
        assert p.statistic(metric, "mean") == pytest.approx(values.mean(), rel=0.03)
        assert p.statistic(metric, 0.95) == pytest.approx(np.percentile(values, 95), rel=0.06)


def test_a_search_computes_only_the_tables_it_needs_and_the_same_values() -> None:
    res = _case()
    dep = res.deployment
    assert dep is not None
    st = steps(dep, ISL, OSL, res.max_concurrency, STEP_TOKENS)
    rate = 0.6 * st.max_rate_rps
    for cv in (1.0, 2.0):
        full = point(st, rate, cv, QUANTILES)
        only = point(st, rate, cv, (0.99,), frozenset({"ttft"}))
        assert only.ttft_q[0.99] == full.ttft_q[0.99]
        assert (only.ttft_s, only.itl_s, only.e2e_s) == (full.ttft_s, full.itl_s, full.e2e_s)
        assert math.isnan(only.itl_q[0.99]) and math.isnan(only.e2e_q[0.99])


def _plain_bisection(
    dep: Any, isl: int, osl: int, limits: dict[str, tuple[str, float]], cv: float, slots: int
) -> float:
    """The highest rate meeting every limit, by plain bisection on (0, λ_max) to 1e-3."""
    qs = tuple(sorted({float(stat[1:]) / 100 for stat, _ in limits.values() if stat != "mean"}))
    lo, hi = 0.0, max_rate_rps(dep, isl, osl, max_in_flight=slots)
    while hi - lo > 1e-3 * hi:
        mid = (lo + hi) / 2
        p = open_loop(dep, isl, osl, mid, cv=cv, max_in_flight=slots, quantiles=qs or (0.5,))
        meets = p.stable and all(p.statistic(m, st) <= lim for m, (st, lim) in limits.items())
        lo, hi = (mid, hi) if meets else (lo, mid)
    return lo


@pytest.mark.parametrize(
    ("model", "tp", "isl", "osl", "limits", "cv"),
    [
        ("llama-3-8b", 1, 2000, 200, {"ttft": ("mean", 1.0), "itl": ("mean", 0.05)}, 1.0),
        ("llama-3-8b", 1, 2000, 200, {"ttft": ("p99", 2.0)}, 2.0),
        ("mixtral-8x7b", 2, 500, 1000, {"e2e": ("p90", 20.0)}, 1.0),
        ("mixtral-8x7b", 2, 500, 1000, {"ttft": ("mean", 1.0), "itl": ("mean", 0.05)}, 2.0),
    ],
)
def test_max_rate_within_agrees_with_plain_bisection(
    model: str,
    tp: int,
    isl: int,
    osl: int,
    limits: dict[str, tuple[str, float]],
    cv: float,
) -> None:
    res = _resolved(model, "h100-sxm", tp, isl, osl)
    assert res.deployment is not None
    rate = max_rate_within(
        res.deployment, isl, osl, limits, cv=cv, max_in_flight=res.max_concurrency
    )
    bisected = _plain_bisection(res.deployment, isl, osl, limits, cv, res.max_concurrency)
    assert 0 < bisected and rate == pytest.approx(bisected, rel=5e-3)


# ---------------------------------------------------------------------------------------------
# The rate search and the numerics that make a point fast
# ---------------------------------------------------------------------------------------------

LIMITS_P99 = {"ttft": ("p99", 1.0), "itl": ("p99", 0.05)}


def _search(start: float = 0.5) -> RateSearch:
    res = _case()
    assert res.deployment is not None
    c = res.max_concurrency
    return RateSearch(res.deployment, ISL, OSL, LIMITS_P99, max_in_flight=c, start=start)


def test_the_search_answer_is_the_highest_grid_rate_that_meets() -> None:
    s = _search()
    rate = s.highest()
    j = round(math.log(s.top_rps / rate) / math.log1p(1e-3))
    assert rate == pytest.approx(s.rate_at(j), rel=1e-12)
    # the grid rate at the answer meets every limit, the next one up misses one (fresh points)
    assert _search().meets(s.rate_at(j)) and not _search().meets(s.rate_at(j - 1))
    assert s.solves <= 8  # a handful of points, not a bisection of 14 000 grid steps


def test_the_search_answer_does_not_depend_on_the_points_asked_first() -> None:
    want = _search().highest()
    for start in (0.05, 0.5, 0.95):
        assert _search(start=start).highest() == want
    probed = _search()
    top = probed.top_rps
    answers = [probed.meets(f * top) for f in (0.9, 0.2, 0.7, 0.75)]
    assert probed.highest() == want
    # each answer agrees with where the limits bind
    assert answers == [f * top <= want for f in (0.9, 0.2, 0.7, 0.75)]


def test_the_instance_count_does_not_depend_on_where_its_search_starts() -> None:
    """A search started near the answer (a plan's load share, as a candidate searched again
    under other assumptions starts) solves fewer points, never finds another count."""
    res = _case()
    assert res.deployment is not None
    st = steps_of(res.deployment, ISL, OSL, res.max_concurrency)
    for cv, peak in ((1.0, 200.0), (4.0, 120.0)):
        searches = {
            start: InstanceSearch(st, LIMITS_P99, cv, "least-loaded", start=start)
            for start in (0.02, 0.3, 0.9, 0.99)
        }
        counts = {start: s.fewest(peak) for start, s in searches.items()}
        assert len(set(counts.values())) == 1 and None not in counts.values()
        n = counts[0.3]
        assert n is not None
        near = InstanceSearch(
            st, LIMITS_P99, cv, "least-loaded", start=peak / (n * st.max_rate_rps)
        )
        assert near.fewest(peak) == n
        assert near.solves <= 3 and near.solves < searches[0.02].solves


def test_a_search_nothing_meets_answers_zero_in_one_point() -> None:
    res = _case()
    assert res.deployment is not None
    p1 = float(prefill(res.deployment, 1, ISL).total_s)
    s = RateSearch(
        res.deployment, ISL, OSL, {"ttft": ("p50", 0.5 * p1)}, max_in_flight=res.max_concurrency
    )
    assert s.highest() == 0.0 and s.solves == 1


def test_poisson_counts_in_closed_form_match_the_phase_type_inversion() -> None:
    """The one-phase closed form against the generic generating-matrix inversion of the same
    process written as a two-phase one (two identical exponential phases)."""
    arr = arrivals(3.0, 1.0)
    twin = type(arr)(3.0, 1.0, -3.0 * np.eye(2), np.array([3.0, 3.0]), np.array([0.5, 0.5]))
    taus = np.array([0.01, 0.5, 2.0, 9.0])
    left = np.ones(1)
    want = Counts(twin, 128).from_phases(taus, twin.start)
    assert Counts(arr, 128).from_phases(taus, left) == pytest.approx(want, abs=1e-12)
    # each window's own count P(A(τ_n) = n) (the diagonal of the table), evenly spaced windows
    spans = 0.2 + 0.3 * np.arange(40)
    for cv in (1.0, 2.0, 0.5):
        a = arrivals(3.0, cv)
        table = Counts(a, 256).from_phases(spans, a.start)
        diagonal = table[np.arange(40), np.arange(40)]
        assert Counts(a, 256).own(spans) == pytest.approx(diagonal, abs=1e-12)


def test_counts_depend_on_the_rate_only_through_the_mean_count() -> None:
    """Counts in τ at rate λ are counts in λτ/λ' at rate λ' (the generator scales with the
    rate). Bursty gaps take the unit-rate spectrum decomposed once for both rates, and it
    matches a spectrum decomposed at the rate itself; smooth gaps (an Erlang) are decomposed
    at each rate."""
    arrivals_module._spectra.clear()
    taus = np.array([0.05, 0.4, 1.3, 6.0])
    for cv in (0.4, 3.0):
        slow, fast = arrivals(2.0, cv), arrivals(5.0, cv)
        at_slow = Counts(slow, 64).transitions(taus)
        at_fast = Counts(fast, 64).transitions(taus * 2.0 / 5.0)
        assert at_fast == pytest.approx(at_slow, abs=1e-12)
        z = 2j * np.pi * np.arange(64) / 64
        gen = fast.sub[None] + np.exp(z)[:, None, None] * np.outer(fast.exit, fast.start)[None]
        lam, vec = np.linalg.eig(gen)  # decomposed at the rate itself
        e = np.exp(lam[None] * (taus * 2.0 / 5.0)[:, None, None])
        gf = np.matmul(vec[None] * e[:, :, None, :], np.linalg.inv(vec)[None])
        direct = np.maximum(np.fft.fft(gf, axis=1).real / 64, 0.0)
        assert at_fast == pytest.approx(direct, abs=1e-12)
    assert len(arrivals_module._spectra) == 1  # the bursty shape's, once for both rates


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_quantiles_by_regula_falsi_match_the_exact_inverse(q: float) -> None:
    for dist in (stats.norm(3.0, 0.5), stats.gamma(2.0, scale=0.1), stats.gamma(400.0, scale=0.01)):
        got = cdf_roots(dist.cdf, 0.0, 10.0, (q,))[0]
        assert got == pytest.approx(dist.ppf(q), abs=1e-7)
    # a jump (the cap of an ITL distribution): the least x where the CDF reaches q
    capped = lambda x: np.where(np.asarray(x) >= 2.0, 1.0, stats.norm(3.0, 0.5).cdf(x))  # noqa: E731
    assert cdf_roots(capped, 0.0, 10.0, (q,))[0] == pytest.approx(2.0, abs=1e-7)


@pytest.mark.parametrize("idc", [1.0, 1.7, 6.0])
def test_batch_pmf_by_window_is_the_negative_binomial(idc: float) -> None:
    slots = 400
    for mean in (0.3, 12.0, 150.0, 390.0):
        pmf = batch_pmf(mean, idc, slots)[0]
        b = np.arange(slots)
        if idc == 1.0:
            want = stats.poisson.pmf(b, mean)
        else:
            p = 1.0 / idc
            want = stats.nbinom.pmf(b, mean / (idc - 1.0), p)
        assert pmf[:-1] == pytest.approx(want, rel=1e-10, abs=1e-15)
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_batch_mean_balances_the_tokens() -> None:
    res = _case()
    assert res.deployment is not None
    st = steps(res.deployment, ISL, OSL, res.max_concurrency, STEP_TOKENS)
    b = np.arange(st.slots + 1, dtype=float)
    per_s = np.zeros_like(b)
    per_s[1:] = b[1:] / st.decode_s[1:]  # tokens/s of each batch
    assert st.tokens_per_s == pytest.approx(per_s, rel=1e-15)
    for need, idc, hint in ((500.0, 1.0, None), (2500.0, 2.5, None), (2500.0, 2.5, 40.0)):
        mu = batch_mean(st, need, idc, hint)
        assert mu is not None
        supplied = float(batch_pmf(mu, idc, st.slots)[0] @ per_s)
        assert supplied == pytest.approx(need, rel=1e-9)
        assert supply(mu, idc, st) == pytest.approx(supplied, rel=1e-12)
        # the slope that Newton's method takes, against a central difference
        value, slope = supply_slope(mu, idc, st)
        h = 1e-5 * mu
        numeric = (supply(mu + h, idc, st) - supply(mu - h, idc, st)) / (2 * h)
        assert value == pytest.approx(supplied, rel=1e-12)
        assert slope == pytest.approx(numeric, rel=1e-5)
    # more than the full batch can supply: saturated
    assert batch_mean(st, 2.0 * float(per_s.max()), 1.0) is None


def test_log_rising_factorial_by_hand() -> None:
    """log Γ(b + r) − log Γ(r) = log r(r+1)…(r+b−1): for r = 2.5, b = 2 … 4 by hand."""
    out = log_rising(np.array([2.5, 1.0]), 2, 4)
    assert out.shape == (2, 3)
    assert out[0] == pytest.approx(np.log([2.5 * 3.5, 2.5 * 3.5 * 4.5, 2.5 * 3.5 * 4.5 * 5.5]))
    assert out[1] == pytest.approx(np.log([2.0, 6.0, 24.0]))  # r = 1: b!


@pytest.mark.parametrize("block", [1, 2, 3, 7])
def test_blocked_forward_substitution_solves_a_lower_m_matrix(block: int) -> None:
    """L x = b for a lower-triangular M-matrix, by blocks of any size: the solution of
    numpy's dense solver, and ≥ 0 for b ≥ 0 (every term added, none cancelled)."""
    rng = np.random.default_rng(5)
    n = 7
    m = -np.tril(rng.random((n, n)), -1)
    m[np.diag_indices(n)] = 1.0 + rng.random(n) - m.sum(axis=1)  # diagonally dominant
    b = rng.random(n)
    got = LowerSolve(m, block)(b)
    assert got == pytest.approx(np.linalg.solve(m, b), rel=1e-12)
    assert (got >= 0).all()
    # by hand: [[2, 0], [−1, 4]] x = [1, 1] → x = [1/2, (1 + 1/2)/4]
    two = LowerSolve(np.array([[2.0, 0.0], [-1.0, 4.0]]), block)(np.array([1.0, 1.0]))
    assert two == pytest.approx([0.5, 0.375])


# ---------------------------------------------------------------------------------------------
# Percentiles on demand
# ---------------------------------------------------------------------------------------------


def test_percentiles_are_computed_when_first_read_and_equal_the_full_points() -> None:
    import pickle

    calls: list[int] = []

    def compute(values: list[float]) -> list[float]:
        calls.append(1)
        return values

    table = Quantiles((0.5, 0.99), compute, [1.0, 2.0])
    assert list(table) == [0.5, 0.99] and len(table) == 2 and not calls  # keys: no work
    assert table[0.99] == 2.0 and dict(table) == {0.5: 1.0, 0.99: 2.0} and len(calls) == 1
    with pytest.raises(KeyError):
        table[0.9]
    dep = _case().deployment
    assert dep is not None
    c = _case().max_concurrency
    rate = 0.6 * max_rate_rps(dep, ISL, OSL, max_in_flight=c)
    point = open_loop(dep, ISL, OSL, rate, max_in_flight=c)
    # read after a round trip through pickle (process pools), and the same as read at once
    again = pickle.loads(pickle.dumps(open_loop(dep, ISL, OSL, rate, max_in_flight=c)))
    for name in ("ttft_q", "itl_q", "e2e_q"):
        assert dict(getattr(again, name)) == dict(getattr(point, name))
    assert point.ttft_q[0.5] <= point.ttft_q[0.99] < point.e2e_q[0.5]
