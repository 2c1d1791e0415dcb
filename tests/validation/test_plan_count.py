"""benchmarks/plan_count.py: GPUs planned / GPUs implied and the unsafe flag, by hand, and the
whole path through ``planner.search_point`` on a curve the model itself measured (its plan
must need the GPUs the curve does)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from measurement_row import row

from inferencesize.catalog import load_catalog
from inferencesize.measured_map import map_measurements
from inferencesize.serving import OperatingPoint, inflight_arrays
from inferencesize.validation import estimator_chooser

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "plan_count.py"


@pytest.fixture(scope="module")
def pc() -> ModuleType:
    if not SCRIPT.is_file():
        pytest.skip("benchmarks/ is not part of this source tree")
    spec = importlib.util.spec_from_file_location("plan_count", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["plan_count"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def op(concurrency: float, requests_per_s: float) -> OperatingPoint:
    """A planned point: only its load and rate matter to the judgement."""
    return OperatingPoint(concurrency, concurrency, 0, 0, 0, requests_per_s, 0, 0, 0, None, None)


def curve(pc: ModuleType, points: list[tuple[float, float, float, float]]) -> object:
    mapped, _ = map_measurements(load_catalog(), [row("ttft_ms_avg", 100.0)])
    return pc.Curve(mapped[0], "nim-2024", tuple(pc.Point(*p) for p in points))


# Measured: 1, 4, 16 clients; TPOT 10, 20, 40 ms; TTFT 100, 200, 320 ms; 1, 3, 8 req/s.
SWEEP = [(1.0, 0.010, 0.100, 1.0), (4.0, 0.020, 0.200, 3.0), (16.0, 0.040, 0.320, 8.0)]


def test_ratio_and_excess_by_hand(pc: ModuleType) -> None:
    c = curve(pc, SWEEP)
    at4 = c.points[1]  # limits: TPOT 20 ms, TTFT 200 ms; measured 3 req/s per instance
    # The plan runs 8 clients at 4 req/s: GPUs planned / implied = 3 / 4 = 0.75. Halfway
    # between 4 and 16 in log C the curve reads TPOT (20 + 40) / 2 = 30 ms (+50 % over the
    # limit) and TTFT (200 + 320) / 2 = 260 ms (+30 %): unsafe, TPOT the worst.
    o = pc.judge(c, at4, op(8.0, 4.0))
    assert o.ratio == pytest.approx(0.75)
    assert (o.excess_metric, o.unsafe) == ("TPOT", True)
    assert o.excess == pytest.approx(0.5)
    # 4.4 clients at 3.1 req/s: ratio 3 / 3.1; TPOT 20 + 20 · ln 1.1 / ln 4 = 21.375 ms,
    # +6.9 %, within the 10 % margin; TTFT 200 + 120 · ln 1.1 / ln 4 = 208.25 ms (+4.1 %).
    o = pc.judge(c, at4, op(4.4, 3.1))
    assert o.ratio == pytest.approx(3 / 3.1)
    assert o.excess == pytest.approx(20 * math.log(1.1) / math.log(4) / 20)
    assert not o.unsafe
    # 2 clients at 2 req/s: 1.5 times the GPUs; the curve reads 15 ms there (−25 %) and
    # TTFT 150 ms (−25 %): safe.
    o = pc.judge(c, at4, op(2.0, 2.0))
    assert o.ratio == pytest.approx(1.5)
    assert o.excess == pytest.approx(-0.25)
    # Above the last point: extrapolated from the last two, 40 + 20 · ln 2 / ln 4 = 50 ms at
    # 32 clients (+150 %).
    o = pc.judge(c, at4, op(32.0, 9.0))
    assert o.excess == pytest.approx(1.5)
    # No plan: infinitely many GPUs, and nothing to judge.
    o = pc.judge(c, at4, None, "TPOT 1.20× at 1 client", 1.2)
    assert math.isinf(o.ratio) and o.excess is None and not o.unsafe


def test_one_point_curve_judges_only_below_it(pc: ModuleType) -> None:
    c = curve(pc, SWEEP[1:2])
    assert pc.judge(c, c.points[0], op(2.0, 2.0)).excess == pytest.approx(0.0)
    assert pc.judge(c, c.points[0], op(8.0, 4.0)).excess is None


def test_summary_by_hand(pc: ModuleType) -> None:
    c = curve(pc, SWEEP)
    at4 = c.points[1]
    outcomes = [
        pc.judge(c, at4, op(2.0, 2.0)),  # r = 1.5, safe
        pc.judge(c, at4, op(8.0, 4.0)),  # r = 0.75, unsafe (+50 %)
        pc.judge(c, at4, op(4.4, 3.1)),  # r = 0.968, safe
        pc.judge(c, at4, None),  # no plan
    ]
    s = pc.summarise(outcomes)
    # |r − 1| = 0.5, 0.25, 0.032, ∞: the median order statistic (numpy "higher") is 0.5
    assert (s.points, s.no_plan, s.judged) == (4, 1, 3)
    assert s.median_abs == pytest.approx(0.5)
    assert math.isinf(s.p90_abs)
    assert s.planned_median_abs == pytest.approx(0.25)
    assert s.unsafe_share == pytest.approx(1 / 3)
    assert s.worst.excess == pytest.approx(0.5)
    text = pc.table(outcomes)
    assert "| all | 4 | 1 | 50% | ∞ |" in text


def test_a_curve_the_model_measured_plans_its_own_gpus(pc: ModuleType) -> None:
    """Measured = the model's own closed-loop predictions (Llama-3-8B fp8 on one H100,
    2000 / 200 tokens): at each point's TPOT and TTFT the plan must run the instance at that
    load (to the search's 1/64 of a client) and need the same GPUs."""
    catalog = load_catalog()
    mapped, _ = map_measurements(catalog, [row("ttft_ms_avg", 100.0)])
    chooser = estimator_chooser(catalog)
    est = pc.estimator_of(chooser, mapped[0])
    res = est.resolve(mapped[0].candidate, 2200.0)
    loads = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    r = inflight_arrays(res.deployment, 2000.0, 200.0, loads, res.max_concurrency)
    points = tuple(
        pc.Point(float(c), float(i), float(t), float(x))
        for c, i, t, x in zip(loads, r.itl_s, r.ttft_s, r.requests_per_s, strict=True)
    )
    c = pc.Curve(mapped[0], est.efficiency.id, points)
    for o in pc.evaluate(est, c):
        assert o.planned is not None
        assert o.planned.concurrency == pytest.approx(o.point.concurrency, abs=1 / 64)
        assert o.ratio == pytest.approx(1.0, abs=0.02)
        assert not o.unsafe


def test_page_is_the_generators(pc: ModuleType) -> None:
    """docs/plan_count.md is what ``--write`` writes: everything but the tables (whose figures
    move with the model; the script prints them in seconds) is the generator's."""
    doc = ROOT / "docs" / "plan_count.md"
    if not doc.is_file():
        pytest.skip("docs/ is not part of this source tree")
    text = doc.read_text(encoding="utf-8")
    tables = text.split("\n\n| points |", 1)[1].rstrip("\n")
    assert text == pc.page("| points |" + tables)
