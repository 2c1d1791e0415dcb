"""``estimate --prefill SPLIT --decode SPLIT``: the pool flags read, and the record of one
disaggregated deployment (``point_estimate.estimate_disaggregated``) shown."""

from __future__ import annotations

from typing import Any

from inferencesize import report
from inferencesize.cli.common import emit_data
from inferencesize.errors import UsageError
from inferencesize.measured_shape import parse_pool
from inferencesize.point_estimate import DisaggEstimate, PoolSplit
from inferencesize.validation import PoolPoint


def pool_option(text: str, flag: str) -> PoolSplit:
    """(tp, pp, ep, dp, instances) of a ``--prefill`` / ``--decode`` value; a UsageError
    naming the flag and the notation otherwise."""
    pool = parse_pool(text)
    if pool is None:
        raise UsageError(
            f"{flag}: expected tpN[ppN][dpN][epN][xW] (e.g. tp4x1, tp1dp8ep8x2), got {text!r}"
        )
    p = pool.par
    return p.tp, p.pp, p.ep, p.dp, pool.workers


def show_disaggregated(result: DisaggEstimate, fmt: str) -> None:
    """Print the record of a disaggregated estimate in ``fmt`` (table: its key-value table)."""
    pre, dec, rec = result.prefill, result.decode, result.record
    title = (
        f"{pre.candidate.model.id} on {pre.candidate.hardware_id} · prefill {text_of(pre)} ·"
        f" decode {text_of(dec)} · ISL {rec['isl']} · OSL {rec['osl']} · concurrency"
        f" {rec['concurrency']}"
    )
    emit_data(fmt, rec, table=lambda out: out.print(report.key_value_table(title, _pairs(rec))))


def text_of(pool: PoolPoint) -> str:
    return f"{pool.candidate.par.label()} × {pool.instances}"


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


__all__ = ["pool_option", "show_disaggregated"]
