"""The random router: uniform, independent of the instances, reproducible for a seed.

Random routing of N instances is N independent thinned streams: each request goes to instance
i with probability 1/N whatever happened before, so with Poisson arrivals at rate λ each
instance sees Poisson arrivals at λ/N (gaps exponential, cv 1), and each instance serves its
requests exactly as a lone instance on those arrivals would. Round-robin, by contrast, gives
each instance every N-th arrival: Erlang-N gaps, cv 1/√N.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from inferencesize.simulate import (
    BALANCERS,
    BatchingConfig,
    ConstantService,
    SimResult,
    Workload,
    poisson_arrivals,
    simulate,
)
from inferencesize.simulate.engine import route, router_generator
from inferencesize.vocabulary import DEFAULT_ROUTER, Router

N, RATE, REQUESTS = 4, 40.0, 40_000
CFG = BatchingConfig("inflight", 32)
LIGHT = ConstantService(0.001, 0.004, 32)  # a light load: every instance keeps up


def poisson_workload(seed: int, n: int = REQUESTS, rate: float = RATE) -> Workload:
    rng = np.random.default_rng(seed)
    return Workload(np.full(n, 100), rng.integers(1, 20, n), poisson_arrivals(rng, n, rate))


def run(
    wl: Workload,
    router: Router = Router.RANDOM,
    seed: int | np.random.Generator = 0,
    instances: int = N,
    need: np.ndarray | None = None,  # type: ignore[type-arg]
    service: ConstantService = LIGHT,
    cfg: BatchingConfig = CFG,
) -> SimResult:
    kv_need = np.zeros(wl.n) if need is None else need
    return simulate(wl, service, cfg, 1.0, kv_need, instances, router, 0.0, seed)


def test_the_balancers_are_the_router_vocabulary() -> None:
    assert BALANCERS == tuple(Router)
    assert {str(b) for b in BALANCERS} == {"random", "round-robin", "least-loaded"}
    wl = poisson_workload(0, 50)
    by_text = run(wl, "random", seed=3)  # type: ignore[arg-type]
    np.testing.assert_array_equal(by_text.instance, run(wl, Router.RANDOM, seed=3).instance)
    with pytest.raises(ValueError, match="unknown balancer 'bogus'; expected random"):
        run(wl, "bogus")  # type: ignore[arg-type]
    # the default stays least-loaded
    default = simulate(wl, LIGHT, CFG, 1.0, np.zeros(wl.n), N)
    assert DEFAULT_ROUTER is Router.LEAST_LOADED
    np.testing.assert_array_equal(default.instance, run(wl, Router.LEAST_LOADED).instance)


def _gaps(res: SimResult, i: int) -> np.ndarray:  # type: ignore[type-arg]
    return np.diff(np.sort(res.arrival_s[res.instance == i]))


def test_each_instance_sees_poisson_arrivals_at_rate_over_n() -> None:
    res = run(poisson_workload(1))
    counts = np.bincount(res.instance, minlength=N)
    # each count is binomial(n, 1/N): within 4 standard deviations of n/N
    sd = math.sqrt(REQUESTS * (1 / N) * (1 - 1 / N))  # 86.6
    assert np.all(np.abs(counts - REQUESTS / N) < 4 * sd), counts
    # and together they are a uniform multinomial
    assert stats.chisquare(counts).pvalue > 1e-3
    for i in range(N):
        gaps = _gaps(res, i)
        m = len(gaps)
        mean = N / RATE  # 0.1 s
        # exponential gaps: the sample mean has standard error mean/√m, the cv about 1/√m
        assert abs(gaps.mean() - mean) < 4 * mean / math.sqrt(m)
        assert abs(gaps.std() / gaps.mean() - 1.0) < 4 / math.sqrt(m)
        assert stats.kstest(gaps, "expon", args=(0, mean)).pvalue > 1e-3
        # no memory from one gap to the next (lag-1 correlation within 4/√m of 0)
        assert abs(np.corrcoef(gaps[:-1], gaps[1:])[0, 1]) < 4 / math.sqrt(m)


def test_round_robin_gives_erlang_gaps_instead() -> None:
    res = run(poisson_workload(1), Router.ROUND_ROBIN)
    assert list(np.bincount(res.instance)) == [REQUESTS // N] * N
    for i in range(N):
        gaps = _gaps(res, i)
        # the sum of N exponential gaps: mean N/λ, cv 1/√N = 0.5
        assert abs(gaps.std() / gaps.mean() - 1 / math.sqrt(N)) < 0.03


def test_same_seed_same_assignment_another_seed_another() -> None:
    wl = poisson_workload(2, 2000)
    a, b, c = run(wl, seed=7), run(wl, seed=7), run(wl, seed=8)
    for name in ("instance", "admit_s", "first_token_s", "done_s", "busy_s"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert np.mean(a.instance == c.instance) < 0.5  # 1/N agree by chance
    # a Generator is drawn from as given: two alike give the same run, and it moves on
    g1, g2 = np.random.default_rng(11), np.random.default_rng(11)
    first = run(wl, seed=g1).instance
    np.testing.assert_array_equal(first, run(wl, seed=g2).instance)
    assert np.mean(run(wl, seed=g1).instance == first) < 0.5  # g1 has moved on


def test_an_int_seed_draws_apart_from_the_workload_stream() -> None:
    """The workload of seed s comes from default_rng(s); the router's draws for the same s
    must not be that stream (which would tie each request's instance to its own gap)."""
    wl = poisson_workload(5, 4000)
    res = run(wl, seed=5)
    same_stream = np.random.default_rng(5).integers(0, N, wl.n)
    assert np.mean(res.instance == same_stream) < 0.35  # 1/N = 0.25 agree by chance
    assert np.array_equal(
        router_generator(5).integers(0, 1000, 10), router_generator(5).integers(0, 1000, 10)
    )
    # the gap before a request says nothing about where it goes
    gaps = np.diff(np.concatenate([[0.0], np.asarray(wl.arrival_s)]))
    assert stats.kruskal(*(gaps[res.instance == i] for i in range(N))).pvalue > 1e-3


def test_the_draw_ignores_the_instances_state() -> None:
    """The same seed sends each request to the same instance whatever the instances do:
    under a light load, an overload, static batching, and closed-loop clients."""
    wl = poisson_workload(3, 3000)
    light = run(wl).instance
    heavy = run(wl, service=ConstantService(0.05, 0.5, 32)).instance
    static = run(wl, cfg=BatchingConfig("static", 8)).instance
    closed_wl = Workload(wl.isl, wl.osl, None, concurrency=16)
    closed = run(closed_wl).instance
    for other in (heavy, static, closed):
        np.testing.assert_array_equal(light, other)


def test_dropped_requests_draw_too_and_go_nowhere() -> None:
    wl = poisson_workload(4, 1000)
    need = np.where(np.arange(wl.n) % 10 == 0, 2.0, 0.0)  # every tenth never fits (cap 1.0)
    dropped = run(wl, seed=9, need=need)
    kept = run(wl, seed=9)
    assert dropped.dropped == 100
    assert np.all(dropped.instance[need > 1.0] == -1)
    # the others keep the instance they draw when nothing is dropped
    np.testing.assert_array_equal(dropped.instance[need == 0], kept.instance[need == 0])
    assignment = route(Router.RANDOM, N, need <= 1.0, 9)
    assert assignment is not None
    np.testing.assert_array_equal(assignment, dropped.instance)


def test_each_instance_serves_as_a_lone_instance_on_its_own_arrivals() -> None:
    """Thinning: the requests random routing sends to instance i are served exactly as one
    instance alone serves that sub-stream (to the bit)."""
    wl = poisson_workload(6, 3000, rate=30 * N)  # each instance fairly busy
    svc = ConstantService(0.004, 0.02, 32)
    res = run(wl, service=svc)
    for i in range(N):
        mine = res.instance == i
        sub = Workload(wl.isl[mine], wl.osl[mine], np.asarray(wl.arrival_s)[mine])
        alone = simulate(sub, svc, CFG, 1.0, np.zeros(sub.n))
        np.testing.assert_array_equal(alone.done_s, res.done_s[mine])
        np.testing.assert_array_equal(alone.first_token_s, res.first_token_s[mine])
        assert alone.busy_s[0] == res.busy_s[i]


def test_one_instance_ignores_the_router() -> None:
    wl = poisson_workload(8, 500)
    ll, rnd = run(wl, Router.LEAST_LOADED, instances=1), run(wl, instances=1, seed=4)
    np.testing.assert_array_equal(ll.done_s, rnd.done_s)
    assert set(rnd.instance) == {0}


@pytest.mark.parametrize("router", list(Router))
def test_every_router_of_the_vocabulary_has_a_model_in_the_simulator(router: Router) -> None:
    """A router added to the vocabulary must be given its model here (route: an instance per
    request, or None for a router that looks at the instances): none falls back on another's."""
    fits = np.array([True, False, True, True])
    assignment = route(router, 2, fits, 0)
    if assignment is None:
        assert router is Router.LEAST_LOADED  # the event loop's own (fewest outstanding)
    else:
        assert assignment.tolist()[1] == -1 and set(assignment[fits].tolist()) <= {0, 1}
