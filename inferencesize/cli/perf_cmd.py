"""`infersize estimate`, `validate`, `calibrate`: the performance model at operating points."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from inferencesize import report
from inferencesize.catalog import Catalog
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
    EpOpt,
    IslOpt,
    OslOpt,
    PointHardwareOpt,
    PointKvPrecisionOpt,
    PointModelOpt,
    PointPrecisionOpt,
    PpOpt,
    TpOpt,
    engine_options,
    technique_options,
    techniques_given,
    with_options,
)
from inferencesize.errors import InputError, UnknownIdError, UsageError
from inferencesize.estimate import Candidate, Estimator, longest_gaps, operating_points, record
from inferencesize.io_measurements import (
    GENAI_SOURCE,
    Measurement,
    dedupe,
    map_measurements,
    point_int,
    read_measurements,
    read_points,
)
from inferencesize.io_write import check_target, write_atomic
from inferencesize.render.plan_table import techniques_text
from inferencesize.repeats import repeat_spreads
from inferencesize.study import candidate, efficiency_set, resolve_point
from inferencesize.units import PRECISIONS, Batching
from inferencesize.validation import (
    STEADY_TOLERANCE,
    Prediction,
    SteadyCheck,
    estimator_chooser,
    point_key,
    predict_all,
    steady_checks,
    summary_table,
)

POINT_COLUMNS = (
    "model",
    "hardware",
    "precision",
    "tp",
    "pp",
    "ep",
    "isl",
    "osl",
    "concurrency",
    "batching",
    "kv_precision",
)
RESULT_KEYS = (
    "gpus",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "itl_max_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "max_concurrency",
    "memory",
    "bound",
    "feasible",
    "reason",
    "engine",
    "efficiency",
)
#: Every key of an estimate record (``estimate.record``).
RECORD_KEYS = (*POINT_COLUMNS[:6], "dp", *POINT_COLUMNS[6:], *RESULT_KEYS, "techniques")
#: Formats of ``estimate --points``: one record per input row.
POINTS_FORMATS = ("csv", "jsonl", "json", "yaml")


@with_options(technique_options, engine_options)
def estimate(
    ctx: typer.Context,
    model: PointModelOpt = None,
    hardware: PointHardwareOpt = None,
    precision: PointPrecisionOpt = "fp8",
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    isl: IslOpt = 2000,
    osl: OslOpt = 200,
    concurrency: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help="Closed-loop clients (inflight) or batch size (static)."
        ),
    ] = 1,
    kv_precision: PointKvPrecisionOpt = None,
    batching: Annotated[Batching, typer.Option(help="Batching of the engine.")] = Batching.INFLIGHT,
    points: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="CSV of operating points (batch mode), one per row."),
    ] = None,
    fmt: Annotated[
        str,
        format_option(
            (*report.FORMATS, "jsonl"),
            "One point: table, json, yaml or csv. --points: csv (default), jsonl, json or yaml.",
        ),
    ] = "table",
    **flags: Any,
) -> None:
    """Predict latency, throughput and memory of one instance at one operating point.

    TTFT, ITL and E2E (mean), requests/s and output tokens/s, the KV-cache capacity and the
    memory per GPU, with what bounds prefill and decode.

    Batch mode: --points FILE, a CSV with the columns model, hardware, precision, tp, pp, ep,
    isl, osl, concurrency, batching, kv_precision (model, hardware, isl, osl and concurrency
    required; the others take the flags' defaults); one output row per input row.

    Examples:
      infersize estimate --model llama-3-8b --hardware h100-sxm --isl 2000 --osl 200 --concurrency 25
      infersize estimate --model llama-3.1-70b --hardware h100-sxm --tp 4 --draft llama-3.1-8b --draft-tokens 4 --acceptance 0.7
      infersize estimate --points points.csv --format csv
    """
    catalog = open_catalog(flags.get("catalog_dirs"))
    engine, calibration = flags.get("engine"), flags.get("calibration")
    techniques = techniques_given(flags)
    if points is not None:
        given = ["--" + name.replace("_", "-") for name in POINT_COLUMNS if _given(ctx, name)]
        if given:
            raise UsageError(
                f"--points takes each operating point from the file: drop {', '.join(given)}"
                " and give it as a column (a missing column takes the default)"
            )
        if flags.get("draft") is not None:
            raise UsageError("--draft needs one target model: use it without --points")
        est = resolve_point(
            catalog, engine=engine, calibration=calibration, techniques=techniques
        ).estimator
        check_format(fmt if fmt != "table" else "csv", POINTS_FORMATS)
        _batch(catalog, est, points, "csv" if fmt == "table" else fmt)
        return
    check_format(fmt, report.FORMATS)
    if model is None or hardware is None:
        raise UsageError("estimate needs --model and --hardware (or --points FILE)")
    cand = candidate(catalog, model, hardware, precision, kv_precision, tp, pp, ep)
    point = resolve_point(
        catalog,
        engine=engine,
        calibration=calibration,
        techniques=techniques,
        target=cand.model,
        isl=isl,
    )
    est, eset = point.estimator, point.efficiency
    res = est.resolve(cand, isl + osl)
    op = est.point(res, isl, osl, concurrency, batching)
    rec = record(res, isl, osl, concurrency, batching, op, eset.engine)
    title = (
        f"{cand.model.id} on {cand.label()} · ISL {isl} · OSL {osl} · {batching} "
        f"{'batch' if batching == 'static' else 'concurrency'} {concurrency}"
    )
    emit_data(
        fmt, rec, table=lambda out: out.print(report.key_value_table(title, _human_pairs(rec)))
    )


def _human_pairs(rec: dict[str, Any]) -> list[tuple[str, Any]]:
    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:,.1f} ms"

    pairs: list[tuple[str, Any]] = [
        ("feasible", "yes" if rec["feasible"] else f"no: {rec['reason']}"),
        ("GPUs per instance", rec["gpus"]),
        ("TTFT (mean)", ms(rec["ttft_ms"])),
        ("ITL (mean)", ms(rec["itl_ms"])),
        ("E2E (mean)", ms(rec["e2e_ms"])),
        ("longest token gap", ms(rec["itl_max_ms"])),
    ]
    if rec["requests_per_s"] is not None:
        pairs += [
            ("requests/s per instance", f"{rec['requests_per_s']:,.3f}"),
            ("output tokens/s per instance", f"{rec['output_tokens_per_s']:,.0f}"),
        ]
    if rec["max_concurrency"] is not None:
        pairs.append(("max concurrent sequences (KV)", rec["max_concurrency"]))
    if rec["memory"]:
        m = rec["memory"]
        pairs.append(
            (
                "memory per GPU (GiB)",
                f"weights {m['weights']:.1f} · KV {m['kv_cache']:.1f} · activations "
                f"{m['activations']:.1f} · reserve {m['reserve']:.1f} · free {m['free']:.1f}"
                f" of {m['capacity']:.1f}",
            )
        )
    if rec["bound"]:
        pairs.append(
            ("bound", f"prefill {rec['bound']['prefill']}, decode {rec['bound']['decode']}")
        )
    if rec["techniques"]:
        pairs.append(("techniques", techniques_text(rec["techniques"])))
    pairs += [
        ("precision / KV", f"{rec['precision']} / {rec['kv_precision']}"),
        ("engine", rec["engine"]),
        ("efficiency", rec["efficiency"]),
    ]
    return pairs


def _batch(catalog: Catalog, est: Estimator, path: Path, fmt: str) -> None:
    header, rows = read_points(path)  # every read, decoding and CSV error names the file
    records: list[dict[str, Any] | None] = [None] * len(rows)
    groups: dict[tuple[Any, ...], list[tuple[int, int, int, int]]] = defaultdict(list)
    cands: dict[tuple[Any, ...], Candidate] = {}
    for i, row in enumerate(rows):
        try:
            key, cand, isl, osl, conc, batching = _parse_point(catalog, row, i + 2)
        except (InputError, UnknownIdError, ValueError) as err:
            # the same keys as a computed row: the input as given (numbers as numbers)
            echoed = {k: _number_or_text(v) for k, v in row.items()}
            records[i] = {
                **echoed,
                **dict.fromkeys(k for k in RECORD_KEYS if k not in echoed),
                "feasible": False,
                "reason": str(err),
            }
            continue
        cands[key] = cand
        groups[key].append((i, isl, osl, conc))
    for key, items in groups.items():
        cand, batching = cands[key], key[-1]
        resolved = [est.resolve(cand, isl + osl) for _, isl, osl, _ in items]
        ok = [(it, r) for it, r in zip(items, resolved, strict=True) if r.reason is None]
        for (i, isl, osl, conc), r in zip(items, resolved, strict=True):
            if r.reason is not None:
                records[i] = {
                    **rows[i],
                    **record(r, isl, osl, conc, batching, None, est.efficiency.engine),
                }
        if not ok:
            continue
        ops = operating_points(
            ok[0][1],
            [it[1] for it, _ in ok],
            [it[2] for it, _ in ok],
            [it[3] for it, _ in ok],
            [r.max_concurrency for _, r in ok],
            batching,
        )
        gaps = longest_gaps(
            ok[0][1], [it[1] for it, _ in ok], [it[2] for it, _ in ok], ops, batching
        )
        for ((i, isl, osl, conc), r), op, gap in zip(ok, ops, gaps, strict=True):
            records[i] = {
                **rows[i],
                **record(r, isl, osl, conc, batching, op, est.efficiency.engine, gap),
            }
    final = [r for r in records if r is not None]
    out = stdout()
    if fmt == "jsonl":
        report.emit(out, report.to_jsonl(final))
        return
    if fmt in ("json", "yaml"):
        emit_data(fmt, final)
        return
    # CSV cells carry no nesting: the unit goes into the memory column names
    flat = [{**r, "memory": _gib_keys(r.get("memory"))} for r in final]
    template = _template()
    template["memory"] = _gib_keys(template["memory"])
    columns = list(header) + [c for c in report.flatten(template) if c not in header]
    report.emit(out, report.csv_text(flat, columns))


def _gib_keys(memory: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if memory is None else {f"{k}_gib": v for k, v in memory.items()}


def _given(ctx: typer.Context, name: str) -> bool:
    """The option was set on the command line or in the environment (not left at default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT")


def _number_or_text(text: str | None) -> Any:
    """A cell echoed into JSON: 2000 and 0.5 as numbers, anything else as given."""
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value


def _template() -> dict[str, Any]:
    mem = dict.fromkeys(("capacity", "weights", "kv_cache", "activations", "reserve", "free"))
    return {
        **dict.fromkeys(POINT_COLUMNS),
        **dict.fromkeys(RESULT_KEYS),
        "memory": mem,
        "bound": {"prefill": None, "decode": None},
    }


def _parse_point(
    catalog: Catalog, row: dict[str, str], line: int
) -> tuple[tuple[Any, ...], Candidate, int, int, int, Any]:
    def num(name: str, default: int | None = None) -> int:
        return point_int(row, name, line, default)  # finite, >= 1, under the column's ceiling

    text = (row.get("batching") or Batching.INFLIGHT).strip()
    if text not in tuple(Batching):
        raise InputError(f"row {line}: batching: '{text}' is not inflight or static")
    batching = Batching(text)
    precision = (row.get("precision") or "fp8").strip()
    kv = (row.get("kv_precision") or "").strip() or None
    cand = candidate(
        catalog,
        row.get("model", ""),
        row.get("hardware", ""),
        precision,
        kv,
        num("tp", 1),
        num("pp", 1),
        num("ep", 1),
    )
    key = (cand.model.id, cand.hardware_id, cand.precision, cand.kv_precision, cand.par, batching)
    return key, cand, num("isl"), num("osl"), num("concurrency"), batching


# ---------------------------------------------------------------------------------------------


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
    (unless --engine or --calibration fixes one). Rows that cannot be mapped are counted and
    listed, never dropped silently. Also checks each serving point against Little's law, and
    shows how far points measured more than once differ between runs (the data's own floor).
    CSV: one row per accuracy group (table: by_metric, by_source, steady_by_metric).

    Examples:
      infersize validate --data measurements.csv
      infersize validate --data measurements.csv --engine nim-2024 --format json
    """
    check_format(fmt, report.FORMATS)
    catalog = open_catalog(catalog_dirs)
    fixed = efficiency_set(catalog, engine, calibration) if (engine or calibration) else None
    rows = _load_rows(data)
    mapped, skipped = map_measurements(catalog, rows)
    pick = estimator_chooser(catalog, fixed)
    t0 = time.perf_counter()
    with Progress(f"predicting {len(mapped):,} measured points"):
        preds = predict_all(pick, mapped)
    elapsed = time.perf_counter() - t0
    used = Counter((r.m.engine, r.m.engine_version, pick(r.m).efficiency.id) for r in mapped)
    sets_used = [
        {"engine": e, "engine_version": v, "efficiency": ident, "rows": n}
        for (e, v, ident), n in sorted(used.items())
    ]
    by_metric = _summary_rows(preds, lambda p: p.mapped.m.metric)
    by_source = _summary_rows(preds, lambda p: f"{p.mapped.m.source} · {p.mapped.m.metric}")
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
    result = {
        "rows": len(rows),
        "predicted": len(preds),
        "unmapped": unmapped,
        "by_metric": by_metric,
        "by_source": by_source,
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
    for u in unmapped[:20]:
        out.print(f"  row {u['row']} ({u['source']}, {u['model']}, {u['metric']}): {u['reason']}")


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
    data: DataOpt,
    hardware: Annotated[
        str, typer.Option(metavar="ID", help="GPU or system id the data was measured on.")
    ],
    precision: Annotated[
        str, typer.Option(metavar="[" + "|".join(PRECISIONS) + "]", help="Precision of the runs.")
    ],
    out_file: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Where to write the fitted set (YAML); an existing file only with --force.",
        ),
    ],
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
        bool, typer.Option("--force", help="Replace --out if it exists (atomically).")
    ] = False,
    fmt: Annotated[str, format_option(report.FORMATS)] = "table",
    engine: EngineOpt = None,
    catalog_dirs: CatalogOpt = None,
) -> None:
    """Fit efficiency parameters to your measurements (compute, memory, overheads).

    Writes the fitted efficiency set to --out (an existing file only with --force; never
    over a --data file); use it with
    --calibration FILE on estimate, plan and the other commands. Prints the fitted values and
    the error before and after, per metric (CSV: one row per metric).

    Examples:
      infersize calibrate --data my-runs.csv --hardware h100-sxm --precision fp8 --out calibration.yaml
      infersize estimate --model llama-3-8b --hardware h100-sxm --calibration calibration.yaml
    """
    check_format(fmt, report.FORMATS)
    inputs = input_files(data=data)
    check_target(out_file, "--out", inputs=inputs, overwrite=force)
    # scipy.optimize is imported here, not at start-up, so every other command stays fast.
    from inferencesize.calibration import PER_GPU_PARAMS, fit, precision_class

    catalog = open_catalog(catalog_dirs)
    base = catalog.efficiency_set(engine)
    gpu, _ = catalog.hardware(hardware)
    rows = _load_rows(data)
    fill = {"model": model, "tp": tp, "isl": isl, "osl": osl, "concurrency": concurrency}
    rows = [_fill(m, fill, gpu.id, precision) for m in rows]
    mapped, skipped = map_measurements(catalog, rows, hardware=hardware, precision=precision)
    if not mapped:
        reasons = sorted({why for _, why in skipped})
        raise InputError(f"{data[0]}: no usable rows ({'; '.join(reasons[:3]) or 'empty'})")
    with Progress(f"fitting {gpu.id} {precision} to {len(mapped):,} measured points"):
        before = predict_all(lambda _m: Estimator(base), mapped)
        free = ["step_overhead_s", "layer_overhead_s", "gemm_m_half"] if overheads else []
        result = fit(base, mapped, free)
    fitted = result.efficiency.model_copy(
        update={
            "id": out_file.stem,
            "default": False,
            "source": f"infersize calibrate on {', '.join(str(d) for d in data)} ({len(mapped)} rows;"
            f" {gpu.id} {precision}); starting from {base.id}",
        }
    )
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
    quality = [
        {
            "metric": k,
            "n": a[k].n,
            "median_ape_before": b[k].median_ape,
            "median_ape_after": a[k].median_ape,
            "p90_ape_before": b[k].p90_ape,
            "p90_ape_after": a[k].p90_ape,
        }
        for k in a
    ]
    rec: dict[str, Any] = {
        "out": str(out_file),
        "id": fitted.id,
        "hardware": gpu.id,
        "precision": precision,
        "fitted": {k: getattr(entry, k) for k in PER_GPU_PARAMS},
        "rows_used": len(mapped),
        "rows_not_used": len(skipped),
        "not_used_example": skipped[0][1] if skipped else None,
        "fit_quality": quality,
    }
    head = {k: rec[k] for k in ("id", "hardware", "precision")}
    emit_data(
        fmt,
        rec,
        [{**head, "fitted": rec["fitted"], **q} for q in quality],
        lambda con: _calibrate_tables(con, rec),
    )
    typer.echo(f"wrote {out_file}", err=True)


def _calibrate_tables(con: Any, rec: dict[str, Any]) -> None:
    con.print(
        f"fitted {rec['hardware']} {rec['precision']}: "
        + ", ".join(f"{k} {v:.3f}" for k, v in rec["fitted"].items()),
        highlight=False,
    )
    cols = ["metric", "n", "median APE before", "after", "p90 before", "after"]
    rows = [
        [
            q["metric"],
            q["n"],
            f"{q['median_ape_before']:.1%}",
            f"{q['median_ape_after']:.1%}",
            f"{q['p90_ape_before']:.1%}",
            f"{q['p90_ape_after']:.1%}",
        ]
        for q in rec["fit_quality"]
    ]
    con.print(report.table("fit quality", cols, rows))
    if rec["rows_not_used"]:
        con.print(f"{rec['rows_not_used']} rows not used (e.g. {rec['not_used_example']})")


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
