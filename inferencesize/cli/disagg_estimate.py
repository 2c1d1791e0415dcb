"""``estimate --prefill SPLIT --decode SPLIT``: one disaggregated deployment (xPyD) at one
closed-loop operating point (``disagg_point``); the record and its table."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import emit_data
from inferencesize.disagg_point import DisaggPoint, disaggregated_point
from inferencesize.errors import UsageError
from inferencesize.estimate import Candidate
from inferencesize.measured_map import on_servers
from inferencesize.measured_shape import parse_pool
from inferencesize.study import candidate, resolve_point
from inferencesize.units import MS_PER_S
from inferencesize.validation import PoolPoint

#: Keys of the disaggregated estimate record (documented in the README).
DISAGG_RECORD_KEYS = (
    "model",
    "hardware",
    "precision",
    "kv_precision",
    "isl",
    "osl",
    "concurrency",
    "prefill",
    "decode",
    "gpus",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "requests_per_s",
    "output_tokens_per_s_per_decode_gpu",
    "input_tokens_per_s_per_prefill_gpu",
    "tokens_per_s_per_gpu",
    "kv_transfer_ms",
    "kv_link",
    "feasible",
    "reason",
    "engine",
    "efficiency",
)


def pool_option(text: str, flag: str) -> tuple[int, int, int, int, int]:
    """(tp, pp, ep, dp, instances) of a ``--prefill`` / ``--decode`` value; a UsageError
    naming the flag and the notation otherwise."""
    pool = parse_pool(text)
    if pool is None:
        raise UsageError(
            f"{flag}: expected tpN[ppN][dpN][epN][xW] (e.g. tp4x1, tp1dp8ep8x2), got {text!r}"
        )
    p = pool.par
    return p.tp, p.pp, p.ep, p.dp, pool.workers


def estimate_disaggregated(
    catalog: Catalog,
    *,
    model: str,
    hardware: str,
    precision: str,
    kv_precision: str | None,
    prefill: str,
    decode: str,
    isl: int,
    osl: int,
    concurrency: int,
    flags: dict[str, Any],
    techniques: dict[str, Any] | None,
    fmt: str,
) -> None:
    """Resolve both pools, predict the deployment and print its record."""
    pools = []
    for flag, text in (("--prefill", prefill), ("--decode", decode)):
        tp, pp, ep, dp, instances = pool_option(text, flag)
        cand = candidate(catalog, model, hardware, precision, kv_precision, tp, pp, ep)
        cand = replace(cand, par=replace(cand.par, dp=dp))
        pools.append(PoolPoint(on_servers(catalog, cand, spans=True), instances))
    pre, dec = pools
    point = resolve_point(
        catalog,
        engine=flags.get("engine"),
        calibration=flags.get("calibration"),
        techniques=techniques,
        target=pre.candidate.model,
        isl=isl,
    )
    result = disaggregated_point(point.estimator, pre, dec, isl, osl, concurrency)
    used = point.estimator.efficiency_for(pre.candidate.gpu, pre.candidate.precision)
    rec = disagg_record(pre, dec, isl, osl, concurrency, result, used.engine)
    title = (
        f"{pre.candidate.model.id} on {pre.candidate.hardware_id} · prefill {text_of(pre)} ·"
        f" decode {text_of(dec)} · ISL {isl} · OSL {osl} · concurrency {concurrency}"
    )
    emit_data(fmt, rec, table=lambda out: out.print(report.key_value_table(title, _pairs(rec))))


def text_of(pool: PoolPoint) -> str:
    return f"{pool.candidate.par.label()} × {pool.instances}"


def _pool(pool: PoolPoint, batch: float | None, batch_key: str) -> dict[str, Any]:
    c: Candidate = pool.candidate
    return {
        "tp": c.par.tp,
        "pp": c.par.pp,
        "ep": c.par.ep,
        "dp": c.par.dp,
        "instances": pool.instances,
        "gpus": pool.gpus,
        batch_key: batch,
    }


def disagg_record(
    pre: PoolPoint,
    dec: PoolPoint,
    isl: int,
    osl: int,
    concurrency: int,
    result: DisaggPoint | str,
    engine: str,
) -> dict[str, Any]:
    """The stable record of a disaggregated estimate (``DISAGG_RECORD_KEYS``); latencies and
    rates None when a pool cannot run (``reason`` says why)."""
    c = pre.candidate
    ok = not isinstance(result, str)
    point = result if not isinstance(result, str) else None
    metrics = point.metrics() if point else {}
    rec: dict[str, Any] = {
        "model": c.model.id,
        "hardware": c.hardware_id,
        "precision": c.precision,
        "kv_precision": c.kv_precision,
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "prefill": _pool(pre, point.prefill_batch if point else None, "prompts_per_step"),
        "decode": _pool(dec, point.decode_batch if point else None, "sequences_per_instance"),
        "gpus": pre.gpus + dec.gpus,
        "ttft_ms": metrics.get("ttft_ms_avg"),
        "itl_ms": metrics.get("itl_ms_avg"),
        "e2e_ms": metrics.get("e2e_ms_avg"),
        "requests_per_s": metrics.get("req_per_s"),
        "output_tokens_per_s_per_decode_gpu": metrics.get("output_tok_s_per_gpu"),
        "input_tokens_per_s_per_prefill_gpu": metrics.get("input_tok_s_per_gpu"),
        "tokens_per_s_per_gpu": metrics.get("throughput_tok_s_per_gpu"),
        "kv_transfer_ms": point.kv_transfer_s * MS_PER_S if point else None,
        "kv_link": point.kv_link if point else None,
        "feasible": ok,
        "reason": result if isinstance(result, str) else None,
        "engine": engine,
        "efficiency": point.efficiency_source if point else None,
    }
    assert tuple(rec) == DISAGG_RECORD_KEYS
    return rec


def _pairs(rec: dict[str, Any]) -> list[tuple[str, Any]]:
    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:,.1f} ms"

    def pool(p: dict[str, Any], batch: str, what: str) -> str:
        split = f"tp{p['tp']}" + "".join(f" {k}{p[k]}" for k in ("pp", "dp", "ep") if p[k] > 1)
        load = "" if p[batch] is None else f" · {p[batch]:,.1f} {what}"
        return f"{p['instances']} × {split} ({p['gpus']} GPUs){load}"

    pairs: list[tuple[str, Any]] = [
        ("feasible", "yes" if rec["feasible"] else f"no: {rec['reason']}"),
        ("prefill pool", pool(rec["prefill"], "prompts_per_step", "prompts per step")),
        ("decode pool", pool(rec["decode"], "sequences_per_instance", "sequences per instance")),
        ("GPUs", rec["gpus"]),
        ("TTFT (mean)", ms(rec["ttft_ms"])),
        ("ITL (mean)", ms(rec["itl_ms"])),
        ("E2E (mean)", ms(rec["e2e_ms"])),
    ]
    if rec["feasible"]:
        pairs += [
            ("requests/s", f"{rec['requests_per_s']:,.3f}"),
            ("output tokens/s per decode GPU", f"{rec['output_tokens_per_s_per_decode_gpu']:,.0f}"),
            ("input tokens/s per prefill GPU", f"{rec['input_tokens_per_s_per_prefill_gpu']:,.0f}"),
            ("tokens/s per GPU (all)", f"{rec['tokens_per_s_per_gpu']:,.0f}"),
            ("KV transfer", f"{ms(rec['kv_transfer_ms'])} over {rec['kv_link']}"),
        ]
    pairs += [
        ("precision / KV", f"{rec['precision']} / {rec['kv_precision']}"),
        ("engine", rec["engine"]),
    ]
    if rec["efficiency"]:
        pairs.append(("efficiency", rec["efficiency"]))
    return pairs


__all__ = ["DISAGG_RECORD_KEYS", "estimate_disaggregated", "pool_option"]
