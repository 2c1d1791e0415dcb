"""Step math with the deployment's serving techniques applied (see ``techniques.py``).

``step_time``, ``decode_step`` and ``prefill`` here have the signatures of ``latency``'s and
return what one engine step costs when the instance uses its techniques; without techniques
they return exactly ``latency``'s values.

* Prefix caching: the mean of a cache hit (the shared prefix skipped) and a miss, weighted by
  the hit rate. Time is averaged, so the mean prefill work drops by hit rate × prefix tokens.
* Speculative decoding: each decoding sequence verifies k + 1 tokens in the target (one read of
  its KV cache), after k draft decode steps at the same batch; the draft also prefills the
  prompt. A step then yields ``Techniques.tokens_per_step`` tokens per sequence: the caller
  divides the decode step by it to get the time per output token.
* Chunked prefill (``chunked_prefill``): a prompt runs as ceil(new tokens / chunk) pieces, each
  in a step with the running decodes; the first token comes after the last piece.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from inferencesize import latency
from inferencesize.latency import Deployment, StepTime
from inferencesize.parallelism import Parallelism
from inferencesize.techniques import NO_TECHNIQUES


def draft_deployment(dep: Deployment) -> Deployment | None:
    """The draft proposer as a deployment on the target's TP GPUs (last pipeline stage), in the
    target's precision; built-in heads run inside the target's step (no step overhead)."""
    spec = dep.techniques.speculative
    if spec is None:
        return None
    eff = replace(dep.eff, step_overhead_s=0.0) if spec.kind == "mtp" else dep.eff
    return replace(
        dep,
        costs=spec.draft,
        par=Parallelism(dep.par.tp, 1, 1),
        eff=eff,
        techniques=NO_TECHNIQUES,
    )


def _add(a: StepTime, b: StepTime) -> StepTime:
    return StepTime(
        a.gemm_s + b.gemm_s,
        a.attention_s + b.attention_s,
        a.comm_s + b.comm_s,
        a.overhead_s + b.overhead_s,
        a.gemm_compute_bound,
    )


def _scale(a: StepTime, w: Any) -> StepTime:
    return StepTime(
        a.gemm_s * w, a.attention_s * w, a.comm_s * w, a.overhead_s * w, a.gemm_compute_bound
    )


def _spec_step(
    dep: Deployment,
    decode_seqs: Any,
    decode_context: Any,
    prefill_seqs: Any,
    prefill_len: Any,
    prefill_cached: Any,
) -> StepTime:
    spec = dep.techniques.speculative
    if spec is None:
        return latency.step_time(
            dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached
        )
    k = spec.draft_tokens
    target = latency.step_time(
        dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached, k + 1
    )
    draft = draft_deployment(dep)
    assert draft is not None
    dec = np.asarray(decode_seqs, dtype=float) > 0
    pre = np.asarray(prefill_seqs, dtype=float) > 0
    proposing = _scale(latency.step_time(draft, decode_seqs, decode_context), k * dec)
    draft_prefill = _scale(
        latency.step_time(draft, 0.0, 0.0, prefill_seqs, prefill_len, prefill_cached), 1.0 * pre
    )
    return _add(target, _add(proposing, draft_prefill))


def step_time(
    dep: Deployment,
    decode_seqs: Any = 0.0,
    decode_context: Any = 0.0,
    prefill_seqs: Any = 0.0,
    prefill_len: Any = 0.0,
    prefill_cached: Any = 0.0,
) -> StepTime:
    """``latency.step_time`` with the deployment's techniques (module docstring)."""
    t = dep.techniques
    if not t.prefix_active:
        return _spec_step(
            dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached
        )
    hit_cached = np.maximum(prefill_cached, t.cached_tokens(prefill_len))
    hit = _spec_step(dep, decode_seqs, decode_context, prefill_seqs, prefill_len, hit_cached)
    miss = _spec_step(dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached)
    h = t.prefix_hit_rate
    return _add(_scale(hit, h), _scale(miss, 1.0 - h))


def decode_step(dep: Deployment, batch: Any, context: Any) -> StepTime:
    """One decode step of ``batch`` sequences (a speculative step: drafts + verification)."""
    return step_time(dep, decode_seqs=batch, decode_context=context)


def prefill(dep: Deployment, prompts: Any, isl: Any, cached: Any = 0.0) -> StepTime:
    """Prefill of ``prompts`` prompts of ``isl`` tokens in one step (static batch)."""
    return step_time(dep, prefill_seqs=prompts, prefill_len=isl, prefill_cached=cached)


def per_token_decode_s(dep: Deployment, batch: Any, context: Any) -> Any:
    """Seconds per output token of a sequence in a decode-only step at ``batch``."""
    return decode_step(dep, batch, context).total_s / dep.techniques.tokens_per_step


@dataclass(frozen=True)
class ChunkedPrefill:
    """One prompt prefilled in chunks next to ``decode_seqs`` running decodes (seconds)."""

    first_token_s: Any  # all chunk steps, until the prompt's first token
    marginal_s: Any  # what the chunks add to the decode steps they ride on
    longest_step_s: Any  # the longest of those steps: the worst gap the decodes see


def _chunks(
    dep: Deployment, decode_seqs: Any, context: Any, start: Any, isl: Any
) -> ChunkedPrefill:
    chunk = float(dep.techniques.chunk_tokens)
    start = np.asarray(start, dtype=float)
    isl = np.asarray(isl, dtype=float)
    pieces = np.ceil(np.maximum(isl - start, 1.0) / chunk)
    base = _spec_step(dep, decode_seqs, context, 0.0, 0.0, 0.0).total_s
    total = marginal = longest = 0.0 * (isl + np.asarray(decode_seqs, dtype=float))
    for j in range(int(np.max(pieces))):
        lo = start + j * chunk
        hi = np.minimum(lo + chunk, isl)
        step = _spec_step(dep, decode_seqs, context, 1.0, hi, lo).total_s
        on = j < pieces
        total = total + np.where(on, step, 0.0)
        marginal = marginal + np.where(on, np.maximum(step - base, 0.0), 0.0)
        longest = np.maximum(longest, np.where(on, step, 0.0))
    return ChunkedPrefill(total, marginal, longest)


def chunked_prefill(dep: Deployment, decode_seqs: Any, context: Any, isl: Any) -> ChunkedPrefill:
    """A prompt of ``isl`` tokens in chunks of ``Techniques.chunk_tokens`` (prefix caching:
    the hit/miss mean; a hit starts after the cached prefix)."""
    t = dep.techniques
    miss = _chunks(dep, decode_seqs, context, 0.0, isl)
    if not t.prefix_active:
        return miss
    hit = _chunks(dep, decode_seqs, context, t.cached_tokens(isl), isl)
    h = t.prefix_hit_rate
    return ChunkedPrefill(
        *(h * getattr(hit, f.name) + (1 - h) * getattr(miss, f.name) for f in fields(miss))
    )


def longest_gap_s(dep: Deployment, in_flight: Any, context: Any, isl: Any) -> Any:
    """Worst gap between two tokens of a stream under in-flight batching: the decode step
    that also carries a whole new prompt (a cache miss), or only one chunk of it."""
    b = np.maximum(np.asarray(in_flight, dtype=float), 1.0)
    no_prefix = replace(dep, techniques=replace(dep.techniques, prefix_hit_rate=0.0))
    if dep.techniques.chunk_tokens:
        spike = chunked_prefill(no_prefix, b - 1, context, isl).longest_step_s
    else:
        spike = step_time(no_prefix, b - 1, context, 1.0, isl).total_s
    return np.where(b > 1, spike, decode_step(dep, b, context).total_s)
