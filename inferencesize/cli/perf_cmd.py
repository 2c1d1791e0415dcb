"""`infersize estimate`: the performance model at operating points."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.cli.common import (
    check_format,
    emit_data,
    finite,
    format_option,
    open_catalog,
)
from inferencesize.cli.disagg_estimate import pool_option, show_disaggregated
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
from inferencesize.cli.points_batch import POINTS_FORMATS, run_points
from inferencesize.cli.stream import ShardOption, WorkersOption
from inferencesize.errors import UsageError
from inferencesize.estimate import RATE_PERCENTILES
from inferencesize.point_batch import POINT_COLUMNS
from inferencesize.point_estimate import PointFlags, estimate_disaggregated, estimate_point
from inferencesize.render.plan_table import techniques_text
from inferencesize.specs.scenario import MAX_CV
from inferencesize.study import resolve_point
from inferencesize.vocabulary import Batching, gaps_words


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
            f" means and {'/'.join(RATE_PERCENTILES)} of TTFT, ITL and E2E.",
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

    --points reads the file and writes its rows in blocks, in memory that does not grow with
    the file; --shard and --workers need csv or jsonl (json and yaml are one document).
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
        run_points(catalog, est, points, fmt, shard, workers, flags.get("catalog_dirs"))
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
        finite(cv, "--cv", 0.0, MAX_CV)
    point = PointFlags(model, hardware, precision, kv_precision, engine, calibration, techniques)
    if disaggregated:
        _disaggregated(ctx, prefill, decode)
        pools = pool_option(prefill or "", "--prefill"), pool_option(decode or "", "--decode")
        result = estimate_disaggregated(catalog, point, *pools, isl, osl, concurrency)
        show_disaggregated(result, fmt)
        return
    gaps_cv = 1.0 if cv is None else cv
    found = estimate_point(
        catalog, point, (tp, pp, ep, dp), isl, osl, concurrency, batching, rate, gaps_cv
    )
    cand, rec = found.candidate, found.record
    if rate is not None:
        title = (
            f"{cand.model.id} on {cand.label()} · ISL {isl} · OSL {osl} · inflight · "
            f"{gaps_words(gaps_cv)} {rate:g} req/s"
        )
        pairs = _rate_pairs(rec)
    else:
        title = (
            f"{cand.model.id} on {cand.label()} · ISL {isl} · OSL {osl} · {batching} "
            f"{'batch' if batching == 'static' else 'concurrency'} {concurrency}"
        )
        pairs = _human_pairs(rec)
    emit_data(fmt, rec, table=lambda out: out.print(report.key_value_table(title, pairs)))


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


def _banded(rec: dict[str, Any], metric: str, digits: int = 1) -> str:
    """A mean with its 80 % band: ``12.1 ms, 80 % band 10.4–14.5``."""
    value = rec[f"{metric}_ms"]
    if value is None:
        return "—"
    band = (rec.get("error_band") or {}).get(f"{metric}_ms")
    text = f"{value:,.{digits}f} ms"
    if band is None:
        return text
    return f"{text}, 80 % band {band['low']:,.{digits}f}–{band['high']:,.{digits}f}"


def _human_pairs(rec: dict[str, Any]) -> list[tuple[str, Any]]:
    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:,.1f} ms"

    pairs: list[tuple[str, Any]] = [
        ("feasible", "yes" if rec["feasible"] else f"no: {rec['reason']}"),
        ("GPUs per instance", rec["gpus"]),
        ("TTFT (mean)", _banded(rec, "ttft")),
        ("ITL (mean)", _banded(rec, "itl")),
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
        for stat in RATE_PERCENTILES:
            v = rec[f"{name}_ms_{stat}"]
            parts.append(f"{stat} " + ("—" if v is None else f"{v:,.{digits}f}"))
        band = (rec.get("error_band") or {}).get(f"{name}_ms")
        if band is not None:
            parts.append(
                f"80 % band of the mean {band['low']:,.{digits}f}–{band['high']:,.{digits}f}"
            )
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


def _given(ctx: typer.Context, name: str) -> bool:
    """The option was set on the command line or in the environment (not left at default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT")
