"""`infersize estimate`: the performance model at operating points."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import (
    check_format,
    emit_data,
    format_option,
    open_catalog,
    stdout,
)
from inferencesize.cli.options import (
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
    point_int,
    read_points,
)
from inferencesize.render.plan_table import techniques_text
from inferencesize.study import candidate, resolve_point
from inferencesize.units import Batching

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
