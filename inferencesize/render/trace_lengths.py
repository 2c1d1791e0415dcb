"""A trace's lengths in a plan's JSON (``trace.lengths``) and table: what the plan sized for
(the binned ISL/OSL distribution, or the mean lengths), the bins, the occupancy-weighted KV
reservation and decode context, and the instances and GPUs each way
(:mod:`inferencesize.trace_lengths`)."""

from __future__ import annotations

from typing import Any

from inferencesize.length_mix import LengthMix


def lengths_record(
    sized_for: str,
    mix: LengthMix,
    answers: tuple[int | None, int | None],
    gpus_per_instance: int | None,
) -> dict[str, Any]:
    """``trace.lengths``: ``answers`` the instances for the distribution and for the mean
    lengths (None: none serves, or no plan)."""

    def answer(n: int | None) -> dict[str, Any] | None:
        if n is None or gpus_per_instance is None:
            return None
        return {"instances": n, "gpus": n * gpus_per_instance}

    return {
        "sized_for": sized_for,
        "kv_tokens_per_sequence": mix.kv_tokens,
        "decode_context_tokens": mix.decode_context,
        "bins": [
            {"probability": p, "isl_mean": i, "osl_mean": o}
            for p, i, o in zip(mix.probs, mix.isl, mix.osl, strict=True)
        ],
        "prompt_bins": [
            {"probability": p, "isl_mean": i}
            for p, i in zip(mix.prompt_probs, mix.prompt_isl, strict=True)
        ],
        "distribution": answer(answers[0]),
        "mean": answer(answers[1]),
    }


def trace_lengths_rows(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """One row: what the plan sized for, and the GPUs each way."""
    t = rec.get("trace")
    lengths = t.get("lengths") if t else None
    if not lengths:
        return []

    def gpus(way: str) -> str:
        a = lengths[way]
        return "none serves" if a is None else f"{a['instances']:,} instances · {a['gpus']:,} GPUs"

    sized = lengths["sized_for"]
    return [
        (
            "trace lengths",
            f"sized for the {'mean lengths' if sized == 'mean' else 'length distribution'}"
            f" ({len(lengths['prompt_bins'])} prompt bins; KV"
            f" {lengths['kv_tokens_per_sequence']:,.0f} tokens a running sequence) · the"
            f" distribution: {gpus('distribution')} · the mean lengths: {gpus('mean')}",
        )
    ]
