"""Sizing for traffic (open loop): limits held at their statistic, the peak split over N."""

from __future__ import annotations

from dataclasses import replace

import pytest
from loose_plan import plan_loose
from shipped import catalog, estimator

from inferencesize.parallelism import Parallelism
from inferencesize.planner import Limits

LIMITS = Limits(ttft_s=1.0, itl_s=0.05)


def _plan(limits: Limits, peak: float = 20.0, arrivals: str = "poisson"):  # type: ignore[no-untyped-def]
    c = catalog()
    return plan_loose(
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


# ---------------------------------------------------------------------------------------------
# Branch and bound (prune=True) against the exhaustive search
# ---------------------------------------------------------------------------------------------


def _both(**kw: object) -> tuple[object, object]:
    c = catalog()
    args = dict(
        model=c.model("llama-3.1-8b"),
        hardware=[c.hardware("h100-sxm"), c.hardware("b200")],
        precisions=["fp8", "bf16"],
        isl=1000,
        osl=200,
        peak_rps=20.0,
        limits=Limits(ttft_s=1.0, itl_s=0.05, stats=("p99", "p99", "mean")),
        est=estimator(),
        tps=[1, 2, 4],
        pps=[1],
        arrivals="poisson",
        top=1,
    )
    args.update(kw)
    full = plan_loose(**args)  # type: ignore[arg-type]
    pruned = plan_loose(**args, prune=True)  # type: ignore[arg-type]
    return full, pruned


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"objective": "gpus", "top": 0, "peak_rps": 60.0},
        {"limits": Limits(ttft_s=0.5, itl_s=0.03), "peak_rps": 8.0, "top": 2},
    ],
    ids=["servers-top1", "gpus-top0", "mean-limits-top2"],
)
def test_pruned_search_keeps_the_exhaustive_plans(options: dict[str, object]) -> None:
    from inferencesize.outcomes import Pruned, RejectKind, summary_sentence

    full, pruned = _both(**options)
    shown = [full.chosen, *full.alternatives]  # type: ignore[attr-defined]
    kept = [pruned.chosen, *pruned.alternatives]  # type: ignore[attr-defined]
    assert full.chosen is not None  # type: ignore[attr-defined]
    # the same plans, in the same order, at the same rates to the bit
    assert [(p.candidate.label(), p.instances, p.gpus, p.servers) for p in kept] == [
        (p.candidate.label(), p.instances, p.gpus, p.servers) for p in shown
    ]
    assert [p.rate for p in kept] == [p.rate for p in shown]
    assert [p.point for p in kept] == [p.point for p in shown]
    # every candidate accounted for: searched (feasible or rejected alike) or pruned
    s = pruned.summary  # type: ignore[attr-defined]
    assert s.candidates == full.summary.candidates  # type: ignore[attr-defined]
    assert s.candidates == len(pruned.feasible) + len(pruned.rejected)  # type: ignore[attr-defined]
    cut = [r for r in pruned.rejected if r.why.kind is RejectKind.PRUNED]  # type: ignore[attr-defined]
    assert s.rejected_by_kind.get(RejectKind.PRUNED, 0) == len(cut)
    # a pruned candidate's bound is honest: where the exhaustive search found it feasible, it
    # needed at least the instances its bound says (and so could not enter the plans shown)
    found = {p.candidate.label(): p for p in full.feasible}  # type: ignore[attr-defined]
    for r in cut:
        assert isinstance(r.why, Pruned)
        if r.candidate in found:
            assert found[r.candidate].instances >= r.why.needs_instances
            assert found[r.candidate] not in shown
    if cut:
        assert f"{len(cut)} pruned: cannot beat the plans shown" in summary_sentence(s)


def test_closed_loop_plans_are_never_pruned() -> None:
    c = catalog()
    args = (c.model("llama-3.1-8b"), [c.hardware("h100-sxm")], ["fp8"], 1000, 200, 20.0)
    a = plan_loose(*args, LIMITS, estimator(), tps=[1, 2], pps=[1], top=0)
    b = plan_loose(*args, LIMITS, estimator(), tps=[1, 2], pps=[1], top=0, prune=True)
    assert len(a.feasible) == len(b.feasible) and not any(
        r.why.kind.value == "pruned" for r in b.rejected
    )
