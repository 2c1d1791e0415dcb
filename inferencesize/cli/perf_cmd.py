"""`infersize estimate`: the performance model at operating points."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import (
    check_format,
    emit_data,
    finite,
    format_option,
    open_catalog,
    stdout,
)
from inferencesize.cli.disagg_estimate import estimate_disaggregated
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
from inferencesize.cli.stream import (
    ShardOption,
    WorkersOption,
    in_blocks,
    parse_shard,
    shard_points,
    write_rows,
)
from inferencesize.errors import InputError, UnknownIdError, UsageError
from inferencesize.estimate import (
    RATE_PERCENTILES,
    RATE_RECORD_KEYS,
    Candidate,
    Estimator,
    longest_gaps,
    operating_points,
    rate_record,
    record,
)
from inferencesize.io_measurements import on_servers, point_float, point_int, read_points
from inferencesize.render.plan_table import techniques_text
from inferencesize.specs.common import MAX_RPS
from inferencesize.study import candidate, resolve_point
from inferencesize.units import Batching

#: Largest coefficient of variation of inter-arrival gaps (the scenario's ``cv`` ceiling).
MAX_CV = 10.0

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
    "rate",
    "cv",
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
    "trust",
)
#: Every key of an estimate record (``estimate.record``).
RECORD_KEYS = (*POINT_COLUMNS[:6], "dp", *POINT_COLUMNS[6:11], *RESULT_KEYS, "techniques")
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
            min=1,
            metavar="N",
            help="Closed-loop clients (inflight) or batch size (static); default 1.",
        ),
    ] = 1,
    rate: Annotated[
        float | None,
        typer.Option(
            metavar="RPS",
            help="Open loop instead: requests arrive at RPS per second (Poisson unless --cv);"
            " means and p50/p90/p95/p99 of TTFT, ITL and E2E.",
        ),
    ] = None,
    cv: Annotated[
        float | None,
        typer.Option(
            metavar="CV",
            help="With --rate: coefficient of variation of the gaps between arrivals (1 Poisson,"
            " near 0 a steady rate, > 1 burstier gamma arrivals).",
        ),
    ] = None,
    kv_precision: PointKvPrecisionOpt = None,
    dp: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Attention data parallelism (MoE): N groups of TP GPUs share one instance"
            " (dp × tp × pp GPUs), each with its own sequences; experts spread over all.",
        ),
    ] = 1,
    prefill: Annotated[
        str | None,
        typer.Option(
            metavar="SPLIT",
            help="Disaggregated serving, with --decode: the prefill pool, tpN[ppN][dpN][epN][xW]"
            " (W instances; e.g. tp4x1).",
        ),
    ] = None,
    decode: Annotated[
        str | None,
        typer.Option(
            metavar="SPLIT",
            help="Disaggregated serving, with --prefill: the decode pool (e.g. tp8x4,"
            " tp1dp8ep8x2).",
        ),
    ] = None,
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
    shard: ShardOption = None,
    workers: WorkersOption = 1,
    **flags: Any,
) -> None:
    """Predict latency, throughput and memory of one instance at one operating point.

    Closed loop (--concurrency N, the GenAI-Perf benchmark): TTFT, ITL and E2E (mean),
    requests/s and output tokens/s, the KV-cache capacity and the memory per GPU, with what
    bounds prefill and decode. Open loop (--rate R, requests arriving at a rate; --cv for
    burstier gaps): the mean and p50/p90/p95/p99 of TTFT, ITL and E2E, the utilisation (rate /
    the sustainable rate) and whether the instance keeps up (stable: false past capacity, with
    no latencies).

    TTFT: arrival to first token (queueing and prefill included). ITL: the mean gap between a
    request's tokens after the first. TPOT = (E2E − TTFT) / (OSL − 1), the same mean per
    request. E2E = TTFT + (OSL − 1) · ITL.

    Batch mode: --points FILE, a CSV with the columns model, hardware, precision, tp, pp, ep,
    dp, isl, osl, concurrency or rate (cv with rate), batching, kv_precision (model, hardware, isl,
    osl and one of concurrency or rate per row required; the others take the flags'
    defaults); one output row per input row.

    Examples:
      infersize estimate --model llama-3-8b --hardware h100-sxm --isl 2000 --osl 200 --concurrency 25
      infersize estimate --model llama-3-8b --hardware h100-sxm --isl 2000 --osl 200 --rate 8
      infersize estimate --model llama-3.1-70b --hardware h100-sxm --tp 4 --draft llama-3.1-8b --draft-tokens 4 --acceptance 0.7
      infersize estimate --model deepseek-r1 --hardware b200 --tp 1 --dp 8 --ep 8 --concurrency 64
      infersize estimate --model deepseek-r1 --hardware h200-sxm --prefill tp8x1 --decode tp8x3 --concurrency 64
      infersize estimate --points points.csv --format csv
      infersize estimate --points points.csv --shard 2/4 --workers 2

    --points with csv or jsonl streams rows in blocks (--shard and --workers need one of
    them); json and yaml are one document, built whole.
    """
    catalog = open_catalog(flags.get("catalog_dirs"))
    engine, calibration = flags.get("engine"), flags.get("calibration")
    techniques = techniques_given(flags)
    disaggregated = prefill is not None or decode is not None
    if points is not None and (disaggregated or dp != 1):
        raise UsageError("--dp, --prefill and --decode describe one point: drop --points")
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
        fmt = "csv" if fmt == "table" else fmt
        _batch(catalog, est, points, fmt, shard, workers, flags.get("catalog_dirs"))
        return
    check_format(fmt, report.FORMATS)
    if model is None or hardware is None:
        raise UsageError("estimate needs --model and --hardware (or --points FILE)")
    if rate is not None and _given(ctx, "concurrency"):
        raise UsageError(
            "--rate and --concurrency are exclusive: a rate is open-loop traffic, concurrency"
            " closed-loop clients; give one"
        )
    if cv is not None and rate is None:
        raise UsageError("--cv describes arrivals at a rate: use it with --rate")
    if rate is not None and batching != Batching.INFLIGHT:
        raise UsageError("--rate models in-flight batching: drop --batching static")
    if cv is not None:
        finite(cv, "--cv", 0.0, MAX_CV, above=True)
    if disaggregated:
        _disaggregated(ctx, prefill, decode)
        estimate_disaggregated(
            catalog,
            model=model,
            hardware=hardware,
            precision=precision,
            kv_precision=kv_precision,
            prefill=prefill or "",
            decode=decode or "",
            isl=isl,
            osl=osl,
            concurrency=concurrency,
            flags=flags,
            techniques=techniques,
            fmt=fmt,
        )
        return
    cand = candidate(catalog, model, hardware, precision, kv_precision, tp, pp, ep)
    if dp != 1:
        cand = replace(cand, par=replace(cand.par, dp=dp))
    cand = on_servers(catalog, cand)  # a bare GPU wider than a server: its DGX/HGX servers
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
    if rate is not None:
        arrivals = "Poisson" if cv is None or cv == 1.0 else f"gamma (cv {cv:g})"
        rec = rate_record(res, isl, osl, rate, 1.0 if cv is None else cv, eset.engine)
        title = (
            f"{cand.model.id} on {cand.label()} · ISL {isl} · OSL {osl} · inflight · "
            f"{arrivals} {rate:g} req/s"
        )
        emit_data(
            fmt,
            rec,
            table=lambda out: out.print(report.key_value_table(title, _rate_pairs(rec))),
        )
        return
    op = est.point(res, isl, osl, concurrency, batching)
    rec = record(res, isl, osl, concurrency, batching, op, eset.engine)
    title = (
        f"{cand.model.id} on {cand.label()} · ISL {isl} · OSL {osl} · {batching} "
        f"{'batch' if batching == 'static' else 'concurrency'} {concurrency}"
    )
    emit_data(
        fmt, rec, table=lambda out: out.print(report.key_value_table(title, _human_pairs(rec)))
    )


def _disaggregated(ctx: typer.Context, prefill: str | None, decode: str | None) -> None:
    """Usage checks of ``--prefill`` / ``--decode``: both, closed-loop in-flight serving, the
    splits in the pools (not --tp/--pp/--ep/--dp)."""
    if prefill is None or decode is None:
        raise UsageError("disaggregated serving needs both --prefill and --decode")
    if _given(ctx, "rate") or _given(ctx, "batching"):
        raise UsageError(
            "--prefill/--decode model closed-loop in-flight serving (--concurrency): drop"
            " --rate and --batching"
        )
    given = [f"--{n}" for n in ("tp", "pp", "ep", "dp") if _given(ctx, n)]
    if given:
        raise UsageError(
            f"--prefill/--decode state each pool's split: drop {', '.join(given)} (e.g."
            " --decode tp1dp8ep8x2)"
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
        ("efficiency", f"{rec['efficiency']} (trust: {rec['trust']})"),
    ]
    return pairs


def _rate_pairs(rec: dict[str, Any]) -> list[tuple[str, Any]]:
    """The human table of an open-loop point (``estimate --rate``)."""

    def line(name: str, digits: int) -> str:
        mean = rec[f"{name}_ms"]
        if mean is None:
            return "—"
        parts = [f"mean {mean:,.{digits}f}"]
        for q in RATE_PERCENTILES:
            v = rec[f"{name}_ms_p{q}"]
            parts.append(f"p{q} " + ("—" if v is None else f"{v:,.{digits}f}"))
        return " · ".join(parts)

    if not rec["feasible"]:
        return [("feasible", f"no: {rec['reason']}"), ("engine", rec["engine"])]
    top = rec["max_requests_per_s"]
    if rec["stable"]:
        state = f"yes: utilisation {rec['utilisation']:.0%} of {top:,.3f} req/s sustainable"
    else:
        state = (
            f"no: {rec['rate_rps']:,.3f} req/s ≥ the sustainable {top:,.3f} req/s; the queue"
            " grows without bound (no latencies)"
        )
    pairs: list[tuple[str, Any]] = [
        ("GPUs per instance", rec["gpus"]),
        ("stable", state),
        ("TTFT ms", line("ttft", 1)),
        ("ITL ms", line("itl", 2)),
        ("E2E ms", line("e2e", 0)),
    ]
    if rec["stable"]:
        pairs += [
            ("requests in flight (mean)", f"{rec['in_flight']:,.1f} of {rec['max_concurrency']}"),
            (
                "throughput",
                f"{rec['requests_per_s']:,.3f} req/s · "
                f"{rec['output_tokens_per_s']:,.0f} output tok/s",
            ),
        ]
    if rec["techniques"]:
        pairs.append(("techniques", techniques_text(rec["techniques"])))
    pairs += [
        ("precision / KV", f"{rec['precision']} / {rec['kv_precision']}"),
        ("engine", rec["engine"]),
        ("efficiency", rec["efficiency"]),
    ]
    return pairs


def _batch(
    catalog: Catalog,
    est: Estimator,
    path: Path,
    fmt: str,
    shard: str | None,
    workers: int,
    catalog_dirs: Any = None,
) -> None:
    header, rows = read_points(path)  # every read, decoding and CSV error names the file
    part, parts = parse_shard(shard)
    if (parts > 1 or workers > 1) and fmt not in ("csv", "jsonl"):
        raise UsageError("--shard and --workers stream csv or jsonl (-f csv, -f jsonl)")
    out = stdout()
    if fmt in ("json", "yaml"):  # one document: built whole
        emit_data(fmt, _records(catalog, est, rows, 0))
        return
    columns = _columns(header)
    chosen = shard_points(len(rows), part, parts)
    fh = out.file
    if fmt == "csv":
        write_rows(fh, report.csv_text([], columns) if part == 1 else "")
    if workers == 1:
        for start in range(chosen.start, chosen.stop, POINTS_BLOCK):
            block = range(start, min(start + POINTS_BLOCK, chosen.stop))
            write_rows(
                fh,
                _rendered(
                    fmt, columns, _records(catalog, est, rows[block.start : block.stop], start)
                ),
            )
        return
    job = (catalog_dirs, path, fmt, columns, est)
    size = min(POINTS_BLOCK, max(256, -(-len(chosen) // (4 * workers))))
    for _, text in in_blocks(chosen, size, workers, _worker_block, _start_worker, job):
        write_rows(fh, text)


#: Rows of ``estimate --points`` computed and written together.
POINTS_BLOCK = 4096

#: One worker process's points (``--workers``): set by :func:`_start_worker`.
_WORKER: dict[str, Any] = {}


def _start_worker(
    catalog_dirs: Any, path: Path, fmt: str, columns: list[str], est: Estimator
) -> None:
    rows = read_points(path)[1]
    catalog = open_catalog(catalog_dirs)
    _WORKER.update(catalog=catalog, rows=rows, fmt=fmt, columns=columns, est=est)


def _worker_block(block: range) -> str:
    """The rows ``block`` of the points file, rendered (in a worker process)."""
    w = _WORKER
    recs = _records(w["catalog"], w["est"], w["rows"][block.start : block.stop], block.start)
    return _rendered(w["fmt"], w["columns"], recs)


def _columns(header: list[str]) -> list[str]:
    template = _template("rate" in header)
    template["memory"] = _gib_keys(template["memory"])
    return list(header) + [c for c in report.flatten(template) if c not in header]


def _rendered(fmt: str, columns: list[str], records: list[dict[str, Any]]) -> str:
    """Complete CSV (no header) or JSONL rows of ``records``."""
    if fmt == "jsonl":
        return report.to_jsonl(records) if records else ""
    # CSV cells carry no nesting: the unit goes into the memory column names
    flat = [{**r, "memory": _gib_keys(r.get("memory"))} for r in records]
    return report.csv_text(flat, columns)[len(report.csv_text([], columns)) :]


def _records(
    catalog: Catalog, est: Estimator, rows: list[dict[str, str]], first: int
) -> list[dict[str, Any]]:
    """The records of ``rows``, the rows ``first``.. of the file (row numbers in errors are
    the file's: the header is line 1)."""
    eset_engine = est.efficiency.engine
    records: list[dict[str, Any] | None] = [None] * len(rows)
    groups: dict[tuple[Any, ...], list[tuple[int, int, int, int]]] = defaultdict(list)
    cands: dict[tuple[Any, ...], Candidate] = {}
    for i, row in enumerate(rows):
        try:
            key, cand, isl, osl, conc, batching = _parse_point(catalog, row, first + i + 2)
            if conc is None:  # an open-loop row: rate (and cv), one point at a time
                rate, cv = _rate_of(row, first + i + 2, batching)
                res = est.resolve(cand, isl + osl)
                rec = rate_record(res, isl, osl, rate, cv, eset_engine)
                records[i] = {**rows[i], **rec, "rate": rate}
                continue
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
    return [r for r in records if r is not None]


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


def _template(rates: bool) -> dict[str, Any]:
    """The columns of a batch CSV after the input's (``rates``: open-loop keys too)."""
    mem = dict.fromkeys(("capacity", "weights", "kv_cache", "activations", "reserve", "free"))
    out = {
        **dict.fromkeys(c for c in POINT_COLUMNS if c not in ("rate", "cv")),
        **dict.fromkeys(RESULT_KEYS),
        "memory": mem,
        "bound": {"prefill": None, "decode": None},
    }
    if rates:
        out.update(dict.fromkeys(k for k in RATE_RECORD_KEYS if k not in out))
    return out


def _rate_of(row: dict[str, str], line: int, batching: Batching) -> tuple[float, float]:
    """(rate requests/s, cv) of an open-loop points row; an InputError naming the row else."""
    if batching != Batching.INFLIGHT:
        raise InputError(f"row {line}: rate: the open-loop model is in-flight batching only")
    return point_float(row, "rate", line, MAX_RPS), point_float(row, "cv", line, MAX_CV, 1.0)


def _parse_point(
    catalog: Catalog, row: dict[str, str], line: int
) -> tuple[tuple[Any, ...], Candidate, int, int, int | None, Any]:
    """A row's candidate, lengths and load: its concurrency, or None for an open-loop row
    (a rate instead); exactly one of the two."""

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
    dp = num("dp", 1)  # attention data parallelism (optional column)
    if dp != 1:
        cand = replace(cand, par=replace(cand.par, dp=dp))
    cand = on_servers(catalog, cand)
    key = (cand.model.id, cand.hardware_id, cand.precision, cand.kv_precision, cand.par, batching)
    has_conc = bool((row.get("concurrency") or "").strip())
    has_rate = bool((row.get("rate") or "").strip())
    if has_conc == has_rate:
        raise InputError(
            f"row {line}: give exactly one of concurrency (closed-loop clients) or rate"
            " (open-loop requests/s)" + (" (both given)" if has_conc else " (neither given)")
        )
    if has_conc and (row.get("cv") or "").strip():
        raise InputError(f"row {line}: cv: applies to a rate, not to concurrency")
    conc = num("concurrency") if has_conc else None
    return key, cand, num("isl"), num("osl"), conc, batching
