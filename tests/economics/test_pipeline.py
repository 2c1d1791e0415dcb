"""Pipelines of models: E2E budget split, per-stage sizing and totals."""

from __future__ import annotations

import pytest
from loose_plan import plan_loose
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.pipeline import Stage, plan_pipeline, split_budget, unloaded_e2e
from inferencesize.planner import Limits
from inferencesize.question import SearchSpace


def test_split_is_proportional_to_unloaded_latency() -> None:
    # unloaded 0.1, 2.0, 0.4 s; limit 5 s: slack 5 / 2.5 = 2 for everyone
    assert split_budget([0.1, 2.0, 0.4], [1, 1, 1], [None] * 3, 5.0) == pytest.approx(
        [0.2, 4.0, 0.8]
    )
    # an agent step called 6 times: weight 6 · 1 + 1 · 2 = 8, slack 16 / 8 = 2
    b = split_budget([1.0, 2.0], [6, 1], [None, None], 16.0)
    assert b == pytest.approx([2.0, 4.0])
    assert 6 * b[0] + b[1] == pytest.approx(16.0)
    # a fixed stage keeps its budget, the others share the rest (5 - 1 = 4) evenly here
    assert split_budget([1.0, 9.0, 1.0], [1, 1, 1], [None, 1.0, None], 5.0) == pytest.approx(
        [2.0, 1.0, 2.0]
    )


def _stage(name: str, model: str, isl: int, osl: int, calls: float = 1.0, **kw: object) -> Stage:
    c = _catalog()
    space = SearchSpace(c.model(model), (c.hardware("dgx-h100"),), ["fp8"], None, None, None, None)
    return Stage(
        name=name,
        space=space,
        isl=isl,
        osl=osl,
        calls=calls,
        **kw,  # type: ignore[arg-type]
    )


def test_pipeline_totals_and_stage_traffic() -> None:
    guard = _stage("guardrail", "llama-3.1-8b", 1200, 5)
    main = _stage("main", "llama-3.1-70b", 1200, 400)
    judge = _stage("judge", "llama-3.1-8b", 1600, 40, calls=3)
    r = plan_pipeline([guard, main, judge], 10.0, 30.0, _est())
    assert r.feasible
    assert [s.peak_rps for s in r.stages] == [10.0, 10.0, 30.0]  # calls × peak
    chosen = [s.chosen for s in r.stages]
    assert all(p is not None for p in chosen)
    assert r.gpus == sum(p.gpus for p in chosen if p)
    assert r.servers == sum(p.servers for p in chosen if p)
    assert r.power_watts == pytest.approx(sum(p.power_watts or 0 for p in chosen if p))
    e2e = sum(s.stage.calls * s.chosen.point.e2e_s for s in r.stages if s.chosen)
    assert r.e2e_s == pytest.approx(e2e)
    assert r.e2e_s is not None and r.e2e_s <= 30.0
    # each stage stays within its share; the shares add up to the limit
    for s in r.stages:
        assert s.chosen is not None and s.chosen.point.e2e_s <= s.budget_s
    assert sum(s.stage.calls * s.budget_s for s in r.stages) == pytest.approx(30.0)
    # the main model is slowest unloaded, so it gets the largest share
    assert max(r.stages, key=lambda s: s.budget_s).stage.name == "main"
    assert r.unloaded_e2e_s == pytest.approx(
        sum(s.stage.calls * (s.unloaded_e2e_s or 0) for s in r.stages)
    )


def test_one_stage_pipeline_equals_a_plan_with_that_e2e() -> None:
    st = _stage("only", "llama-3.1-8b", 1000, 200)
    r = plan_pipeline([st], 20.0, 8.0, _est())
    c = _catalog()
    direct = plan_loose(
        c.model("llama-3.1-8b"),
        [c.hardware("dgx-h100")],
        ["fp8"],
        1000,
        200,
        20.0,
        Limits(e2e_s=8.0, mode="sequential"),
        _est(),
    )
    assert r.stages[0].budget_s == pytest.approx(8.0)
    assert r.stages[0].chosen is not None and direct.chosen is not None
    assert r.gpus == direct.chosen.gpus
    assert r.stages[0].chosen.candidate.label() == direct.chosen.candidate.label()


def test_tighter_limit_never_needs_fewer_gpus_and_below_unloaded_is_infeasible() -> None:
    stages = [_stage("guard", "llama-3.1-8b", 1200, 5), _stage("main", "llama-3.1-8b", 1200, 300)]
    loose = plan_pipeline(stages, 30.0, 20.0, _est())
    tight = plan_pipeline(stages, 30.0, 6.0, _est())
    assert loose.feasible and tight.feasible
    assert (tight.gpus or 0) >= (loose.gpus or 0)
    unloaded = loose.unloaded_e2e_s
    assert unloaded is not None
    assert unloaded == pytest.approx(sum(u or 0 for u in (unloaded_e2e(s, _est()) for s in stages)))
    impossible = plan_pipeline(stages, 30.0, 0.8 * unloaded, _est())
    assert not impossible.feasible
    assert impossible.gpus is None and impossible.e2e_s is None


def test_more_calls_per_request_need_more_of_that_stage() -> None:
    one = plan_pipeline([_stage("agent", "llama-3.1-8b", 2000, 200, calls=1)], 5.0, 60.0, _est())
    six = plan_pipeline([_stage("agent", "llama-3.1-8b", 2000, 200, calls=6)], 5.0, 60.0, _est())
    assert one.feasible and six.feasible
    assert six.stages[0].peak_rps == 30.0
    assert (six.gpus or 0) > (one.gpus or 0)
    assert six.stages[0].budget_s == pytest.approx(10.0)  # 60 s over 6 sequential calls
