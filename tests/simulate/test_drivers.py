"""The single-instance drivers run exactly the steps of the general event loop.

One in-flight instance on open-loop arrivals runs as one loop over local state
(``inflight_alone``), any other single open-loop instance runs up to each arrival in turn
(``engine._serve_alone``); both must give the general loop's (``engine._serve_balanced``)
results to the bit: KV-limited admission, drops, batch and step-token limits, one-token
answers, arrivals at the same instant and the multi-GPU hand-off included. So must several
instances behind a router that never looks at them (random, round-robin), run one by one on
their own arrivals (``engine._serve_apart``), against the general loop with the same
assignment.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from inferencesize.catalog import load_catalog
from inferencesize.estimate import Candidate, Estimator
from inferencesize.latency import Deployment
from inferencesize.parallelism import Parallelism
from inferencesize.simulate import (
    BatchingConfig,
    ConstantService,
    LlmService,
    Service,
    SimResult,
    Workload,
    engine,
    kv_budget,
    llm,
    simulate,
)
from inferencesize.vocabulary import Router

FIELDS = ("arrival_s", "admit_s", "first_token_s", "done_s", "instance", "busy_s")


@pytest.fixture(scope="module")
def deployment() -> Deployment:
    cat = load_catalog()
    gpu, system = cat.hardware("h100-sxm")
    cand = Candidate(cat.model("llama-3-8b"), gpu, system, "fp8", "fp8", Parallelism(1, 1, 1))
    dep = Estimator(cat.efficiency_set(None)).resolve(cand, 8192).deployment
    assert dep is not None
    return dep


def _workload(seed: int, n: int, rate: float, ties: bool) -> Workload:
    rng = np.random.default_rng(seed)
    isl = np.maximum(rng.normal(1500, 900, n).round(), 1).astype(np.int64)
    osl = np.maximum(rng.normal(120, 100, n).round(), 1).astype(np.int64)  # some one-token
    arrivals = np.cumsum(rng.exponential(1.0 / rate, n))
    if ties:  # bursts: several requests at the same instant, one at t = 0
        arrivals = np.floor(arrivals * 2.0) / 2.0
    return Workload(isl, osl, arrivals)


def _same(fast: SimResult, general: SimResult) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(general, name), err_msg=name)
    assert fast.end_s == general.end_s


def _general_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Route every simulation through the general event loop."""

    def balanced(inst: Any, req: Any, arrivals: Any, kv_capacity: float) -> None:
        engine._serve_balanced([inst], req, arrivals, [], False, kv_capacity, None, 0.0)

    monkeypatch.setattr(engine, "one_inflight_instance", lambda *_: False)
    monkeypatch.setattr(engine, "_serve_alone", balanced)


CASES = [  # seed, rate (req/s), max batch, step tokens, KV share, hand-off s, ties
    (0, 9.0, 10**6, 8192, 1.0, 0.0, False),
    (1, 14.0, 6, 8192, 1.0, 0.0, False),  # the batch limit binds
    (4, 14.0, 10**6, 8192, 0.02, 0.0, False),  # KV-limited: admission waits
    (2, 11.0, 10**6, 1, 1.0, 0.001, True),  # one prompt per step, hand-off, bursts
    (3, 30.0, 8, 4096, 0.004, 0.0, True),  # overloaded; some requests never fit (dropped)
]


@pytest.mark.parametrize(("seed", "rate", "batch", "budget", "share", "handoff", "ties"), CASES)
@pytest.mark.parametrize("policy", ["inflight", "chunked", "static", "dynamic"])
def test_single_instance_drivers_equal_the_general_loop(
    deployment: Deployment,
    monkeypatch: pytest.MonkeyPatch,
    policy: str,
    seed: int,
    rate: float,
    batch: int,
    budget: int,
    share: float,
    handoff: float,
    ties: bool,
) -> None:
    # chunked prefill with a one-token budget takes a step per prompt token (~1,500 a prompt):
    # a quarter of the requests, still queued behind each other, keeps it to a second
    wl = _workload(seed, 150 if (policy, budget) == ("chunked", 1) else 600, rate, ties)
    kv = kv_budget(deployment, 80 * 2**30, wl)
    capacity = kv.capacity_bytes * share
    cfg = BatchingConfig(policy, batch, 0.02, budget)  # type: ignore[arg-type]
    services: list[Service] = [LlmService(deployment, 64), ConstantService(0.01, 0.05, 64)]
    for svc in services:
        cfg_b = BatchingConfig(policy, min(batch, 64), 0.02, budget)  # type: ignore[arg-type]
        fast = simulate(wl, svc, cfg_b, capacity, kv.need_bytes, 1, Router.LEAST_LOADED, handoff)
        with monkeypatch.context() as m:
            _general_loop(m)
            general = simulate(
                wl, svc, cfg_b, capacity, kv.need_bytes, 1, Router.LEAST_LOADED, handoff
            )
        _same(fast, general)
        if share < 0.01:
            assert fast.dropped > 0
    assert engine.one_inflight_instance(1, False, cfg, services[0]) == (policy == "inflight")


