"""`plan --verify` and `plan --plot`: the chosen plan simulated and drawn, on the study's own
deployment (engine set, techniques, KV cap)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from inferencesize.cli.common import Progress
from inferencesize.io_write import Input
from inferencesize.plotting import check_plot_path, save_rate_vs_ttft
from inferencesize.render.plan import limits_record, verify_record
from inferencesize.report import format_load
from inferencesize.study import Study


def add_verification(study: Study, rec: dict[str, Any], result: Any) -> None:
    """Search the chosen plan's instance count by simulation at the peak rate; put the
    outcome under ``rec["verify"]``."""
    p = result.chosen
    if p is None:
        rec["verify"] = None
        return
    with Progress("simulating instance counts at the peak rate"):  # on a terminal, after 1 s
        v = study.verify(p)
    trace = None
    if study.trace is not None:  # a long trace replays its first requests: say which
        note = study.trace.replay_note()
        trace = f"{study.trace.source} ({note})" if note else study.trace.source
    rec["verify"] = verify_record(p, v, limits_record(study), trace)


def draw_plan(path: Path, study: Study, result: Any, inputs: list[Input]) -> None:
    """Req/s per instance against TTFT on the chosen hardware; the TTFT limit and the chosen
    operating point marked (``inputs``: the command's input files, never overwritten)."""
    check_plot_path(path, inputs=inputs)
    chosen = result.chosen
    if chosen is None:
        sys.stderr.write(f"no plot: no feasible plan ({path} not written)\n")
        return
    s, op = study.spec, chosen.point
    save_rate_vs_ttft(
        path,
        study.rate_curves(result),
        s.ttft_ms / 1e3 if s.ttft_ms is not None else None,
        (
            op.ttft_s,
            op.requests_per_s,
            f"chosen: concurrency {format_load(op.concurrency)}, {op.requests_per_s:.3g} req/s,"
            f" TTFT {op.ttft_s * 1e3:.0f} ms",
        ),
        f"{s.model} · ISL {study.isl} · OSL {study.osl} · {s.batching} · "
        f"{chosen.candidate.hardware_id} · binding {chosen.binding}",
        inputs=inputs,
    )
    sys.stderr.write(f"wrote {path}\n")
