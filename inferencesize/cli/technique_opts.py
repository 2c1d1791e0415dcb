"""Flags and scenario plumbing for serving techniques (``techniques:`` in a scenario).

The same flags work on ``plan``, ``check`` and ``estimate``; on ``plan``/``check`` they
override the scenario's ``techniques:`` block key by key.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from inferencesize.catalog import Catalog, parse_spec
from inferencesize.errors import CatalogError, UnknownIdError
from inferencesize.specs import ModelSpec
from inferencesize.specs.techniques import TechniquesSpec
from inferencesize.techniques import Speculative, Techniques, mtp_costs
from inferencesize.transformer import model_costs

PANEL = "Serving techniques"

KvPrecisionOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-precision",
        help="KV-cache precision for every candidate (fp8, int8, bf16 …; default: fp8 for "
        "fp8/fp4 weights, else 16-bit). Example: --kv-precision fp8",
        rich_help_panel=PANEL,
    ),
]
PrefixTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--prefix-tokens",
        min=0,
        help="Shared prompt prefix held in the prefix cache (default: the system prompt). "
        "Example: --prefix-tokens 2000 --prefix-hit-rate 0.8",
        rich_help_panel=PANEL,
    ),
]
PrefixHitOpt = Annotated[
    float | None,
    typer.Option(
        "--prefix-hit-rate",
        min=0.0,
        max=1.0,
        help="Share of requests whose prefix is found in the cache (0…1).",
        rich_help_panel=PANEL,
    ),
]
ChunkOpt = Annotated[
    int | None,
    typer.Option(
        "--chunked-prefill",
        min=16,
        help="Chunked prefill: token budget per step; a prompt is prefilled in pieces next to "
        "the running decodes. Example: --chunked-prefill 2048",
        rich_help_panel=PANEL,
    ),
]
DraftOpt = Annotated[
    str | None,
    typer.Option(
        "--draft",
        help="Speculative decoding: draft model id (same tokenizer) or 'mtp' for built-in "
        "heads. Example: --draft llama-3.1-8b --draft-tokens 4 --acceptance 0.7",
        rich_help_panel=PANEL,
    ),
]
DraftTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--draft-tokens",
        min=1,
        max=16,
        help="Tokens drafted per step, k (default 4).",
        rich_help_panel=PANEL,
    ),
]
AcceptanceOpt = Annotated[
    float | None,
    typer.Option(
        "--acceptance",
        min=0.0,
        max=1.0,
        help="Probability a drafted token is accepted, a (0…1).",
        rich_help_panel=PANEL,
    ),
]
WeightOnlyOpt = Annotated[
    bool | None,
    typer.Option(
        "--weight-only/--no-weight-only",
        help="Weight-only quantization: int8/int4/fp8/fp4 weights, 16-bit GEMMs "
        "(e.g. AWQ/GPTQ int4, fp8 weights on A100). Example: --precision int4 --weight-only",
        rich_help_panel=PANEL,
        show_default=False,
    ),
]
SparseWeightsOpt = Annotated[
    float | None,
    typer.Option(
        "--sparse-weights",
        help="2:4 sparsity: share of the dense weight bytes kept (0…1], e.g. 0.63 "
        "(Llama-2-70B: model size −37%). Example: --sparse-weights 0.63 --sparse-speedup 1.3",
        rich_help_panel=PANEL,
    ),
]
SparseSpeedupOpt = Annotated[
    float | None,
    typer.Option(
        "--sparse-speedup",
        help="2:4 sparsity: GEMM speed-up when compute-bound, [1, 2] (e.g. 1.3).",
        rich_help_panel=PANEL,
    ),
]

FLAG_NAMES = (
    "prefix_tokens",
    "prefix_hit_rate",
    "chunked_prefill",
    "draft",
    "draft_tokens",
    "acceptance",
    "weight_only",
    "sparse_weights",
    "sparse_speedup",
)


def technique_flags(values: dict[str, Any]) -> dict[str, Any] | None:
    """The ``techniques:`` mapping the flags state (None when no flag is given)."""
    out: dict[str, Any] = {}
    for key, name in (
        ("prefix_tokens", "prefix_tokens"),
        ("prefix_hit_rate", "prefix_hit_rate"),
        ("chunked_prefill", "chunked_prefill_tokens"),
        ("weight_only", "weight_only"),
    ):
        if values.get(key) is not None:
            out[name] = values[key]
    spec = {
        name: values[key]
        for key, name in (
            ("draft", "draft"),
            ("draft_tokens", "draft_tokens"),
            ("acceptance", "acceptance"),
        )
        if values.get(key) is not None
    }
    if spec:
        out["speculative"] = spec
    sparse = {
        name: values[key]
        for key, name in (
            ("sparse_weights", "weight_factor"),
            ("sparse_speedup", "compute_speedup"),
        )
        if values.get(key) is not None
    }
    if sparse:
        out["sparsity"] = sparse
    return out or None


def merge_techniques(base: Any, flags: dict[str, Any]) -> dict[str, Any]:
    """The scenario's ``techniques:`` with flags applied key by key (nested blocks merged)."""
    merged: dict[str, Any] = dict(base) if isinstance(base, dict) else {}
    for key, value in flags.items():
        old = merged.get(key)
        merged[key] = (
            {**old, **value} if isinstance(value, dict) and isinstance(old, dict) else value
        )
    return merged


