"""``Deployment.step_scale`` multiplies every step once (``latency.step_time``), and the plan's
count at the slow edge of its error band (``band_plan.slow_edge``) is the same candidate
sized with it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inferencesize import latency
from inferencesize.band_plan import slow_edge
from inferencesize.bands import Band, BandTable, label
from inferencesize.catalog import Catalog, load_catalog
from inferencesize.deployment import default_kv_precision
from inferencesize.estimate import Candidate, Estimator
from inferencesize.latency import Deployment
from inferencesize.parallelism import Parallelism
from inferencesize.plan_search import plan
from inferencesize.planner import Limits
from inferencesize.question import PlanOptions, Question, SearchSpace
from inferencesize.serving import inflight
from inferencesize.techniques import Techniques

LIMITS = Limits.from_ms(2000, 40, None, "streaming")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _est(catalog: Catalog, **kw: object) -> Estimator:
    return Estimator(catalog.efficiency_set("nim-2024"), **kw)  # type: ignore[arg-type]


def _cand(catalog: Catalog, tp: int = 1) -> Candidate:
    gpu, system = catalog.hardware("h100-sxm")
    return Candidate(
        catalog.model("llama-3-8b"),
        gpu,
        system,
        "fp8",
        default_kv_precision("fp8"),
        Parallelism(tp),
    )


def _dep(catalog: Catalog, est: Estimator) -> Deployment:
    res = est.resolve(_cand(catalog), 2400)
    assert res.deployment is not None
    return res.deployment


@pytest.mark.parametrize(
    "techniques",
    [Techniques(), Techniques(prefix_tokens=1000, prefix_hit_rate=0.5)],
    ids=["plain", "prefix caching"],
)
def test_step_scale_multiplies_every_part_of_a_step_once(
    catalog: Catalog, techniques: Techniques
) -> None:
    dep = replace(_dep(catalog, _est(catalog)), techniques=techniques)
    slow = replace(dep, step_scale=1.7)
    for args in ((32, 2200), (8, 1500, 2, 2000)):
        a, b = latency.step_time(dep, *args), latency.step_time(slow, *args)
        for part in ("gemm_s", "attention_s", "comm_s", "overhead_s", "total_s"):
            assert getattr(b, part) == pytest.approx(1.7 * getattr(a, part))


def test_estimator_step_scale_slows_one_clients_token_gap_by_that_factor(
    catalog: Catalog,
) -> None:
    # one client: each gap between its tokens is one decode step of batch 1
    base, slow = _dep(catalog, _est(catalog)), _dep(catalog, _est(catalog, step_scale=2.0))
    assert slow.step_scale == 2.0 and base.step_scale == 1.0
    a = inflight(base, 2000, 200, 1, 64)
    b = inflight(slow, 2000, 200, 1, 64)
    assert b.itl_s == pytest.approx(2.0 * a.itl_s)


def _question(catalog: Catalog) -> Question:
    c = _cand(catalog)
    space = SearchSpace(c.model, ((c.gpu, c.system),), ["fp8"], tps=[1], pps=[1], eps=[1])
    return Question(space, 2000, 200, LIMITS)


def _chosen(catalog: Catalog, est: Estimator, peak: float = 40.0):  # type: ignore[no-untyped-def]
    result = plan(_question(catalog), peak, est)
    assert result.chosen is not None
    return result.chosen


def _edge(catalog: Catalog, est: Estimator, high: float):  # type: ignore[no-untyped-def]
    chosen = _chosen(catalog, est)
    name = label(chosen.trust, False)
    table = BandTable({("itl", name): Band(0.5, high, 100, name)}, {})
    edge = slow_edge(chosen, est, table, _question(catalog), PlanOptions())
    assert edge is not None and edge.band.high == high
    return chosen, edge


def test_slow_edge_at_the_prediction_is_the_plan_itself(catalog: Catalog) -> None:
    chosen, edge = _edge(catalog, _est(catalog), 1.0)  # two independent searches agree
    assert edge.plan is not None
    assert (edge.plan.instances, edge.plan.gpus) == (chosen.instances, chosen.gpus)


def test_slower_steps_never_need_fewer_instances(catalog: Catalog) -> None:
    est = _est(catalog)
    counts = []
    for high in (1.0, 1.3, 1.8):
        _, edge = _edge(catalog, est, high)
        counts.append(edge.plan.instances if edge.plan else float("inf"))
    assert counts == sorted(counts) and counts[-1] > counts[0]
    rec = edge.record()
    assert rec["step_scale"] == 1.8 and rec["instances"] == counts[-1]
