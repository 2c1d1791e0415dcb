"""The resolved question: a scenario's ids, "auto", milliseconds and arrivals word are resolved
once into the values every solver takes, and the catalog is not asked again."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
import shipped
from pydantic import ValidationError

from inferencesize.catalog import Catalog
from inferencesize.economics import RANKING, objective_key
from inferencesize.limits import Limits
from inferencesize.plan_search import plan, plan_alone
from inferencesize.question import (
    ClosedLoop,
    OpenLoop,
    PlanOptions,
    Question,
    SearchSpace,
    TraceArrivals,
    arrivals_of,
    hardware_ids,
    inherit,
    part_space,
    question_of,
    searched,
)
from inferencesize.specs.economics import PipelineStage
from inferencesize.specs.scenario import Pool, ScenarioSpec
from inferencesize.study import resolve
from inferencesize.units import ms_to_s
from inferencesize.vocabulary import Arrivals, Objective, Router

BASE: dict[str, Any] = {"model": "llama-3-8b", "isl": 1000, "osl": 200, "peak_rps": 10}


def _spec(**extra: Any) -> ScenarioSpec:
    return ScenarioSpec.model_validate({**BASE, "ttft_ms": 500, **extra})


def test_a_pool_or_stage_inherits_only_what_it_does_not_state() -> None:
    assert inherit(None, [1, 2]) == [1, 2]
    assert inherit([4], [1, 2]) == [4]
    assert inherit(0, 3) == 0  # a stated zero is stated, not missing


def test_auto_is_a_search_over_every_valid_value() -> None:
    assert searched("auto") is None
    assert searched(None) is None
    assert searched((1, 2)) == [1, 2]
    assert hardware_ids(["h100-sxm", "b200", "h100-sxm"]) == ["h100-sxm", "b200"]


def test_a_limit_in_milliseconds_is_in_seconds_once() -> None:
    assert ms_to_s(500) == 0.5
    assert ms_to_s(None) is None
    model = shipped.catalog().model("llama-3-8b")
    q = question_of(_spec(itl_ms=40, latency_stat="p95"), model, [])
    assert (q.limits.ttft_s, q.limits.itl_s, q.limits.e2e_s) == (0.5, 0.04, None)
    assert q.limits.stats == ("p95", "p95", "p95")
    assert (q.isl, q.osl) == (1000, 200)


def test_arrivals_are_a_tagged_value() -> None:
    rate = arrivals_of(_spec(arrivals="poisson", cv=2.0, router="random"))
    assert rate == OpenLoop(2.0, Router.RANDOM)
    assert rate.open_loop and rate.kind is Arrivals.POISSON
    clients = arrivals_of(_spec(arrivals="closed-loop"))
    assert isinstance(clients, ClosedLoop) and not clients.open_loop
    assert clients.kind is Arrivals.CLOSED_LOOP
    assert clients.cv == 1.0  # no arrival process: the planner's neutral value


def test_the_search_space_holds_specs_not_ids() -> None:
    catalog = shipped.catalog()
    model = catalog.model("llama-3-8b")
    hw = [catalog.hardware("h100-sxm")]
    q = question_of(_spec(precision=["fp8"], tp="auto", pp=[1]), model, hw)
    assert q.space.model is model and q.space.hardware == tuple(hw)
    assert (q.space.precisions, q.space.tps, q.space.pps, q.space.eps) == (["fp8"], None, [1], None)


def _count_lookups(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    asked: Counter[str] = Counter()
    model, hardware = Catalog.model, Catalog.hardware

    def counted_model(self: Catalog, name: str) -> Any:
        asked[f"model:{name}"] += 1
        return model(self, name)

    def counted_hardware(self: Catalog, name: str) -> Any:
        asked[f"hardware:{name}"] += 1
        return hardware(self, name)

    monkeypatch.setattr(Catalog, "model", counted_model)
    monkeypatch.setattr(Catalog, "hardware", counted_hardware)
    return asked


def test_plan_looks_each_id_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _count_lookups(monkeypatch)
    study = resolve(shipped.catalog(), "default", {"hardware": ["dgx-h100", "h100-sxm"]})
    study.plan(top=1)
    study.frontier(max_concurrency=4)
    assert asked == {"model:llama-3-8b": 1, "hardware:dgx-h100": 1, "hardware:h100-sxm": 1}


def test_a_pipeline_looks_each_id_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _count_lookups(monkeypatch)
    study = resolve(shipped.catalog(), "pipeline-agent", {})
    study.pipeline(top=1)
    spec = study.spec
    assert spec.pipeline is not None
    models = {f"model:{st.model}" for st in spec.pipeline}
    hardware = {f"hardware:{h}" for st in spec.pipeline for h in st.hardware or spec.hardware}
    assert set(asked) == models | hardware
    assert set(asked.values()) == {1}


def test_the_ranking_rule_orders_what_is_paid_first() -> None:
    # 2 servers, 16 GPUs paid, $50/h, 20 kW, 12 GPUs used
    key = {o: objective_key(o, 2, 16, 50.0, 20e3, 12) for o in Objective}
    assert key[Objective.SERVERS] == (2, 16, 50.0, 20e3, 12)
    assert key[Objective.GPUS] == (16, 2, 50.0, 20e3, 12)
    assert key[Objective.COST] == (50.0, 2, 16, 20e3, 12)
    assert key[Objective.POWER] == (20e3, 2, 16, 50.0, 12)
    assert objective_key(Objective.COST, 1, 8, None, None) == (float("inf"), 1, 8, float("inf"), 0)
    assert set(RANKING) == set(Objective)  # every objective has its rule


@pytest.mark.parametrize(
    "extra",
    [
        {"disaggregated": {"prefill": {"kv_precision": ""}, "decode": {}}},
        {"disaggregated": {"prefill": {}, "decode": {"kv_precision": "fp7"}}},
        {
            "pipeline": [
                {"name": "a", "model": "llama-3-8b", "isl": 9, "osl": 9, "precision": ["x"]}
            ]
        },
    ],
)
def test_a_pool_or_stage_states_known_precisions(extra: dict[str, Any]) -> None:
    """What a pool or stage states replaces the scenario's (inherit), so it is checked as the
    scenario's own precisions are."""
    data = {**BASE, "ttft_ms": 500, **extra}
    if "pipeline" in extra:
        data = {**{k: v for k, v in data.items() if k != "model"}, "e2e_ms": 9000}
    with pytest.raises(ValidationError, match="unknown precision"):
        ScenarioSpec.model_validate(data)