def parse_flags(values: dict[str, Any]) -> TechniquesSpec | None:
    """Flags alone (``estimate``) as a validated spec."""
    given = technique_flags(values)
    return None if given is None else parse_spec(TechniquesSpec, given, "flags")


def resolve_techniques(
    catalog: Catalog,
    spec: TechniquesSpec | None,
    target: ModelSpec | None,
    isl: int | None,
    system_prompt_tokens: int,
    shown: str,
) -> Techniques:
    """The math-level techniques of a scenario: draft model looked up, prefix checked
    (``target`` None: batch mode, no speculative decoding; ``isl`` None: not checked)."""
    if spec is None:
        return Techniques()
    where = "techniques"
    prefix = spec.prefix_tokens if spec.prefix_tokens is not None else system_prompt_tokens
    if spec.prefix_hit_rate > 0 and prefix == 0:
        raise CatalogError(
            shown,
            f"{where}.prefix_hit_rate",
            "a hit rate needs a shared prefix: set prefix_tokens (--prefix-tokens) or a"
            " system prompt",
        )
    if isl is not None and prefix > isl:
        raise CatalogError(
            shown,
            f"{where}.prefix_tokens",
            f"the shared prefix ({prefix} tokens) is longer than the input ({isl} tokens)",
        )
    speculative = None
    sp = spec.speculative
    if sp is not None and target is not None:
        target_costs = model_costs(target)
        if sp.draft.lower() == "mtp":
            speculative = Speculative(
                sp.draft_tokens, sp.acceptance, mtp_costs(target_costs), "mtp", "mtp"
            )
        else:
            try:
                draft = catalog.model(sp.draft)
            except UnknownIdError as err:
                raise CatalogError(shown, f"{where}.speculative.draft", str(err)) from None
            if draft.vocab_size != target.vocab_size:
                raise CatalogError(
                    shown,
                    f"{where}.speculative.draft",
                    f"{draft.id} has a {draft.vocab_size}-token vocabulary and {target.id}"
                    f" {target.vocab_size}: a draft model must share the target's tokenizer"
                    " (or use 'mtp')",
                )
            speculative = Speculative(
                sp.draft_tokens, sp.acceptance, model_costs(draft), "model", draft.id
            )
    sparse = spec.sparsity
    return Techniques(
        prefix_tokens=float(prefix if spec.prefix_hit_rate > 0 else 0),
        prefix_hit_rate=spec.prefix_hit_rate,
        chunk_tokens=spec.chunked_prefill_tokens or 0,
        speculative=speculative,
        weight_only=spec.weight_only,
        sparse_weight_factor=sparse.weight_factor if sparse else 1.0,
        sparse_compute_speedup=sparse.compute_speedup if sparse else 1.0,
    )


def techniques_text(rec: dict[str, Any]) -> str:
    """One line for tables from the ``techniques`` JSON record."""
    parts = []
    if "prefix_caching" in rec:
        p = rec["prefix_caching"]
        parts.append(f"prefix cache {p['prefix_tokens']:.0f} tok × hit {p['hit_rate']:g}")
    if "chunked_prefill" in rec:
        parts.append(f"chunked prefill {rec['chunked_prefill']['chunk_tokens']} tok/step")
    if "speculative" in rec:
        s = rec["speculative"]
        parts.append(
            f"speculative {s['draft']} k={s['draft_tokens']} a={s['acceptance']:g}"
            f" → {s['tokens_per_step']:.2f} tok/step"
        )
    if rec.get("weight_only"):
        parts.append("weight-only (16-bit GEMMs)")
    if "sparsity" in rec:
        sp = rec["sparsity"]
        parts.append(
            f"sparsity: weights ×{sp['weight_factor']:g}, GEMMs ×{sp['compute_speedup']:g}"
        )
    return " · ".join(parts)
