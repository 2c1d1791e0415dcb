"""`infersize validate` and `calibrate`: the performance model against measurements."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, replace
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
from inferencesize.disagg_point import predict_disaggregated
from inferencesize.errors import InfeasibleError, InputError, UsageError
from inferencesize.estimate import Estimator
from inferencesize.io_measurements import (
    GENAI_SOURCE,
    Measurement,
    dedupe,
    marked_duplicates,
    read_measurements,
)
from inferencesize.io_write import check_target, write_atomic
from inferencesize.measured_map import map_measurements
from inferencesize.repeats import repeat_spreads
from inferencesize.study import efficiency_set
from inferencesize.units import PRECISIONS
from inferencesize.validation import (
    STEADY_TOLERANCE,
    Prediction,
    SteadyCheck,
    deployment_kind,
    estimator_chooser,
    not_predicted,
    point_key,
    predict_all,
    steady_checks,
    summary_table,
)

if TYPE_CHECKING:
    from inferencesize.calibration import Worse


def _load_rows(data: list[Path]) -> list[Measurement]:
    return dedupe([m for path in data for m in read_measurements(path)])


def _summary_rows(preds: list[Prediction], by: Any) -> list[dict[str, Any]]:
    return [
        {
            "group": k,
            "n": s.n,
            "median_ape": s.median_ape,
            "p90_ape": s.p90_ape,
            "within_10": s.within_10,
            "within_25": s.within_25,
        }
        for k, s in summary_table(preds, by).items()
    ]


DataOpt = Annotated[
    list[Path],
    typer.Option(
        "--data",
        metavar="FILE",
        help="Measurements CSV (columns as data/calibration/README.md) or GenAI-Perf export"
        " (profile_export_genai_perf.json/.csv); repeatable.",
    ),
]


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
    fixed = efficiency_set(catalog, engine, calibration) if (engine or calibration) else None
    rows = _load_rows(data)
    unique, duplicates = marked_duplicates(rows)
    mapped, skipped = map_measurements(catalog, unique)
    skipped = duplicates + skipped
    pick = estimator_chooser(catalog, fixed)
    t0 = time.perf_counter()
    with Progress(f"predicting {len(mapped):,} measured points"):
        aggregated = [r for r in mapped if r.pools is None]
        preds = predict_all(pick, aggregated)
        disagg, disagg_problems = predict_disaggregated(
            pick, [r for r in mapped if r.pools is not None]
        )
    elapsed = time.perf_counter() - t0
    skipped = skipped + not_predicted(pick, aggregated, preds) + disagg_problems
    preds = preds + disagg
    used = Counter((r.m.engine, r.m.engine_version, pick(r.m).efficiency.id) for r in mapped)
    sets_used = [
        {"engine": e, "engine_version": v, "efficiency": ident, "rows": n}
        for (e, v, ident), n in sorted(used.items())
    ]
    by_metric = _summary_rows(preds, lambda p: p.mapped.m.metric)
    by_source = _summary_rows(preds, lambda p: f"{p.mapped.m.source} · {p.mapped.m.metric}")
    by_deployment = _summary_rows(
        preds, lambda p: f"{deployment_kind(p.mapped)} · {p.mapped.m.metric}"
    )
    checks = steady_checks(mapped)
    off = [c for c in checks if not c.steady]
    off_points = {c.point for c in off}
    by_metric_steady = _summary_rows(
        [p for p in preds if point_key(p.mapped) not in off_points], lambda p: p.mapped.m.metric
    )
    repeats = [asdict(r) for r in repeat_spreads(rows)]
    unmapped = [
        {
            "row": m.row,
            "source": m.source,
            "model": m.model,
            "gpu": m.gpu,
            "metric": m.metric,
            "reason": why,
        }
        for m, why in skipped
    ]
    by_reason = [
        {"reason": why, "rows": n}
        for why, n in sorted(Counter(why for _, why in skipped).items(), key=lambda x: -x[1])
    ]
    result = {
        "rows": len(rows),
        "predicted": len(preds),
        "unmapped": unmapped,
        "unmapped_by_reason": by_reason,
        "by_metric": by_metric,
        "by_source": by_source,
        "by_deployment": by_deployment,
        "efficiency_sets": sets_used,
        "steady_state": {
            "checked": len(checks),
            "tolerance": STEADY_TOLERANCE,
            "off": [_off_point(c) for c in off],
            "by_metric": by_metric_steady,
        },
        "repeat_runs": repeats,
        "seconds": elapsed,
    }
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
            f"Little's law: {len(off)} of {len(checks)} measured serving points are off steady"
            f" state (clients / (req/s × E2E) = {min(ratios):.3f}–{max(ratios):.3f}, not 1 ±"
            f" {STEADY_TOLERANCE:.0%}): the run ended before its queue settled, while the model"
            " predicts steady state."
        )
        title = "accuracy by metric, steady-state points only"
        out.print(report.table(title, cols, fmt_rows(by_metric_steady)))
    elif checks:
        out.print(f"Little's law: all {len(checks)} measured serving points are in steady state.")
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
        f"{len(rows)} rows read, {len(preds)} predicted in {elapsed:.2f} s, "
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


def _off_point(c: SteadyCheck) -> dict[str, Any]:
    m = c.m
    return {
        "source": m.source,
        "model": m.model,
        "gpu": m.gpu,
        "precision": m.precision,
        "tp": m.tp,
        "isl": m.isl,
        "osl": m.osl,
        "concurrency": c.clients,
        "ratio": c.ratio,
    }


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
        list[Path] | None,
        typer.Option(
            "--data",
            metavar="FILE",
            help="Measurements CSV (columns as data/calibration/README.md) or GenAI-Perf export"
            " (profile_export_genai_perf.json/.csv); repeatable.",
        ),
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
    from inferencesize.calibration import (
        PER_GPU_PARAMS,
        fit,
        on_target,
        precision_class,
        worse_than_start,
    )

    catalog = open_catalog(catalog_dirs)
    base = efficiency_set(catalog, engine, None)
    gpu, _ = catalog.hardware(hardware)
    rows = _load_rows(data)
    fill = {"model": model, "tp": tp, "isl": isl, "osl": osl, "concurrency": concurrency}
    rows, excluded = on_target(
        catalog, [_fill(m, fill, gpu.id, precision) for m in rows], gpu.id, precision
    )
    target = f"{gpu.id} {precision}"
    if not rows and excluded:
        measured = ", ".join(f"{n:,} on {g} {p}" for g, p, n in excluded[:3])
        raise InputError(
            f"{data[0]}: no rows measured on {target} ({measured}); give the --hardware and"
            " --precision the rows were measured on (a blank gpu or precision cell takes them)"
        )
    mapped, skipped = map_measurements(catalog, rows, hardware=hardware, precision=precision)
    # the fit predicts one instance per row: disaggregated rows are listed, not fitted
    skipped += [(r.m, "disaggregated: calibrate fits one instance") for r in mapped if r.pools]
    mapped = [r for r in mapped if r.pools is None]
    if not mapped:
        reasons = sorted({why for _, why in skipped})
        raise InputError(f"{data[0]}: no usable rows ({'; '.join(reasons[:3]) or 'empty'})")
    with Progress(f"fitting {target} to {len(mapped):,} measured points"):
        tier = catalog.kernel_tier(base)
        start = Estimator(base, kernel_tier=tier)
        before = predict_all(lambda _m: start, mapped)
        free = ["step_overhead_s", "layer_overhead_s", "gemm_m_half"] if overheads else []
        result = fit(base, mapped, free, kernel_tier=tier)
    worse = worse_than_start(before, result.predictions)
    written = force or not worse
    fitted = result.efficiency.model_copy(
        update={
            "id": out_file.stem,
            "default": False,
            "source": f"infersize calibrate on {', '.join(str(d) for d in data)} ({len(mapped)} rows;"
            f" {target}); starting from {base.id}",
        }
    )
    if written:
        write_atomic(
            out_file,
            yaml.safe_dump(fitted.model_dump(exclude_none=True), sort_keys=False),
            "--out",
            inputs=inputs,
            overwrite=force,
        )
    entry = next(
        e
        for e in fitted.entries
        if e.gpu == gpu.id and precision_class(e.precision or "") == precision_class(precision)
    )
    b = summary_table(before, lambda p: p.mapped.m.metric)
    a = summary_table(result.predictions, lambda p: p.mapped.m.metric)
    worse_metrics = {w.metric for w in worse}
    quality = [
        {
            "metric": k,
            "n": a[k].n,
            "median_ape_before": b[k].median_ape if k in b else None,
            "median_ape_after": a[k].median_ape,
            "p90_ape_before": b[k].p90_ape if k in b else None,
            "p90_ape_after": a[k].p90_ape,
            "worse": k in worse_metrics,
        }
        for k in a
    ]
    rec: dict[str, Any] = {
        "out": str(out_file),
        "written": written,
        "id": fitted.id,
        "hardware": gpu.id,
        "precision": precision,
        "starting_set": base.id,
        "fitted": {k: getattr(entry, k) for k in PER_GPU_PARAMS},
        "rows_used": len(mapped),
        "rows_excluded": [{"gpu": g, "precision": p, "rows": n} for g, p, n in excluded],
        "rows_not_used": len(skipped),
        "not_used_example": skipped[0][1] if skipped else None,
        "fit_quality": quality,
        "worse": [asdict(w) for w in worse],
    }
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
                f" {_rows(len(mapped), target)}: {what} (--force writes it anyway)"
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


def _fill(m: Measurement, fill: dict[str, Any], gpu: str, precision: str) -> Measurement:
    # A GenAI-Perf export names the served model (a deployment name, not a catalog id) and
    # states no TP: the flags win there. A measurements CSV states each row: flags fill blanks.
    export = m.source == GENAI_SOURCE
    updates: dict[str, Any] = {}
    if (export or not m.model) and fill["model"]:
        updates["model"] = fill["model"]
    if (export or m.tp is None) and fill["tp"]:
        updates["tp"] = fill["tp"]
    if (export or m.isl is None) and fill["isl"]:
        updates["isl"] = float(fill["isl"])
    if (export or m.osl is None) and fill["osl"]:
        updates["osl"] = float(fill["osl"])
    if (export or not m.concurrency) and fill["concurrency"]:
        updates["concurrency"] = str(fill["concurrency"])
    if not m.gpu:
        updates["gpu"] = gpu
    if not m.precision:
        updates["precision"] = precision
    return replace(m, **updates) if updates else m