def test_each_arrivals_kind_says_its_own_words() -> None:
    assert ClosedLoop().words == "closed-loop clients"
    assert OpenLoop().words == "Poisson arrivals, least-loaded router"
    assert OpenLoop(2.0, Router.RANDOM).words == "gamma (cv 2) arrivals, random router"
    assert OpenLoop(0.0).words.startswith("evenly spaced arrivals")
    trace = TraceArrivals(1.374, source="chat.csv", skipped=1200)
    assert (
        trace.words
        == "arrivals of trace chat.csv (sized at cv 1.37, 1,200 rows of 0 tokens skipped)"
    )
    assert TraceArrivals(0.8, source="a.csv").words == "arrivals of trace a.csv (sized at cv 0.8)"


def test_a_trace_is_a_member_of_the_arrivals_union() -> None:
    """A scenario with a trace states arrivals at a rate with the trace's cv (the schema reads
    ``arrivals: trace`` as a rate); the question holds the trace's arrivals, not a rate."""
    read = SimpleNamespace(source="chat.csv", skipped=3)  # what a read trace gives the words
    arrivals = arrivals_of(_spec(arrivals="trace", trace="chat.csv", cv=1.5), read)  # type: ignore[arg-type]
    assert arrivals == TraceArrivals(1.5, Router.LEAST_LOADED, "chat.csv", 3)
    assert arrivals.kind == "trace" and arrivals.open_loop


def _small(arrivals: Any) -> Question:
    catalog = shipped.catalog()
    space = SearchSpace(
        catalog.model("llama-3.1-8b"), (catalog.hardware("h100-sxm"),), ["fp8"], tps=[1], pps=[1]
    )
    return Question(space, 1000, 200, Limits(ttft_s=1.0, itl_s=0.05), arrivals)


def test_the_planner_sizes_a_trace_by_its_rate_and_burstiness() -> None:
    """The solvers read a trace's arrivals as what they are: a rate with its gaps' cv, spread by
    its router; the same cv and router at a rate give the same plan."""
    est = shipped.estimator()
    by_trace = plan(_small(TraceArrivals(1.5, Router.RANDOM, "x.csv")), 20.0, est).chosen
    by_rate = plan(_small(OpenLoop(1.5, Router.RANDOM)), 20.0, est).chosen
    assert by_trace is not None and by_rate is not None
    assert by_trace.candidate.label() == by_rate.candidate.label()
    assert (by_trace.instances, by_trace.rate) == (by_rate.instances, by_rate.rate)


def test_the_chosen_candidate_planned_alone_is_the_same_plan() -> None:
    """plan_search.plan_alone narrows the question to the chosen candidate: two independent
    searches of the same candidate, the same count and rate."""
    est = shipped.estimator()
    q = _small(ClosedLoop())
    q = Question(SearchSpace(q.model, q.space.hardware), q.isl, q.osl, q.limits)  # every split
    result = plan(q, 30.0, est, PlanOptions(top=2))
    chosen = result.chosen
    assert chosen is not None and len(result.feasible) > 1
    alone = plan_alone(chosen, est, q, PlanOptions())
    assert alone is not None and alone.candidate.label() == chosen.candidate.label()
    assert (alone.instances, alone.rate) == (chosen.instances, chosen.rate)


def test_where_the_open_loop_searches_start_changes_no_plan() -> None:
    """``PlanOptions.start_share`` places each search's first point (plan_alone starts at the
    chosen plan's load share): the counts and rates found are the same from anywhere."""
    est = shipped.estimator()
    q = _small(OpenLoop(2.0, Router.LEAST_LOADED))
    plans = [plan(q, 40.0, est, PlanOptions(top=2, start_share=s)) for s in (None, 0.03, 0.97)]
    found = [[(p.candidate.label(), p.instances, p.rate) for p in r.feasible] for r in plans]
    assert found[0] and found[1] == found[0] and found[2] == found[0]
    chosen = plans[0].chosen
    assert chosen is not None
    alone = plan_alone(chosen, est, q, PlanOptions())
    assert alone is not None and (alone.instances, alone.rate) == (chosen.instances, chosen.rate)


def test_a_pool_and_a_stage_inherit_through_one_path() -> None:
    catalog = shipped.catalog()
    model, hw = catalog.model("llama-3-8b"), [catalog.hardware("h100-sxm")]
    spec = _spec(precision=["fp8"], tp="auto", pp=[1], kv_precision="fp8")
    stage = PipelineStage(name="s", model="llama-3-8b", isl=9, osl=9, tp=[2], ep="auto")
    for part in (Pool(tp=[2]), stage):
        space = part_space(part, spec, model, hw)
        assert space.model is model and space.hardware == tuple(hw)
        assert (space.precisions, space.kv_precision) == (["fp8"], "fp8")  # the scenario's
        assert (space.tps, space.pps, space.eps) == ([2], [1], None)  # its own tp, else inherited
