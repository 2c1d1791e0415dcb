"""What an instance sees behind a router, and the fewest instances behind one: the arrival
transforms by hand, the node grid, the instance search against a plain scan, the mean-limit
bound, and the random and round-robin models against the simulator's routers."""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
import pytest
from shipped import catalog, estimator

from inferencesize.estimate import Candidate, Resolved
from inferencesize.openloop import InstanceSearch, max_rate_rps, rate_bound, steps_of
from inferencesize.openloop.point import point
from inferencesize.openloop.router import NODES, Instance, instance, node_above, node_below
from inferencesize.parallelism import Parallelism
from inferencesize.simulate import BatchingConfig, Workload, per_request, simulate_llm
from inferencesize.simulate.stats import measured_mask
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.vocabulary import Router

ISL, OSL = 1000, 200


@cache
def _resolved(model: str = "llama-3-8b", tp: int = 1) -> Resolved:
    gpu, system = catalog().hardware("h100-sxm")
    cand = Candidate(catalog().model(model), gpu, system, "fp8", "fp8", Parallelism(tp))
    res = estimator().resolve(cand, ISL + OSL)
    assert res.deployment is not None and res.reason is None
    return res


def test_what_one_instance_sees_by_hand() -> None:
    # random: every N-th arrival on average, a geometric number of gaps: c² = 1 + (c² − 1)/N
    assert instance("random", 2.0, 4) == Instance(math.sqrt(1 + 3 / 4))
    assert instance("random", 1.0, 9) == Instance(1.0)  # Poisson thinned stays Poisson
    # round-robin: every N-th arrival exactly, N gaps: c² / N
    assert instance("round-robin", 1.0, 4) == Instance(0.5)
    assert instance("round-robin", 2.0, 16) == Instance(0.5)
    # least-loaded: the prompt queue sees random's arrivals; the batch pooled over N; a life
    # sees the fleet's arrivals spread evenly (round-robin's c² / N)
    ll = instance("least-loaded", 2.0, 4)
    assert ll.cv == pytest.approx(math.sqrt(1.75)) and ll.pool == 4.0
    assert ll.idc_itl == pytest.approx(1.0)
    # one instance sees the fleet as it is, whatever the router
    for router in ("random", "round-robin", "least-loaded"):
        assert instance(router, 3.0, 1) == Instance(3.0)
    with pytest.raises(ValueError, match="instances"):
        instance("random", 1.0, 0)


def test_the_node_grid() -> None:
    assert [node_below(n) for n in range(1, 20)] == [
        1, 2, 3, 4, 4, 6, 6, 8, 8, 8, 8, 12, 12, 12, 12, 16, 16, 16, 16
    ]  # fmt: skip
    assert node_below(10**6) == NODES[-1]
    assert [node_above(k) for k in NODES] == [*NODES[1:], None]
    # steps of √2 at most: a node's arrivals stand for at most 1.5 × its count
    assert all(b / a <= 1.5 for a, b in itertools.pairwise(NODES[1:]))


def _search(router: str, cv: float = 1.0) -> InstanceSearch:
    res = _resolved()
    assert res.deployment is not None
    st = steps_of(res.deployment, ISL, OSL, res.max_concurrency)
    limits = {"ttft": ("p95", 0.6), "itl": ("p95", 0.035)}
    return InstanceSearch(st, limits, cv, router)


@pytest.mark.parametrize(("router", "cv"), [("least-loaded", 1.0), ("round-robin", 2.0)])
def test_the_fewest_instances_is_the_least_count_a_point_meets_at(router: str, cv: float) -> None:
    """N* from the search equals a plain scan of counts, each judged by its own point at
    peak / N with the arrivals of N's node (fresh searches: no shared bracket)."""
    search = _search(router, cv)
    top = search.top_rps
    for peak in (0.4 * top, 3.1 * top, 11.7 * top):
        found = search.fewest(peak)
        assert found is not None
        fresh = _search(router, cv)
        assert fresh.meets(peak, found)
        assert found == 1 or not _search(router, cv).meets(peak, found - 1)


def test_the_answer_does_not_depend_on_the_points_solved() -> None:
    """A sweep's searches (each node closed on its grid first) and a plan's (points where the
    count needs them) find the same count and the same capacity at every peak."""
    plan, sweep = _search("least-loaded", 2.0), _search("least-loaded", 2.0)
    sweep.closed = True
    top = plan.top_rps
    for peak in (0.37 * top, 2.9 * top, 7.3 * top):
        n = plan.fewest(peak)
        assert n is not None and sweep.fewest(peak) == n
        rate, _ = plan.capacity_point(n, peak)
        assert sweep.capacity_point(n, peak)[0] == rate
        assert rate >= peak / n * (1 - 1e-9)  # at least the load it is planned for


