"""`infersize frontier`: the throughput–interactivity Pareto frontier, as a table and plots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich import box

from inferencesize import report
from inferencesize.cli.common import (
    CalibrationOpt,
    CatalogOpt,
    EngineOpt,
    check_format,
    efficiency_for,
    open_catalog,
    split_ints,
    stdout,
)
from inferencesize.cli.plan_cmd import (
    BatchingOpt,
    E2eOpt,
    EpOpt,
    HardwareOpt,
    IslOpt,
    ItlOpt,
    ModelOpt,
    ModeOpt,
    OslOpt,
    PpOpt,
    PrecisionOpt,
    TpOpt,
    TtftOpt,
    load_scenario,
)
from inferencesize.errors import InputError
from inferencesize.estimate import Estimator
from inferencesize.frontier import Frontier, frontier
from inferencesize.planner import Limits
from inferencesize.plotting import Series, check_plot_path, save_frontier, terminal_plot
from inferencesize.units import PRECISIONS

FORMATS = ("table", "json", "csv")
DEFAULT_PRECISIONS = ("fp8", "bf16")
MARKS = {"latency-optimal": "L", "throughput-optimal": "T", "best-within-limits": "G"}


def _marks(fr: Frontier) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for name, idx in (
        ("latency-optimal", fr.latency_optimal()),
        ("throughput-optimal", fr.throughput_optimal()),
        ("best-within-limits", fr.best_within_limits()),
    ):
        if idx is not None:
            out.setdefault(idx, []).append(name)
    return out


def point_record(fr: Frontier, i: int, marks: dict[int, list[str]]) -> dict[str, Any]:
    """One operating point with everything it assumes (candidate, concurrency)."""
    c = fr.candidates[int(fr.candidate_index[i])]
    return {
        **c.fields(),
        "gpus_per_instance": c.par.gpus,
        "concurrency": int(fr.concurrency[i]),
        "output_tokens_per_s_per_gpu": float(fr.tokens_per_s_per_gpu[i]),
        "output_tokens_per_s_per_user": float(fr.tokens_per_s_per_user[i]),
        "ttft_ms": float(fr.ttft_s[i]) * 1e3,
        "itl_ms": float(fr.itl_s[i]) * 1e3,
        "e2e_ms": float(fr.e2e_s[i]) * 1e3,
        "requests_per_s_per_instance": float(fr.requests_per_s[i]),
        "on_frontier": bool(fr.on_frontier[i]),
        "meets_limits": bool(fr.meets_limits[i]),
        "mark": "+".join(marks.get(i, [])) or None,
    }


def _order(fr: Frontier, mask: Any) -> list[int]:
    """Indices of ``mask``, most interactive (tokens/s per user) first."""
    idx = np.flatnonzero(mask)
    return [int(i) for i in idx[np.argsort(-fr.tokens_per_s_per_user[idx], kind="stable")]]


def _thin(indices: list[int], keep: set[int], rows: int) -> list[int]:
    if len(indices) <= rows:
        return indices
    step = len(indices) / rows
    picked = {indices[int(k * step)] for k in range(rows)} | (keep & set(indices))
    return [i for i in indices if i in picked]


def _terminal(fr: Frontier) -> str:
    on = np.flatnonzero(fr.on_frontier)
    good = np.flatnonzero(fr.on_goodput_frontier)
    series = [
        Series(fr.tokens_per_s_per_user, fr.tokens_per_s_per_gpu, "·"),
        Series(fr.tokens_per_s_per_user[on], fr.tokens_per_s_per_gpu[on], "•"),
        Series(fr.tokens_per_s_per_user[good], fr.tokens_per_s_per_gpu[good], "o"),
    ]
    for idx, char in (
        (fr.best_within_limits(), "G"),
        (fr.throughput_optimal(), "T"),
        (fr.latency_optimal(), "L"),
    ):
        if idx is not None:
            series.append(
                Series([fr.tokens_per_s_per_user[idx]], [fr.tokens_per_s_per_gpu[idx]], char)
            )
    plot = terminal_plot(series, "output tokens/s per user (1 / ITL)", "output tokens/s per GPU")
    legend = (
        "· operating point   • frontier   o meets limits   L latency-optimal"
        "   T throughput-optimal   G best within limits"
    )
    return f"{plot}\n{legend}"


def frontier_command(
    scenario: Annotated[
        str | None,
        typer.Argument(
            help="Optional scenario file or shipped id (model, lengths, hardware, limits);"
            " flags override it. Without it --model, --hardware, --isl and --osl are needed.",
            show_default=False,
        ),
    ] = None,
    model: ModelOpt = None,
    hardware: HardwareOpt = None,
    isl: IslOpt = None,
    osl: OslOpt = None,
    precision: PrecisionOpt = None,
    ttft_ms: TtftOpt = None,
    itl_ms: ItlOpt = None,
    e2e_ms: E2eOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    ep: EpOpt = None,
    mode: ModeOpt = None,
    batching: BatchingOpt = None,
    max_concurrency: Annotated[
        int | None,
        typer.Option(
            "--max-concurrency", min=1, help="Sweep concurrency 1..N (default: KV capacity)."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Also draw the frontier to FILE.png or FILE.svg (matplotlib)."),
    ] = None,
    terminal: Annotated[
        bool,
        typer.Option(
            "--terminal-plot/--no-terminal-plot", help="Text plot under the table (table format)."
        ),
    ] = True,
    all_points: Annotated[
        bool, typer.Option("--all", help="json/csv: every operating point, not only the frontier.")
    ] = False,
    rows: Annotated[
        int, typer.Option("--rows", min=1, help="Table: at most N frontier rows (evenly spaced).")
    ] = 30,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table | json | csv")] = "table",
    engine: EngineOpt = None,
    calibration: CalibrationOpt = None,
    catalog_dirs: CatalogOpt = None,
) -> None:
    """Throughput against interactivity: output tokens/s per GPU versus tokens/s per user
    (1 / ITL) over every TP/PP/EP split in one node, precision and concurrency 1..KV capacity.
    Marks the Pareto frontier, its latency-optimal (L) and throughput-optimal (T) ends, the
    points meeting --ttft-ms/--itl-ms/--e2e-ms (o) and the best of them (G).

    Example: infersize frontier --model llama-3-70b --hardware h100-sxm --isl 2000 --osl 200
    --ttft-ms 1000 --itl-ms 40 --plot frontier.png
    """
    check_format(fmt, FORMATS)
    if plot is not None:
        check_plot_path(plot)
    for key, value, allowed in (
        ("mode", mode, ("streaming", "sequential")),
        ("batching", batching, ("inflight", "static")),
    ):
        if value is not None and value not in allowed:
            raise InputError(f"--{key}: '{value}' is not one of {', '.join(allowed)}")
    catalog = open_catalog(catalog_dirs)
    if scenario is not None:
        flags = {
            "model": model,
            "isl": isl,
            "osl": osl,
            "ttft_ms": ttft_ms,
            "itl_ms": itl_ms,
            "e2e_ms": e2e_ms,
            "hardware": hardware or None,
            "precision": precision or None,
            "tp": tp,
            "pp": pp,
            "ep": ep,
            "mode": mode,
            "batching": batching,
        }
        spec, _ = load_scenario(catalog, scenario, flags)
        if spec.model is None:
            raise InputError(f"{scenario}: frontier needs a single-model scenario (not a pipeline)")
        model_id, hw_ids, precisions = spec.model, spec.hardware, spec.precision
        isl_t, osl_t, kv = spec.input_tokens, spec.output_tokens, spec.kv_precision
        limits = Limits.of(spec)
        splits = [None if v == "auto" else list(v) for v in (spec.tp, spec.pp, spec.ep)]
        batch = spec.batching
    else:
        missing = [
            f"--{n}"
            for n, v in (("model", model), ("hardware", hardware), ("isl", isl), ("osl", osl))
            if not v
        ]
        if missing:
            raise InputError(f"frontier needs {', '.join(missing)} (or a scenario file)")
        assert model is not None and hardware and isl is not None and osl is not None
        model_id, hw_ids, isl_t, osl_t, kv = model, hardware, isl, osl, None
        precisions = precision or list(DEFAULT_PRECISIONS)
        for p in precisions:
            if p not in PRECISIONS:
                raise InputError(
                    f"--precision: unknown '{p}'; expected one of {', '.join(PRECISIONS)}"
                )
        limits = Limits.from_ms(
            ttft_ms, itl_ms, e2e_ms, "sequential" if mode == "sequential" else "streaming"
        )
        splits = []
        for flag, value in (("--tp", tp), ("--pp", pp), ("--ep", ep)):
            parsed = split_ints(value, flag) if value is not None else "auto"
            splits.append(parsed if isinstance(parsed, list) else None)
        batch = "static" if batching == "static" else "inflight"
    spec_model = catalog.model(model_id)
    hw = [catalog.hardware(h) for h in dict.fromkeys(hw_ids)]
    eset = efficiency_for(catalog, engine, calibration)
    fr = frontier(
        Estimator(eset),
        spec_model,
        hw,
        precisions,
        isl_t,
        osl_t,
        limits,
        kv_precision=kv,
        tps=splits[0],
        pps=splits[1],
        eps=splits[2],
        batching=batch,
        max_concurrency=max_concurrency,
    )
    if fr.size == 0:
        first = fr.rejected[0] if fr.rejected else ("", "no candidates")
        raise InputError(f"no candidate can run {spec_model.id}: {first[0]}: {first[1]}")
    marks = _marks(fr)
    title = (
        f"{spec_model.id} · {', '.join(dict.fromkeys(hw_ids))} · ISL {isl_t} · OSL {osl_t}"
        f" · {'/'.join(precisions)} · {batch}\n{eset.engine}"
    )
    chosen = _order(fr, np.ones(fr.size, dtype=bool) if all_points else fr.on_frontier)
    limits_rec = {
        "ttft_ms": limits.ttft_s * 1e3 if limits.ttft_s is not None else None,
        "itl_ms": limits.itl_s * 1e3 if limits.itl_s is not None else None,
        "e2e_ms": limits.e2e_s * 1e3 if limits.e2e_s is not None else None,
        "mode": limits.mode,
    }
    if plot is not None:
        save_frontier(plot, fr, title)
    if fmt == "json":
        ends = {
            name.replace("-", "_"): (point_record(fr, idx, marks) if idx is not None else None)
            for name, idx in (
                ("latency-optimal", fr.latency_optimal()),
                ("throughput-optimal", fr.throughput_optimal()),
                ("best-within-limits", fr.best_within_limits()),
            )
        }
        rec = {
            "model": spec_model.id,
            "hardware": list(dict.fromkeys(hw_ids)),
            "precisions": list(precisions),
            "isl": isl_t,
            "osl": osl_t,
            "batching": batch,
            "limits": limits_rec,
            "engine": eset.engine,
            "points_evaluated": fr.size,
            **ends,
            "points": [point_record(fr, i, marks) for i in chosen],
            "rejected": [{"candidate": c, "reason": r} for c, r in fr.rejected],
        }
        report.emit(stdout(), report.to_json(rec))
    elif fmt == "csv":
        extra = {"model": spec_model.id, "isl": isl_t, "osl": osl_t, "batching": batch}
        report.emit(
            stdout(), report.csv_text([{**extra, **point_record(fr, i, marks)} for i in chosen])
        )
    else:
        out = stdout()
        shown = _thin(chosen, set(marks), rows)
        shown = _order(fr, np.isin(np.arange(fr.size), [*shown, *marks]))
        single_hw = len(set(hw_ids)) == 1
        table_rows = []
        for i in shown:
            r = point_record(fr, i, marks)
            table_rows.append(
                [
                    "".join(MARKS[m] for m in marks.get(i, [])),
                    ("" if single_hw else f"{r['hardware']} ")
                    + f"{r['precision']} "
                    + fr.candidates[int(fr.candidate_index[i])].par.label(),
                    str(r["concurrency"]),
                    f"{r['output_tokens_per_s_per_user']:,.1f}",
                    f"{r['output_tokens_per_s_per_gpu']:,.0f}",
                    f"{r['ttft_ms']:,.0f}",
                    f"{r['itl_ms']:,.1f}",
                    f"{r['e2e_ms'] / 1e3:,.2f}",
                    "yes" if r["meets_limits"] else "no",
                ]
            )
        caption = (
            f"{len(shown)} of {len(chosen)} points shown, {fr.size:,} evaluated"
            f" ({len(fr.candidates)} candidate(s); {eset.engine}); L latency-optimal, T throughput-optimal,"
            " G best within limits; ok = meets the limits"
        )
        table = report.table(
            title.split("\n")[0],
            [
                "",
                "candidate",
                "conc",
                "tok/s/user",
                "tok/s/GPU",
                "TTFT ms",
                "ITL ms",
                "E2E s",
                "ok",
            ],
            table_rows,
            caption=caption,
        )
        table.box = box.SIMPLE_HEAD
        table.show_edge = False
        table.pad_edge = False
        for column in table.columns:
            column.no_wrap = True
        out.print(table)
        if terminal:
            report.emit(out, _terminal(fr))
    if plot is not None:
        sys.stderr.write(f"wrote {plot}\n")
