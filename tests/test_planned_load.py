"""A plan's latency at the planned load: one instance at peak / instances, beside its capacity
(the most it serves within the limits)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from loose_plan import plan_loose
from shipped import catalog, estimator

from inferencesize.estimate import operating_points
from inferencesize.openloop import open_loop
from inferencesize.planned import LOAD_STEPS
from inferencesize.planner import Limits, Plan
from inferencesize.vocabulary import Router

ISL, OSL = 1000, 200
STATS = ("mean", 0.5, 0.9, 0.95, 0.99)


def _plan(limits: Limits, peak: float, **kw: Any) -> Plan:
    c = catalog()
    result = plan_loose(
        c.model("llama-3.1-8b"),
        [c.hardware("h100-sxm")],
        ["fp8"],
        ISL,
        OSL,
        peak,
        limits,
        estimator(),
        tps=[1],
        pps=[1],
        **kw,
    )
    assert result.chosen is not None
    return result.chosen


def _latency(op: Any, metric: str, stat: Any) -> float:
    return float(getattr(op, f"{metric}_s") if stat == "mean" else getattr(op, f"{metric}_q")[stat])


@pytest.mark.parametrize("router", ["random", "least-loaded"])
@pytest.mark.parametrize("stats", [("mean",) * 3, ("p99", "p95", "mean")])
def test_open_loop_latency_at_peak_is_below_the_capacity_point(router: str, stats: Any) -> None:
    limits = replace(Limits(ttft_s=1.0, itl_s=0.05), stats=stats)
    p = _plan(limits, 50.0, arrivals="poisson", router=Router(router))
    at, cap = p.planned, p.point
    assert at.requests_per_s == pytest.approx(50.0 / p.instances, rel=1e-12)
    assert at.requests_per_s <= cap.requests_per_s * (1 + 1e-9)
    assert at.output_tokens_per_s == pytest.approx(at.requests_per_s * OSL)
    for metric in ("ttft", "itl", "e2e"):
        for stat in STATS:
            assert _latency(at, metric, stat) <= _latency(cap, metric, stat) * (1 + 1e-9)
    assert at.in_flight <= cap.in_flight


def test_open_loop_latency_at_peak_is_the_point_at_peak_over_instances() -> None:
    """Behind a random router Poisson fleet arrivals stay Poisson at peak / N at each
    instance: the shown point is the open-loop model evaluated there, computed on its own."""
    p = _plan(Limits(ttft_s=1.0, itl_s=0.05), 50.0, arrivals="poisson", router=Router.RANDOM)
    assert p.instances >= 2  # a fleet: the planned rate is below the capacity
    res = estimator().resolve(p.candidate, ISL + OSL)
    assert res.deployment is not None
    rate = 50.0 / p.instances
    alone = open_loop(res.deployment, ISL, OSL, rate, cv=1.0, max_in_flight=res.max_concurrency)
    at = p.planned
    for metric in ("ttft", "itl", "e2e"):
        for stat in STATS:
            assert _latency(at, metric, stat) == pytest.approx(
                _latency(alone, metric, stat), rel=1e-6
            )
    assert at.in_flight == pytest.approx(alone.in_flight, rel=1e-6)


def test_closed_loop_latency_at_peak_is_the_least_load_serving_it() -> None:
    p = _plan(Limits(ttft_s=0.5), 50.0, arrivals="closed-loop")
    at, cap = p.planned, p.point
    rate = 50.0 / p.instances
    assert at.requests_per_s == pytest.approx(rate, rel=1e-12)
    assert at.ttft_s <= cap.ttft_s and at.e2e_s <= cap.e2e_s
    assert at.concurrency <= cap.concurrency
    # Little's law for clients that always have a request out: load = rate · E2E
    assert at.concurrency == pytest.approx(rate * at.e2e_s, rel=1e-9)
    # the load shown serves the rate within one step of 1/LOAD_STEPS of a client, and one
    # step less does not
    res = estimator().resolve(p.candidate, ISL + OSL)
    step = 1.0 / LOAD_STEPS
    loads = np.array([at.concurrency - step, at.concurrency + step])
    below, above = operating_points(
        res, ISL, OSL, loads, res.max_concurrency, "inflight", bounds=False
    )
    assert below.requests_per_s < rate <= above.requests_per_s
    assert below.ttft_s <= at.ttft_s * (1 + 1e-9) <= above.ttft_s * (1 + 1e-6)


def test_static_batching_at_peak_takes_the_smallest_batch_serving_it() -> None:
    sizes = [1, 2, 4, 8, 16, 32, 64]
    p = _plan(
        Limits(ttft_s=3.0), 20.0, arrivals="closed-loop", batching="static", batch_sizes=sizes
    )
    at, cap = p.planned, p.point
    rate = 20.0 / p.instances
    assert at.requests_per_s == pytest.approx(rate)
    res = estimator().resolve(p.candidate, ISL + OSL)
    batch = int(at.concurrency)
    assert batch in sizes and batch <= cap.concurrency
    ops = {
        b: operating_points(res, ISL, OSL, [b], [b], "static", bounds=False)[0]
        for b in sizes
        if b <= cap.concurrency
    }
    assert ops[batch].requests_per_s >= rate
    assert all(op.requests_per_s < rate for b, op in ops.items() if b < batch)
    assert at.ttft_s == pytest.approx(ops[batch].ttft_s) and at.ttft_s <= cap.ttft_s


def test_a_sweep_resized_plan_shows_its_own_peak() -> None:
    from inferencesize.planner import at_peak

    limits = Limits(ttft_s=1.0, itl_s=0.05)
    for arrivals in ("poisson", "closed-loop"):
        p = _plan(limits, 50.0, arrivals=arrivals)
        q = at_peak(p, 20.0, ISL, OSL, estimator())
        assert q.planned.requests_per_s == pytest.approx(20.0 / q.instances)
        assert q.planned.itl_s <= q.point.itl_s * (1 + 1e-9)


def test_with_no_limit_an_instance_at_peak_is_below_its_sustainable_rate() -> None:
    p = _plan(Limits(), 50.0, arrivals="poisson")
    assert p.binding == "memory"
    assert p.planned.requests_per_s == pytest.approx(50.0 / p.instances)
    assert p.planned.itl_s <= p.point.itl_s