@pytest.mark.parametrize(("seed", "rate", "batch", "budget", "share", "handoff", "ties"), CASES)
@pytest.mark.parametrize("policy", ["inflight", "chunked", "static", "dynamic"])
@pytest.mark.parametrize("router", [Router.RANDOM, Router.ROUND_ROBIN])
def test_instances_apart_equal_the_general_loop(
    deployment: Deployment,
    monkeypatch: pytest.MonkeyPatch,
    router: Router,
    policy: str,
    seed: int,
    rate: float,
    batch: int,
    budget: int,
    share: float,
    handoff: float,
    ties: bool,
) -> None:
    wl = _workload(seed, 600, 3 * rate, ties)  # three instances' worth of traffic
    kv = kv_budget(deployment, 80 * 2**30, wl)
    capacity = kv.capacity_bytes * share
    if policy == "chunked":  # (a one-token chunk budget is slow and adds nothing here)
        budget = max(budget, 512)
    services: list[Service] = [LlmService(deployment, 64), ConstantService(0.01, 0.05, 64)]
    for svc in services:
        cfg = BatchingConfig(policy, min(batch, 64), 0.02, budget)  # type: ignore[arg-type]

        def run() -> SimResult:
            return simulate(wl, svc, cfg, capacity, kv.need_bytes, 3, router, handoff, seed)

        with monkeypatch.context() as m:  # the fast path never enters the general loop
            m.setattr(engine, "_serve_balanced", None)
            fast = run()
        with monkeypatch.context() as m:
            m.setattr(engine, "independent_instances", lambda *_: False)
            general = run()
        _same(fast, general)
        assert set(fast.instance[~np.isnan(fast.done_s)]) == {0, 1, 2}
        if share < 0.01:
            assert fast.dropped > 0 and set(fast.instance[np.isnan(fast.done_s)]) == {-1}
    assert engine.independent_instances(3, False, router)
    assert not engine.independent_instances(3, True, router)  # closed loop: the general loop
    assert not engine.independent_instances(1, False, router)
    assert not engine.independent_instances(3, False, Router.LEAST_LOADED)


def test_the_in_flight_loop_is_only_for_one_uncapped_open_loop_instance() -> None:
    cfg = BatchingConfig("inflight", 16)
    svc = ConstantService(0.01, 0.05, 16)
    assert engine.one_inflight_instance(1, False, cfg, svc)
    assert not engine.one_inflight_instance(2, False, cfg, svc)
    assert not engine.one_inflight_instance(1, True, cfg, svc)
    assert not engine.one_inflight_instance(1, False, BatchingConfig("chunked", 16), svc)
    svc.kv_cap = 1024
    assert not engine.one_inflight_instance(1, False, cfg, svc)


def test_kv_budget_table_equals_sorting(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A narrow range of ISL + OSL is looked up in a table; a wide one is sorted."""
    wl = _workload(5, 2000, 10.0, False)
    table = kv_budget(deployment, 80 * 2**30, wl)
    monkeypatch.setattr(llm, "LOOKUP_SPAN", -1)
    sorted_ = kv_budget(deployment, 80 * 2**30, wl)
    np.testing.assert_array_equal(table.need_bytes, sorted_.need_bytes)
    assert table.capacity_bytes == sorted_.capacity_bytes
    empty = Workload(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    assert kv_budget(deployment, 80 * 2**30, empty).need_bytes.size == 0
