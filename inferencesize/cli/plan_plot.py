"""``infersize plan --plot FILE``: requests/s per instance against TTFT on the chosen hardware."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from inferencesize.cli.common import efficiency_for, open_catalog
from inferencesize.estimate import Estimator
from inferencesize.frontier import concurrency_grid, curve
from inferencesize.planner import PlanResult
from inferencesize.plotting import LabelledCurve, check_plot_path, save_rate_vs_ttft
from inferencesize.report import format_load
from inferencesize.specs.scenario import ScenarioSpec

#: Candidates drawn besides the chosen one (the next-ranked on the same hardware).
MAX_CURVES = 6


def draw_plan(
    path: Path,
    scenario: ScenarioSpec,
    result: PlanResult,
    engine: str | None,
    calibration: Path | None,
    catalog_dirs: list[Path] | None,
) -> None:
    """Each candidate on the chosen hardware as a curve over concurrency 1 … max(3 × the
    chosen concurrency, 16) (capped at the KV capacity); the TTFT limit and the chosen
    operating point marked."""
    check_plot_path(path)
    chosen = result.chosen
    if chosen is None:
        sys.stderr.write(f"no plot: no feasible plan ({path} not written)\n")
        return
    est = Estimator(efficiency_for(open_catalog(catalog_dirs), engine, calibration))
    hw = chosen.candidate.hardware_id
    plans = [chosen] + [
        p for p in result.feasible if p is not chosen and p.candidate.hardware_id == hw
    ]
    isl, osl = scenario.input_tokens, scenario.output_tokens
    curves = []
    for p in plans[:MAX_CURVES]:
        res = est.resolve(p.candidate, isl + osl)
        top = min(res.max_concurrency, max(math.ceil(3 * p.point.concurrency), 16))
        c = curve(res, isl, osl, scenario.batching, concurrency_grid(top))
        curves.append(LabelledCurve(p.candidate.label(), c, p is chosen))
    op = chosen.point
    save_rate_vs_ttft(
        path,
        curves,
        scenario.ttft_ms / 1e3 if scenario.ttft_ms is not None else None,
        (
            op.ttft_s,
            op.requests_per_s,
            f"chosen: concurrency {format_load(op.concurrency)}, {op.requests_per_s:.3g} req/s,"
            f" TTFT {op.ttft_s * 1e3:.0f} ms",
        ),
        f"{scenario.model} · ISL {isl} · OSL {osl} · {scenario.batching} · {hw}"
        f" · binding {chosen.binding}",
    )
    sys.stderr.write(f"wrote {path}\n")
