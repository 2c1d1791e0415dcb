"""Step-time models the simulator runs on.

The engine only asks three things of a service:

* ``decode_base_s[b]`` and ``context_s[b]``: a decode-only step of ``b`` sequences takes
  ``decode_base_s[b] + context_s[b] · Σ context`` seconds (the KV read of decode attention is
  linear in the context each sequence attends to, at a rate that depends on how many
  sequences share the step; everything else depends on ``b`` only), so a run of ``k`` steps
  with a fixed batch has a closed form;
* ``kv_cap``: the KV tokens a sequence attends to at most (StreamingLLM sinks + window,
  ``ModelCosts.kv_cap_tokens``; 0 = no cap): a sequence adds ``min(context, kv_cap)`` to
  ``Σ context``, and a prompt token at position ``i`` attends ``min(i, kv_cap)`` keys;
* ``mixed_s(b, Σ context, prompt tokens, prompt pairs, prompts)``: one step that decodes ``b``
  sequences and prefills prompt chunks of ``tokens`` new tokens attending ``pairs``
  (query, key) pairs (capped at ``kv_cap`` keys a token).

:class:`LlmService` answers with the step model of ``latency`` (the model ``estimate`` uses),
the deployment's serving techniques included; :class:`ConstantService` makes every step take a
fixed time regardless of the batch (queueing-theory checks: M/D/1, M/M/1, M/M/c).

The engine moves every decoding sequence one token per step. A speculative step (drafts and
verification) emits ``tokens_per_step`` tokens per sequence, so :class:`LlmService` charges a
decode step per output token, ``latency.per_token_decode_s``, as the analytic model does; a
step with prompt work costs that plus the whole of what its prompts add. Prefix caching enters
as the step model's mean of a cache hit and a miss for each prompt step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from inferencesize.latency import Deployment, per_token_decode_s, step_time

#: Context (tokens) at which the decode attention slope is measured when no workload states
#: one (a chord for models with sliding-window or sparse attention, exact for the others:
#: their decode attention is linear in context).
SLOPE_CONTEXT = 4096.0


def slope_context(isl: npt.ArrayLike, osl: npt.ArrayLike) -> float:
    """The decode context a workload's steps hold on average, ISL + OSL/2 (mean tokens): the
    chord of the decode attention cost is taken there, so a batch at that mean context costs
    ``per_token_decode_s`` at it exactly, as in the analytic models, whether attention grows
    linearly with context or, with sliding windows or sparse attention, more slowly."""
    i, o = np.asarray(isl, dtype=float), np.asarray(osl, dtype=float)
    ctx = float(i.mean() + o.mean() / 2.0) if i.size else SLOPE_CONTEXT
    return ctx if ctx >= 1.0 else SLOPE_CONTEXT


class Service:
    """Interface of a step-time model (see module docstring)."""

    decode_base_s: list[float]
    context_s: list[float]
    kv_cap: int = 0

    def mixed_s(self, b: int, sum_ctx: float, tokens: int, pairs: float, prompts: int) -> float:
        raise NotImplementedError


@dataclass
class ConstantService(Service):
    """Every step takes ``step_s`` (decode) or ``prefill_s`` (a step with prompt work)."""

    step_s: float
    prefill_s: float
    max_batch: int

    def __post_init__(self) -> None:
        self.decode_base_s = [self.step_s] * (self.max_batch + 1)
        self.context_s = [0.0] * (self.max_batch + 1)

    def mixed_s(self, b: int, sum_ctx: float, tokens: int, pairs: float, prompts: int) -> float:
        return self.prefill_s if tokens > 0 else self.step_s


@dataclass
class LlmService(Service):
    """The step model of one instance (``latency.step_time``), cached by step shape."""

    dep: Deployment
    max_batch: int
    #: Where the decode attention chord is taken (:func:`slope_context`).
    context_tokens: float = SLOPE_CONTEXT
    _cache: dict[tuple[int, int, float], float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        b = np.arange(self.max_batch + 1, dtype=float)
        base = np.asarray(per_token_decode_s(self.dep, b, 0.0), dtype=float)
        base = np.broadcast_to(base, b.shape).copy()
        base[0] = 0.0
        self.decode_base_s = [float(v) for v in base]
        # a capped sequence attends kv_cap tokens at most: the slope below the cap
        self.kv_cap = cap = self.dep.costs.kv_cap_tokens
        ctx = min(self.context_tokens, float(cap)) if cap > 0 else self.context_tokens
        at = np.asarray(per_token_decode_s(self.dep, b, ctx), dtype=float)
        slope = (np.broadcast_to(at, b.shape) - base) / (np.maximum(b, 1.0) * ctx)
        slope[0] = 0.0
        self.context_s = [float(v) for v in slope]
        # what a whole speculative decode step costs beyond its per-token share (0 without)
        whole = base * self.dep.techniques.tokens_per_step
        self._speculation_s = [float(v) for v in whole - base]

    def mixed_s(self, b: int, sum_ctx: float, tokens: int, pairs: float, prompts: int) -> float:
        if tokens <= 0:
            return self.decode_base_s[b] + self.context_s[b] * sum_ctx
        key = (b, tokens, pairs)
        base = self._cache.get(key)
        if base is None:
            # Prompt chunks of different lengths as ``n`` equal prompts of ``length`` tokens
            # with the same token count (GEMMs) and the same causal pairs (attention):
            # n·length = tokens, n·length(length + 1)/2 = pairs (capped: n·capped pairs).
            length = equal_prompt_length(tokens, pairs, self.kv_cap)
            n = tokens / length
            step = float(step_time(self.dep, float(b), 0.0, n, length).total_s)
            base = step - self._speculation_s[b]
            self._cache[key] = base
        return base + self.context_s[b] * sum_ctx


def chunk_pairs(done: int, chunk: int, cap: int = 0) -> float:
    """Causal (query, key) pairs of prompt tokens ``done + 1 … done + chunk``; with a KV cap
    (``cap`` > 0) token ``i`` attends ``min(i, cap)`` keys."""
    end = done + chunk
    if cap <= 0 or end <= cap:
        return (end * (end + 1) - done * (done + 1)) / 2.0
    return float(_capped_pairs(end, cap) - _capped_pairs(done, cap))


def _capped_pairs(n: int, cap: int) -> int:
    """Σ_{i=1..n} min(i, cap)."""
    if n <= cap:
        return n * (n + 1) // 2
    return cap * (cap + 1) // 2 + (n - cap) * cap


def equal_prompt_length(tokens: int, pairs: float, cap: int = 0) -> float:
    """Length ``L`` of equal prompts with the mean (query, key) pairs per token of ``tokens``
    tokens attending ``pairs`` pairs: pairs(L)/L = pairs/tokens, where pairs(L) is L(L + 1)/2
    and, beyond a KV cap, cap(cap + 1)/2 + (L − cap)·cap (at least 1)."""
    per_token = pairs / tokens
    if cap <= 0 or per_token <= (cap + 1) / 2.0:
        return max(2.0 * per_token - 1.0, 1.0)
    # cap(cap + 1)/2 + (L − cap)·cap = L·per_token  ⇒  L = cap(cap − 1)/2 / (cap − per_token)
    return cap * (cap - 1) / 2.0 / max(cap - per_token, 1e-12)
