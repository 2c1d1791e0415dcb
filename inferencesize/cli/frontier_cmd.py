"""`infersize frontier`: the throughput–interactivity Pareto frontier, as a table and plots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from inferencesize import report
from inferencesize.cli.common import check_format, emit_data, format_option, input_files
from inferencesize.cli.options import (
    ScenarioArg,
    arrival_options,
    engine_options,
    study_from,
    technique_options,
    with_options,
    workload_options,
)
from inferencesize.errors import InputError, UsageError
from inferencesize.plotting import check_plot_path, save_frontier
from inferencesize.render import frontier as render
from inferencesize.vocabulary import gaps_words

FORMATS = report.FORMATS


@with_options(workload_options, arrival_options, technique_options, engine_options)
def frontier_command(
    scenario: ScenarioArg = None,
    max_concurrency: Annotated[
        int | None,
        typer.Option(
            "--max-concurrency",
            min=1,
            metavar="N",
            help="Closed loop: sweep concurrency 1..N (default: KV capacity).",
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            metavar="FILE",
            help="Also draw the frontier to FILE.png or FILE.svg (matplotlib; replaces an"
            " existing file, atomically).",
        ),
    ] = None,
    terminal: Annotated[
        bool,
        typer.Option(
            "--terminal-plot/--no-terminal-plot", help="Text plot under the table (table format)."
        ),
    ] = True,
    all_points: Annotated[
        bool,
        typer.Option("--all", help="json/yaml/csv: every operating point, not only the frontier."),
    ] = False,
    rows: Annotated[
        int,
        typer.Option(
            "--rows", min=1, metavar="N", help="Table: at most N frontier rows (evenly spaced)."
        ),
    ] = 30,
    fmt: Annotated[
        str, format_option(FORMATS, "Output format (csv: one row per point).")
    ] = "table",
    **flags: Any,
) -> None:
    """Throughput against interactivity: the Pareto frontier of the splits and loads.

    Output tokens/s per GPU versus tokens/s per user (1 / ITL) over every TP/PP/EP split in
    one node, precision and load. Closed loop (default): concurrency 1..KV capacity, mean
    latencies. --arrivals poisson (or the scenario's arrivals: poisson): request rates per
    instance from 2 % to 95 % of its sustainable rate (--cv for burstier arrivals), latencies
    at --latency-stat (seconds per candidate). Marks the Pareto frontier, its latency-optimal
    (L) and throughput-optimal (T) ends, the points meeting --ttft-ms/--itl-ms/--e2e-ms (o)
    and the best of them (G). Takes the same scenario and flags as plan (traffic is not
    needed).

    Examples:
      infersize frontier default
      infersize frontier default --arrivals poisson --latency-stat p95 --precision fp8 --tp 1
      infersize frontier --model llama-3-70b --hardware h100-sxm --isl 2000 --osl 200 --ttft-ms 1000 --itl-ms 40 --plot frontier.png
    """
    check_format(fmt, FORMATS)
    inputs = input_files(scenario=scenario, calibration=flags.get("calibration"))
    if plot is not None:
        check_plot_path(plot, inputs=inputs)
    study = study_from(scenario, flags, traffic=False)
    spec, model = study.spec, study.model
    if model is None:
        raise InputError(f"{study.shown}: frontier needs a single-model scenario (not a pipeline)")
    if max_concurrency is not None and spec.arrivals == "poisson":
        raise UsageError(
            "--max-concurrency sweeps closed-loop clients; under poisson arrivals the sweep is"
            " a request rate (2 % to 95 % of each instance's sustainable rate): drop it"
        )
    fr = study.frontier(max_concurrency)
    if fr.size == 0:
        first = fr.rejected[0] if fr.rejected else None
        why = f"{first.candidate}: {first.reason}" if first else "no candidates"
        raise InputError(f"no candidate can run {model.id}: {why}")
    hw_ids = list(dict.fromkeys(spec.hardware))
    precisions = sorted({c.precision for c in fr.candidates})
    marks = render.marks_of(fr)
    heading = (
        f"{model.id} · {', '.join(hw_ids)} · ISL {study.isl} · OSL {study.osl}"
        f" · {'/'.join(precisions)} · {spec.batching}"
    )
    if fr.open_loop:
        gaps = gaps_words(spec.cv)
        heading += f" · {gaps} arrivals, latencies at {render.stats_text(fr)}"
    chosen = render.order(fr, np.ones(fr.size, dtype=bool) if all_points else fr.on_frontier)
    # the engines of the sets its candidates are predicted with (study.plan_engine's rule)
    used = {study.estimator.efficiency_for(c.gpu, c.precision).engine: None for c in fr.candidates}
    engine = "; ".join(used) or study.engine
    if plot is not None:
        save_frontier(plot, fr, f"{heading}\n{engine}", inputs=inputs)
    points = [render.point_record(fr, i, marks) for i in chosen]
    rec = {
        "model": model.id,
        "hardware": hw_ids,
        "precisions": precisions,
        "isl": study.isl,
        "osl": study.osl,
        "batching": spec.batching,
        "arrivals": "poisson" if fr.open_loop else "closed-loop",
        "cv": spec.cv if fr.open_loop else None,
        "statistics": dict(zip(("ttft", "itl", "e2e"), fr.stats, strict=True)),
        "limits": {
            "ttft_ms": spec.ttft_ms,
            "itl_ms": spec.itl_ms,
            "e2e_ms": spec.e2e_ms,
            "mode": spec.mode,
        },
        "engine": engine,
        "origins": dict(study.origins),
        "points_evaluated": fr.size,
        **render.ends(fr, marks),
        "points": points,
        "rejected": [{"candidate": r.candidate, "reason": r.reason} for r in fr.rejected],
    }
    extra = {"model": model.id, "isl": study.isl, "osl": study.osl, "batching": spec.batching}

    def tables(out: Any) -> None:
        out.print(render.table(fr, chosen, marks, heading, engine, rows, len(hw_ids) == 1))
        if terminal:
            drawing, legend = render.terminal(fr, out.width)
            report.emit(out, drawing)
            out.print(legend, highlight=False)

    emit_data(fmt, rec, [{**extra, **p} for p in points], tables)
    if plot is not None:
        sys.stderr.write(f"wrote {plot}\n")
