"""Scenario block ``techniques:``: serving techniques the instances use (all optional)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from inferencesize.specs.common import Field, Spec

if TYPE_CHECKING:  # annotation types: read by the schema (specs.schema), never imported here
    from inferencesize.specs.types import Float, Fraction, Int, TokenCount, Tokens


class SpeculativeSpec(Spec):
    """Speculative decoding: a draft model id from the catalog (same tokenizer as the target),
    or ``mtp`` for built-in draft heads (DeepSeek MTP, Medusa/EAGLE-style)."""

    draft: str = Field(min_length=1, description="catalog model id, or 'mtp'")
    draft_tokens: Annotated[Int, Field(ge=1, le=16)] = 4
    acceptance: Fraction = Field(description="probability that one drafted token is accepted")


class SparsitySpec(Spec):
    """Structured (2:4) sparsity as the user measured or was told it: the share of the dense
    weight bytes that remains, and the GEMM speed-up when compute-bound. NVIDIA's Llama-2-70B
    example: model size −37 % (weight_factor 0.63), 1.3× at large batch (compute_speedup 1.3)."""

    weight_factor: Annotated[Float, Field(gt=0, le=1)]
    compute_speedup: Annotated[Float, Field(ge=1, le=2)]


class TechniquesSpec(Spec):
    """Prefix caching, chunked prefill, speculative decoding, weight-only quantization and
    sparsity. Everything off by default."""

    prefix_tokens: TokenCount | None = Field(
        default=None, description="shared prompt prefix; default: the system prompt"
    )
    prefix_hit_rate: Fraction = 0.0
    chunked_prefill_tokens: Annotated[Tokens, Field(ge=16)] | None = None
    speculative: SpeculativeSpec | None = None
    weight_only: bool = False
    sparsity: SparsitySpec | None = None
