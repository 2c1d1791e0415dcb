"""Sizing for traffic (open loop): limits held at their statistic, the peak split over N."""

from __future__ import annotations

from dataclasses import replace

import pytest
from shipped import catalog, estimator

from inferencesize.parallelism import Parallelism
from inferencesize.planner import Limits, plan

LIMITS = Limits(ttft_s=1.0, itl_s=0.05)


def _plan(limits: Limits, peak: float = 20.0, arrivals: str = "poisson"):  # type: ignore[no-untyped-def]
    c = catalog()
    return plan(
        c.model("llama-3.1-8b"),
        [c.hardware("h100-sxm")],
        ["fp8"],
        1000,
        200,
        peak,
        LIMITS if limits is None else limits,
        estimator(),
        tps=[1],
        pps=[1],
        arrivals=arrivals,  # type: ignore[arg-type]
    )


def test_the_chosen_point_meets_each_limit_at_its_statistic() -> None:
    limits = replace(LIMITS, stats=("p99", "p95", "mean"))
    p = _plan(limits).chosen
    assert p is not None
    op = p.point
    assert op.ttft_q[0.99] <= 1.0 * (1 + 1e-3)
    assert op.itl_q[0.95] <= 0.05 * (1 + 1e-3)
    # the peak is split over the instances: each gets at most its rate
    assert 20.0 / p.instances <= op.requests_per_s * (1 + 1e-9)


def test_a_looser_statistic_never_needs_more_gpus() -> None:
    mean = _plan(LIMITS).chosen
    p99 = _plan(replace(LIMITS, stats=("p99", "p99", "p99"))).chosen
    assert mean is not None and p99 is not None
    assert mean.gpus <= p99.gpus
    assert mean.point.requests_per_s >= p99.point.requests_per_s


def test_more_traffic_never_fewer_gpus() -> None:
    few, many = _plan(LIMITS, 5.0).chosen, _plan(LIMITS, 50.0).chosen
    assert few is not None and many is not None
    assert few.gpus <= many.gpus


def test_percentile_limits_need_open_loop_arrivals() -> None:
    with pytest.raises(ValueError, match="percentile limits need open-loop"):
        _plan(replace(LIMITS, stats=("p99", "mean", "mean")), arrivals="closed-loop")


def test_an_impossible_percentile_names_the_statistic() -> None:
    result = _plan(replace(LIMITS, ttft_s=0.001, stats=("p99", "mean", "mean")))
    assert result.chosen is None
    assert result.nearest_miss is not None and "p99 TTFT" in result.nearest_miss
    assert result.rejected[0].why.kind.value == "ttft"


def test_parallelism_of_the_open_loop_plan_is_the_one_asked() -> None:
    p = _plan(LIMITS).chosen
    assert p is not None and p.candidate.par == Parallelism(1, 1, 1)


def test_the_flags_reach_the_open_loop_planner() -> None:
    import json

    from typer.testing import CliRunner

    from inferencesize.cli import app

    args = ["plan", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "1", "--pp"]
    args += ["1", "--precision", "fp8", "--isl", "1000", "--osl", "200", "--peak-rps", "20"]
    args += ["--ttft-ms", "1000", "--itl-ms", "50", "--arrivals", "poisson"]
    args += ["--latency-stat", "p99", "-f", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    assert rec["arrivals"] == "poisson" and rec["statistics"]["ttft"] == "p99"
    op = rec["plan"]["per_instance"]
    assert op["ttft_ms_p99"] <= 1000 * (1 + 1e-3) and op["itl_ms_p99"] <= 50 * (1 + 1e-3)
