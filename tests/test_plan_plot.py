"""`plan --plot`: the curves are drawn under the plan's own traffic model, so the chosen point
lies on its curve, and every limit of the question is drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from shipped import catalog as shipped_catalog
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.study import resolve

# the README's p99 question: Poisson arrivals, TTFT and ITL limits at p99
P99 = {
    "model": "llama-3-8b",
    "hardware": ["dgx-h100"],
    "tp": [1],
    "precision": ["fp8"],
    "isl": 1000,
    "osl": 200,
    "peak_rps": 50.0,
    "ttft_ms": 2000.0,
    "itl_ms": 100.0,
    "arrivals": "poisson",
    "latency_stat": "p99",
}


def test_open_loop_curve_passes_through_the_plan_at_its_statistic() -> None:
    study = resolve(shipped_catalog(), None, P99)
    assert study.spec.arrivals == "poisson"
    result = study.plan(top=3)
    p = result.chosen
    assert p is not None and p.sizing is not None
    curves = study.rate_curves(result)
    chosen = curves[0]
    assert chosen.chosen and len(chosen.marks) == 2
    cap, planned = chosen.marks
    stats = study.limits.stats
    assert stats == ("p99", "p99", "p99")
    # the capacity mark is the plan's operating point, at the limits' statistic (p99)
    assert cap.requests_per_s == pytest.approx(p.point.requests_per_s, rel=1e-9)
    assert cap.ttft_s == pytest.approx(p.point.ttft_q[0.99], rel=1e-6)
    assert cap.itl_s == pytest.approx(p.point.itl_q[0.99], rel=1e-6)
    # the planned load is peak ÷ instances, below the capacity, on the same curve
    assert planned.requests_per_s == pytest.approx(50.0 / p.instances, rel=1e-6)
    at = p.sizing.search.planned_point(50.0, p.instances)
    assert planned.itl_s == pytest.approx(at.statistic("itl", "p99"), rel=1e-6)
    # the curve is one instance's: latency grows with the rate along it
    c = chosen.curve
    assert np.all(np.diff(c.requests_per_s) > 0)
    assert np.all(np.diff(c.itl_s) >= -1e-12)
    # every curve is on the plan's hardware
    assert all(lc.label.startswith("dgx-h100 ") for lc in curves)


def test_closed_loop_curve_passes_through_the_chosen_load() -> None:
    study = resolve(shipped_catalog(), "default", {})
    result = study.plan(top=0)
    p = result.chosen
    assert p is not None and p.sizing is None
    (lc,) = study.rate_curves(result)[:1]
    (cap,) = lc.marks
    assert cap.requests_per_s == pytest.approx(p.point.requests_per_s, rel=1e-9)
    assert cap.ttft_s == pytest.approx(p.point.ttft_s, rel=1e-9)
    assert p.point.concurrency in set(np.asarray(lc.curve.concurrency).tolist())


def test_plan_plot_draws_a_panel_per_limit(tmp_path: Path, monkeypatch: Any) -> None:
    import inferencesize.plotting as plotting

    seen: dict[str, Any] = {}
    draw = plotting.save_rate_vs_latency

    def spy(path: Path, curves: Any, limits: Any, stats: Any, title: str, **kw: Any) -> None:
        seen.update(limits=list(limits), stats=stats, title=title, ceiling=kw.get("ceiling"))
        draw(path, curves, limits, stats, title, **kw)

    monkeypatch.setattr("inferencesize.cli.plan_extras.save_rate_vs_latency", spy)
    png = tmp_path / "plan.png"
    args = ["plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--tp", "1"]
    args += ["--precision", "fp8", "--isl", "1000", "--osl", "200", "--peak-rps", "50"]
    args += ["--ttft-ms", "2000", "--itl-ms", "100", "--latency-stat", "p99"]
    result = CliRunner().invoke(app, [*args, "--plot", str(png)])
    assert result.exit_code == 0, result.stderr
    assert png.stat().st_size > 20_000
    # the ITL limit is drawn beside the TTFT limit, each at its statistic
    assert seen["limits"] == [
        ("ttft", "p99", pytest.approx(2.0)),
        ("itl", "p99", pytest.approx(0.1)),
    ]
    assert seen["stats"] == ("p99", "p99", "p99")
    assert "open loop" in seen["title"]
    # no latency limit binds within 1 %: the sustainable rate caps it, and is drawn above
    # the chosen point
    if "binding memory" in seen["title"]:
        name, rate = seen["ceiling"]
        assert name.startswith("sustainable rate") and rate > 50.0 / 3
    else:
        assert seen["ceiling"] is None
