"""Serving techniques an instance may use, as one frozen value the step math carries.

Every default leaves the performance model exactly as without techniques.

* **Prefix caching**: ``prefix_tokens`` leading prompt tokens are shared (a system prompt) and
  found in the cache with probability ``prefix_hit_rate``. A hit skips their prefill (linear
  work and attention over them); a miss prefills the whole prompt. The cache holds one copy of
  the prefix's KV per instance, and a hit shares those blocks instead of holding its own.
* **Chunked prefill**: ``chunk_tokens`` is the token budget of one step; a prompt is prefilled
  in ceil(ISL / chunk) pieces, each in a step together with the running decodes.
* **Speculative decoding**: a draft (a catalog model, or built-in MTP/Medusa-style heads)
  proposes k tokens, the target verifies k + 1 tokens per sequence in one step; with per-token
  acceptance a a step yields (1 − a^(k+1)) / (1 − a) tokens (Leviathan et al. 2023, eq. 1).
* **Weight-only quantization**: weights stored in the instance precision (int8/int4/fp8/fp4),
  GEMMs computed on 16-bit tensor units after dequantisation.
* **Sparsity** (2:4 structured): weights take ``sparse_weight_factor`` of their dense bytes and
  the GEMMs run ``sparse_compute_speedup`` times faster; both are stated by the user.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import numpy as np

from inferencesize.transformer import ModelCosts

DraftKind = Literal["model", "mtp"]


def tokens_per_step(acceptance: float, draft_tokens: int) -> float:
    """Expected tokens one speculative step emits per sequence: (1 − a^(k+1)) / (1 − a).

    a = 0: 1 (only the target's own token); a = 1: k + 1.
    """
    a, k = acceptance, draft_tokens
    if a >= 1.0:
        return float(k + 1)
    return float((1.0 - a ** (k + 1)) / (1.0 - a))


def mtp_costs(target: ModelCosts) -> ModelCosts:
    """A built-in draft head (DeepSeek MTP module, Medusa/EAGLE head) as one more layer of the
    target: the target's average layer plus its (shared) lm_head."""
    layers = target.num_layers
    return replace(
        target,
        num_layers=1,
        dense_linear_params=target.dense_linear_params // layers,
        moe_layers=1 if target.moe_layers else 0,
        global_layers=1 if target.global_layers else 0,
        local_layers=0 if target.global_layers else 1,
        linear_layers=0,  # an MTP module is a full-attention layer
    )


#: Draft heads assumed for a measured run that states speculative decoding by built-in heads
#: (``spec_decoding=mtp``) but not their depth or acceptance: one MTP module, as DeepSeek-V3
#: ships and serves, whose second token is accepted 85–90 % of the time (DeepSeek-V3
#: Technical Report, arXiv:2412.19437, §5.4.3); the low end is taken.
MEASURED_MTP_DRAFT_TOKENS: Final = 1
MEASURED_MTP_ACCEPTANCE: Final = 0.85


def draft_heads(target: ModelCosts, draft_tokens: int, acceptance: float) -> Speculative:
    """Speculative decoding by built-in draft heads (MTP, Medusa/EAGLE) of ``target``."""
    return Speculative(draft_tokens, acceptance, mtp_costs(target), "mtp", "mtp")


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding: ``draft_tokens`` (k) proposals per step, accepted each with
    probability ``acceptance`` (a); ``draft`` is the costs of the proposer."""

    draft_tokens: int
    acceptance: float
    draft: ModelCosts
    kind: DraftKind = "model"
    draft_id: str = "mtp"

    @property
    def tokens_per_step(self) -> float:
        return tokens_per_step(self.acceptance, self.draft_tokens)


@dataclass(frozen=True)
class Techniques:
    """Serving techniques of one instance (defaults: none)."""

    prefix_tokens: float = 0.0
    prefix_hit_rate: float = 0.0
    chunk_tokens: int = 0  # 0: a prompt is prefilled in one step
    speculative: Speculative | None = None
    weight_only: bool = False
    sparse_weight_factor: float = 1.0
    sparse_compute_speedup: float = 1.0

    @property
    def prefix_active(self) -> bool:
        return self.prefix_tokens > 0 and self.prefix_hit_rate > 0

    @property
    def tokens_per_step(self) -> float:
        """Output tokens per sequence per decode step (1 without speculative decoding)."""
        return self.speculative.tokens_per_step if self.speculative else 1.0

    @property
    def active(self) -> bool:
        return self != NO_TECHNIQUES

    def cached_tokens(self, isl: Any) -> Any:
        """Prefix tokens a cache hit skips for a prompt of ``isl`` tokens (the last prompt
        token is always computed: it produces the first output token)."""
        return np.minimum(self.prefix_tokens, np.maximum(np.asarray(isl, dtype=float) - 1, 0))

    def expected_new_tokens(self, isl: Any) -> Any:
        """Mean prompt tokens actually prefilled: ISL − hit rate · cached prefix."""
        return isl - self.prefix_hit_rate * self.cached_tokens(isl) if self.prefix_active else isl


#: No technique: the default every deployment carries.
NO_TECHNIQUES: Final = Techniques()


def describe(t: Techniques) -> dict[str, Any] | None:
    """The techniques in the JSON records (None when no technique is on)."""
    if t == NO_TECHNIQUES:
        return None
    out: dict[str, Any] = {}
    if t.prefix_active:
        out["prefix_caching"] = {"prefix_tokens": t.prefix_tokens, "hit_rate": t.prefix_hit_rate}
    if t.chunk_tokens:
        out["chunked_prefill"] = {"chunk_tokens": t.chunk_tokens}
    s = t.speculative
    if s is not None:
        out["speculative"] = {
            "draft": s.draft_id,
            "draft_tokens": s.draft_tokens,
            "acceptance": s.acceptance,
            "tokens_per_step": s.tokens_per_step,
        }
    if t.weight_only:
        out["weight_only"] = True
    if t.sparse_weight_factor != 1.0 or t.sparse_compute_speedup != 1.0:
        out["sparsity"] = {
            "weight_factor": t.sparse_weight_factor,
            "compute_speedup": t.sparse_compute_speedup,
        }
    return out
