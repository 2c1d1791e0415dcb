"""`infersize validate` and `calibrate`: the performance model against measurements."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from inferencesize import report
from inferencesize.cli.calibrate_kernels import calibrate_kernels
from inferencesize.cli.common import (
    Progress,
    check_format,
    emit_data,
    format_option,
    input_files,
    open_catalog,
    stdout,
)
from inferencesize.cli.options import (
    CalibrationOpt,
    CatalogOpt,
    EngineOpt,
)
from inferencesize.errors import InfeasibleError, UsageError
from inferencesize.io_measurements import (
    Measurement,
)
from inferencesize.io_write import check_target, write_atomic
from inferencesize.units import PRECISIONS
from inferencesize.validation import (
    STEADY_TOLERANCE,
)
from inferencesize.validation_study import measured_rows, validate_rows

if TYPE_CHECKING:
    from inferencesize.calibration import Worse


#: What --data reads (validate and calibrate).
DATA_HELP = (
    "Measurements CSV (columns as data/calibration/README.md) or GenAI-Perf export"
    " (profile_export_genai_perf.json/.csv); repeatable."
)
DataOpt = Annotated[list[Path], typer.Option("--data", metavar="FILE", help=DATA_HELP)]


def validate(
    data: DataOpt,
    fmt: Annotated[str, format_option(report.FORMATS)] = "table",
    engine: EngineOpt = None,
    calibration: CalibrationOpt = None,
    catalog_dirs: CatalogOpt = None,
) -> None:
    """Compare predictions with every usable row of measurement files.

    Prints median and p90 absolute percentage error (APE) and the share within 10 % / 25 %,
    per metric and per source. Each row is predicted with the efficiency set of its engine
    (unless --engine or --calibration fixes one; a Dynamo row with its engine's) on the
    deployment it states: attention-DP and MoE-TP sizes from the notes, disaggregated rows at
    their prefill/decode split, spec_decoding=mtp rows with one draft head accepted 85 % of the
    time. tpot_ms_avg is compared with the mean ITL (closed loop, fixed lengths). Rows that
    cannot be mapped are counted by reason and listed, never dropped silently. Also checks
    each serving point against Little's law, and shows how far points measured more than once
    differ between runs (the data's own floor).
    CSV: one row per accuracy group (table: by_metric, by_source, steady_by_metric).

    Examples:
      infersize validate --data measurements.csv
      infersize validate --data measurements.csv --engine nim-2024 --format json
    """
    check_format(fmt, report.FORMATS)
    catalog = open_catalog(catalog_dirs)
    measured = measured_rows(catalog, data, engine, calibration)
    with Progress(f"predicting {len(measured.mapped):,} measured points"):
        found = validate_rows(measured)
    result, off, skipped = found.record, found.off, found.skipped
    by_metric, by_source = result["by_metric"], result["by_source"]
    by_deployment = result["by_deployment"]
    by_metric_steady = result["steady_state"]["by_metric"]
    checks = result["steady_state"]["checked"]
    repeats, sets_used = result["repeat_runs"], result["efficiency_sets"]
    unmapped, by_reason = result["unmapped"], result["unmapped_by_reason"]
    if fmt != "table":
        groups = [("by_metric", by_metric), ("by_source", by_source)]
        groups.append(("by_deployment", by_deployment))
        groups.append(("steady_by_metric", by_metric_steady))
        emit_data(fmt, result, [{"table": name, **r} for name, rs in groups for r in rs])
        return
    out = stdout()
    cols = ["group", "n", "median APE", "p90 APE", "≤10 %", "≤25 %"]

    def fmt_rows(rs: list[dict[str, Any]]) -> list[list[Any]]:
        return [
            [
                r["group"],
                r["n"],
                f"{r['median_ape']:.1%}",
                f"{r['p90_ape']:.1%}",
                f"{r['within_10']:.0%}",
                f"{r['within_25']:.0%}",
            ]
            for r in rs
        ]

    out.print(report.table("accuracy by metric", cols, fmt_rows(by_metric)))
    out.print(report.table("accuracy by source and metric", cols, fmt_rows(by_source)))
    out.print(report.table("accuracy by deployment and metric", cols, fmt_rows(by_deployment)))
    if off:
        ratios = [c.ratio for c in off]
        out.print(
            f"Little's law: {len(off)} of {checks} measured serving points are off steady"
            f" state (clients / (req/s × E2E) = {min(ratios):.3f}–{max(ratios):.3f}, not 1 ±"
            f" {STEADY_TOLERANCE:.0%}): the run ended before its queue settled, while the model"
            " predicts steady state."
        )
        title = "accuracy by metric, steady-state points only"
        out.print(report.table(title, cols, fmt_rows(by_metric_steady)))
    elif checks:
        out.print(f"Little's law: all {checks} measured serving points are in steady state.")
    if repeats:
        title = "run-to-run difference, points measured more than once (|later / first − 1|)"
        rep_cols = ["metric", "points", "pairs", "median", "p90", "max"]
        rep_rows = [
            [r["metric"], r["points"], r["pairs"]]
            + [f"{r[k]:.1%}" for k in ("median", "p90", "max")]
            for r in repeats
        ]
        out.print(report.table(title, rep_cols, rep_rows))
    for u in sets_used:
        label = f"{u['engine']} {u['engine_version']}".strip() or "(engine not stated)"
        out.print(f"{label}: {u['rows']} rows predicted with efficiency set {u['efficiency']}")
    out.print(
        f"{result['rows']} rows read, {result['predicted']} predicted in {result['seconds']:.2f} s, "
        f"{len(unmapped)} not mappable"
    )
    if by_reason:
        title = "rows not predicted, by reason"
        out.print(
            report.table(title, ["reason", "rows"], [[r["reason"], r["rows"]] for r in by_reason])
        )
    # one example row per reason (the JSON lists every row)
    examples: dict[str, Measurement] = {}
    for m, why in skipped:
        examples.setdefault(why, m)
    for why, m in sorted(examples.items(), key=lambda e: e[1].row)[:20]:
        out.print(f"  row {m.row} ({m.source}, {m.model}, {m.metric}): {why}")


def calibrate(
    out_file: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Where to write the fitted set (YAML; with --kernels the kernel fit, JSON); an"
            " existing file only with --force.",
        ),
    ],
    data: Annotated[
        list[Path] | None, typer.Option("--data", metavar="FILE", help=DATA_HELP)
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option(metavar="ID", help="GPU or system id to fit (other GPUs' rows are left out)."),
    ] = None,
    precision: Annotated[
        str | None,
        typer.Option(metavar="[" + "|".join(PRECISIONS) + "]", help="Precision of the runs."),
    ] = None,
    kernels: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Fit the kernel tier instead: a folder of measured kernel tables"
            " (gemm_perf.csv, context_attention_perf.csv, ... as docs/model.md, 'Kernel tier').",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Catalog model id (GenAI-Perf exports: overrides theirs)."),
    ] = None,
    tp: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="TP of the runs (for GenAI-Perf exports)."),
    ] = None,
    isl: Annotated[
        int | None, typer.Option(min=1, metavar="TOKENS", help="ISL (for GenAI-Perf exports).")
    ] = None,
    osl: Annotated[
        int | None, typer.Option(min=1, metavar="TOKENS", help="OSL (for GenAI-Perf exports).")
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Concurrency (for GenAI-Perf exports)."),
    ] = None,
    overheads: Annotated[
        bool, typer.Option("--overheads", help="Also refit the set-wide overheads.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write even if --out exists (replaced atomically) or the fit is worse than the"
            " set it starts from.",
        ),
    ] = False,
    fmt: Annotated[str, format_option(report.FORMATS)] = "table",
    engine: EngineOpt = None,
    catalog_dirs: CatalogOpt = None,
) -> None:
    """Fit efficiency parameters to your measurements (compute, memory, overheads).

    Fits the --hardware GPU at --precision only (bf16 and fp16 as one): rows measured on other
    GPUs or precisions are counted per GPU × precision and left out. Starts from the default
    efficiency set (or --engine's) and prints the fitted values and the error before and after,
    per metric (median and p90 absolute percentage error; CSV: one row per metric). Writes the
    fitted set to --out, for --calibration FILE on estimate, plan and the other commands, only
    if it is no worse than the starting set on every metric (median and p90 within half a
    percentage point); otherwise it writes nothing, names the metric that got worse and exits 3.
    --force writes it anyway, and replaces an existing --out (never a --data file).

    Examples:
      infersize calibrate --data my-runs.csv --hardware a100-sxm-80gb --precision fp16 --out calibration.yaml
      infersize estimate --model llama-3-8b --hardware a100-sxm-80gb --calibration calibration.yaml
      infersize calibrate --data my-runs.csv --hardware a100-sxm-80gb --precision fp16 --overheads --out calibration.yaml --force  # replace it, even with a worse fit
      infersize calibrate --kernels my-kernels/ --out kernel-fit.json  # the kernel tier from your GPU's kernel timings

    --kernels DIR fits the kernel tier instead (GEMM, attention, MLA, MoE and collective
    latencies per GPU × engine × dtype, in the columns of docs/model.md, 'Kernel tier'), writes
    the fit as JSON to --out and prints each kernel family's error; it takes none of --data,
    --hardware, --precision and the GenAI-Perf flags.
    """
    check_format(fmt, report.FORMATS)
    given = {
        "--data": data, "--hardware": hardware, "--precision": precision, "--model": model,
        "--tp": tp, "--isl": isl, "--osl": osl, "--concurrency": concurrency,
        "--overheads": overheads or None, "--engine": engine,
    }  # fmt: skip
    if kernels is not None:
        extra = [flag for flag, value in given.items() if value is not None]
        if extra:
            raise UsageError(
                f"--kernels fits the kernel tier from kernel tables alone: leave out"
                f" {', '.join(extra)} (or fit efficiencies with --data and no --kernels)"
            )
        calibrate_kernels(kernels, out_file, force, fmt, catalog_dirs)
        return
    if data is None or hardware is None or precision is None:
        missing = [flag for flag in ("--data", "--hardware", "--precision") if not given[flag]]
        raise UsageError(
            f"missing {', '.join(missing)}: calibrate fits --data measured on --hardware at"
            " --precision (or the kernel tier with --kernels DIR)"
        )
    inputs = input_files(data=data)
    check_target(out_file, "--out", inputs=inputs, overwrite=force)
    # scipy.optimize is imported here, not at start-up, so every other command stays fast.
    from inferencesize.calibration_study import RunFill, calibration_rows, fit_rows

    catalog = open_catalog(catalog_dirs)
    fill = RunFill(model, tp, isl, osl, concurrency)
    rows = calibration_rows(catalog, data, hardware, precision, fill, engine)
    with Progress(f"fitting {rows.target} to {len(rows.mapped):,} measured points"):
        found = fit_rows(catalog, rows, overheads, out_file.stem, data)
    worse, base = found.worse, rows.base
    written = force or not worse
    if written:
        write_atomic(
            out_file,
            yaml.safe_dump(found.fitted.model_dump(exclude_none=True), sort_keys=False),
            "--out",
            inputs=inputs,
            overwrite=force,
        )
    rec: dict[str, Any] = {"out": str(out_file), "written": written, **found.record}
    quality = rec["fit_quality"]
    head = {k: rec[k] for k in ("id", "hardware", "precision", "starting_set", "written")}
    emit_data(
        fmt,
        rec,
        [{**head, "fitted": rec["fitted"], **q} for q in quality],
        lambda con: _calibrate_tables(con, rec),
    )
    if worse:
        what = _worse_text(worse)
        if not written:
            raise InfeasibleError(
                f"{out_file} not written: the fit is worse than {base.id} on the"
                f" {_rows(len(rows.mapped), rows.target)}: {what} (--force writes it anyway)"
            )
        typer.echo(f"warning: the fit is worse than {base.id}: {what}", err=True)
    typer.echo(f"wrote {out_file}", err=True)


def _worse_text(worse: list[Worse]) -> str:
    """``ttft_ms_avg median APE 25.2% → 31.8%, p90 37.8% → 50.5%; itl_ms_avg …``."""
    by_metric: dict[str, list[str]] = {}
    for w in worse:
        if w.statistic == "predicted":
            text = f"rows predicted {w.before:,.0f} → {w.after:,.0f}"
        else:
            text = f"{w.statistic} {w.before:.1%} → {w.after:.1%}"
            if not by_metric.get(w.metric):
                text = f"{w.statistic} APE {w.before:.1%} → {w.after:.1%}"
        by_metric.setdefault(w.metric, []).append(text)
    return "; ".join(f"{metric} {', '.join(parts)}" for metric, parts in by_metric.items())


def _calibrate_tables(con: Any, rec: dict[str, Any]) -> None:
    con.print(
        f"fitted {rec['hardware']} {rec['precision']}: "
        + ", ".join(f"{k} {v:.3f}" for k, v in rec["fitted"].items()),
        highlight=False,
    )
    cols = ["metric", "n", "median APE before", "after", "p90 before", "after"]

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    rows = [
        [
            q["metric"],
            q["n"],
            pct(q["median_ape_before"]),
            pct(q["median_ape_after"]),
            pct(q["p90_ape_before"]),
            pct(q["p90_ape_after"]),
        ]
        for q in rec["fit_quality"]
    ]
    used = _rows(rec["rows_used"], f"{rec['hardware']} {rec['precision']}")
    title = f"fit quality on the {used}: before ({rec['starting_set']}), after"
    con.print(report.table(title, cols, rows))
    if rec["rows_excluded"]:
        others = ", ".join(
            f"{e['rows']:,} on {e['gpu']} {e['precision']}" for e in rec["rows_excluded"]
        )
        con.print(
            f"rows of other GPUs or precisions, not fitted to {rec['hardware']}"
            f" {rec['precision']}: {others}",
            highlight=False,
        )
    if rec["rows_not_used"]:
        con.print(f"rows not used: {rec['rows_not_used']:,} (e.g. {rec['not_used_example']})")


def _rows(n: int, what: str) -> str:
    """``1 h100-sxm fp8 row``, ``6 h100-sxm fp8 rows``."""
    return f"{n:,} {what} row{'' if n == 1 else 's'}"