def test_more_traffic_never_needs_fewer_instances() -> None:
    search = _search("least-loaded", 2.0)
    top = search.top_rps
    counts = [search.fewest(f * top) for f in np.linspace(0.2, 20.0, 25)]
    assert all(c is not None for c in counts)
    assert counts == sorted(counts)  # type: ignore[type-var]


def test_a_limit_a_request_alone_misses_has_no_count() -> None:
    res = _resolved()
    assert res.deployment is not None
    st = steps_of(res.deployment, ISL, OSL, res.max_concurrency)
    search = InstanceSearch(st, {"ttft": ("p50", 0.5 * float(st.prompt_s[1]))}, 1.0, "random")
    assert search.fewest(10.0) is None


def test_the_mean_limit_bound_is_above_the_answer() -> None:
    """rate_bound (mean ITL and E2E limits) never cuts below what one instance serves, and is
    below the sustainable rate where the limit is tight."""
    res = _resolved()
    assert res.deployment is not None
    st = steps_of(res.deployment, ISL, OSL, res.max_concurrency)
    alone = float(st.decode_s[1])  # a decode step of one sequence
    for factor in (1.2, 1.5, 2.5):
        limits = {"itl": ("mean", factor * alone)}
        search = InstanceSearch(st, limits, 1.0, "random")
        r_star = search.capacity_point(1)[0]
        assert r_star <= rate_bound(st, limits)
    assert rate_bound(st, {"itl": ("mean", 1.2 * alone)}) < st.max_rate_rps
    assert rate_bound(st, {"ttft": ("p99", 0.5)}) == st.max_rate_rps  # no mean limit: no bound
    # a per-token limit below one sequence alone: nothing
    assert rate_bound(st, {"itl": ("mean", 0.5 * float(st.decode_s[1]))}) == 0.0


def _simulated(router: str, rate: float, n: int, seed: int = 3) -> tuple[float, float]:
    """Mean TTFT and ITL of ``n`` simulated instances behind ``router``, fleet at n × rate."""
    res = _resolved()
    assert res.deployment is not None
    gpu, _ = catalog().hardware("h100-sxm")
    count = 24_000
    rng = np.random.default_rng(seed)
    lens = np.full(count, ISL), np.full(count, OSL)
    times = np.cumsum(rng.exponential(1.0 / (rate * n), count))
    cfg = BatchingConfig("inflight", res.max_concurrency)
    sim = simulate_llm(res.deployment, gpu.memory_bytes, Workload(*lens, times), cfg, n, router)
    keep = measured_mask(sim, 0.2, count // 10)
    pr = per_request(sim)
    return float(pr.ttft_s[keep].mean()), float(np.nanmean(pr.itl_s[keep]))


@pytest.mark.parametrize("router", ["random", "round-robin"])
def test_the_router_transforms_against_the_simulator(router: str) -> None:
    """Four instances behind a router at 60 % of what each sustains: the mean TTFT and ITL of
    the transformed arrivals within 8 % of the simulator's (benchmarks/openloop_vs_sim.py
    covers the grid)."""
    res = _resolved()
    assert res.deployment is not None
    st = steps_of(res.deployment, ISL, OSL, res.max_concurrency)
    rate = 0.6 * max_rate_rps(res.deployment, ISL, OSL, max_in_flight=res.max_concurrency)
    inst = instance(router, 1.0, 4)
    model = point(st, rate, inst.cv, ())
    ttft, itl = _simulated(router, rate, 4)
    assert model.ttft_s == pytest.approx(ttft, rel=0.08)
    assert model.itl_s == pytest.approx(itl, rel=0.08)


def test_the_scenario_spellings_are_the_routers() -> None:
    base = {"model": "llama-3-8b", "isl": 1000, "osl": 200, "peak_rps": 10, "ttft_ms": 500}
    for r in Router:
        assert ScenarioSpec.model_validate({**base, "router": r.value}).router is r


@pytest.mark.parametrize("router", list(Router))
def test_every_router_of_the_vocabulary_has_an_open_loop_model(router: Router) -> None:
    """A router added to the vocabulary must be given its open-loop model: none is taken as
    another's. Poisson arrivals stay Poisson for one instance behind any of them, and each
    spreads a burst (cv 3) over 4 instances into arrivals no burstier than the fleet's."""
    assert instance(router, 1.0, 1).cv == 1.0
    assert instance(router, 3.0, 4).cv < 3.0
