"""What the steps of one request cost at an operating point (seconds, elementwise on arrays).

Built on :func:`inferencesize.latency.step_time` (techniques applied); ``serving`` puts these
costs into the queue formulas of ``queueing``.

* In-flight batching at B requests in flight (:func:`inflight_steps`): the decode step at B per
  output token, a new prompt's step next to the others' decodes and what it adds to them, a
  prompt step alone, and a batched cohort step.
* Chunked prefill (:func:`chunked_prefill`, :func:`chunked_steps`): a prompt runs as
  ceil(new tokens / chunk) pieces, each in a step with the running decodes; the first token
  comes after the last piece. The chunk budget caps ITL (no decode step is longer than a full
  one) and the prompts admitted per step.
* Static batching at batch B (:func:`static_batch`): TTFT = prefill of the whole batch (+ the
  hand-off on more than one GPU); ITL = decode step at B per output token.
* The longest gap between two tokens of a stream (:func:`longest_gap_s`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from inferencesize.latency import (
    Deployment,
    StepTime,
    decode_step,
    per_token_decode_s,
    prefill,
    step_time,
)
from inferencesize.queueing import e2e_s


def step_totals(dep: Deployment, *shapes: tuple[Any, Any, Any, Any]) -> list[Any]:
    """Total seconds of several step shapes (decode sequences, their context, prompts, prompt
    length), each elementwise over arrays, computed in one vectorised ``step_time`` call."""
    shape = np.broadcast_shapes(*(np.shape(v) for s in shapes for v in s))
    stacked = [np.empty((len(shapes), *shape)) for _ in range(4)]
    for row, values in enumerate(shapes):
        for column, value in enumerate(values):
            stacked[column][row] = value
    total = step_time(dep, *stacked).total_s
    return list(np.broadcast_to(total, stacked[0].shape))


# ---------------------------------------------------------------------------------------------
# Chunked prefill
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkedPrefill:
    """One prompt prefilled in chunks next to ``decode_seqs`` running decodes (seconds)."""

    first_token_s: Any  # all chunk steps, until the prompt's first token
    marginal_s: Any  # what the chunks add to the decode steps they ride on
    longest_step_s: Any  # the longest of those steps: the worst gap the decodes see


def _without_prefix(dep: Deployment) -> Deployment:
    """The deployment with every prompt a cache miss (a chunk's own start says what is
    cached)."""
    return replace(dep, techniques=replace(dep.techniques, prefix_hit_rate=0.0))


def _chunks(
    dep: Deployment, decode_seqs: Any, context: Any, start: Any, isl: Any
) -> ChunkedPrefill:
    chunk = float(dep.techniques.chunk_tokens)
    miss = _without_prefix(dep)
    start = np.asarray(start, dtype=float)
    isl = np.asarray(isl, dtype=float)
    pieces = np.ceil(np.maximum(isl - start, 1.0) / chunk)
    base = step_time(miss, decode_seqs, context).total_s
    total = marginal = longest = 0.0 * (isl + np.asarray(decode_seqs, dtype=float))
    for j in range(int(np.max(pieces))):
        lo = start + j * chunk
        hi = np.minimum(lo + chunk, isl)
        step = step_time(miss, decode_seqs, context, 1.0, hi, lo).total_s
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


@dataclass(frozen=True)
class ChunkedSteps:
    """A new prompt's costs under a chunk budget, at B requests in flight (seconds)."""

    own_s: Any  # its chunk steps, until its first token
    marginal_s: Any  # what its chunks add to the others' decode steps
    prompt_s: Any  # engine time of one prompt: its share of full steps
    itl_cap_s: Any  # per output token: no decode step is longer than a full one
    rate_cap: Any  # requests/s the budget admits; beyond it prompts queue (TTFT)


def chunked_steps(
    dep: Deployment, in_flight: Any, context: Any, isl: Any, alone_s: Any
) -> ChunkedSteps:
    """The prompt rides on ceil(ISL / chunk) decode steps. A full step holds one chunk, or
    chunk / ISL short prompts; prompts ahead take their share of such steps; the budget admits
    chunk / new tokens prompts per full step. ``alone_s``: a prompt step alone (one client)."""
    b = in_flight
    chunk = dep.techniques.chunk_tokens
    chunks = chunked_prefill(dep, b - 1, context, isl)
    full = np.where(
        isl < chunk,
        step_time(dep, b - 1, context, chunk / np.maximum(isl, 1.0), isl).total_s,
        chunks.longest_step_s,
    )
    new = np.maximum(dep.techniques.expected_new_tokens(isl), 1.0)
    return ChunkedSteps(
        own_s=chunks.first_token_s,
        marginal_s=np.where(b > 1, chunks.marginal_s, alone_s),
        prompt_s=full * new / chunk,
        itl_cap_s=full / dep.techniques.tokens_per_step,
        rate_cap=np.where(b > 1, chunk / (new * full), np.inf),
    )


# ---------------------------------------------------------------------------------------------
# In-flight batching
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InflightSteps:
    """One client's step costs at B requests in flight, elementwise (seconds)."""

    decode_s: Any  # per output token: the decode step at B / tokens per step
    own_s: Any  # its own prompt until its first token (all chunks under a chunk budget)
    alone_s: Any  # a prompt step alone
    marginal_s: Any  # what its prompt adds to the others' decode steps (B = 1: alone_s)
    prompt_s: Any  # engine time one prompt takes from the queue
    cohort_step_s: Any  # one batched step of a cohort's prompts
    chunked: ChunkedSteps | None  # the chunk budget's costs and limits (None: whole prompts)


def inflight_steps(
    dep: Deployment, isl: Any, context: Any, in_flight: Any, cohort_prompts: Any
) -> InflightSteps:
    """Step costs at ``in_flight`` requests of mean ``context`` tokens; ``cohort_prompts``
    prompts of ``isl`` tokens in one batched cohort step."""
    b = in_flight
    decode_b, t_own, t_alone, decode_others, cohort_step = step_totals(
        dep,
        (b, context, 0.0, 0.0),  # a decode step at B
        (b - 1, context, 1.0, isl),  # a new prompt's step next to the others' decodes
        (0.0, 0.0, 1.0, isl),  # a prompt alone
        (b - 1, context, 0.0, 0.0),  # the others' decode step
        (0.0, 0.0, cohort_prompts, isl),  # a batched step of the cohort
    )
    t_marginal = np.where(b > 1, np.maximum(t_own - decode_others, 0.0), t_alone)
    steps = InflightSteps(
        decode_s=decode_b / dep.techniques.tokens_per_step,
        own_s=t_own,
        alone_s=t_alone,
        marginal_s=t_marginal,
        prompt_s=t_marginal,  # engine time one more prompt costs (random-arrival queue)
        cohort_step_s=cohort_step,
        chunked=None,
    )
    if not dep.techniques.chunk_tokens:
        return steps
    chunked = chunked_steps(dep, b, context, isl, t_alone)
    return replace(
        steps,
        own_s=chunked.own_s,
        marginal_s=chunked.marginal_s,
        prompt_s=chunked.prompt_s,
        chunked=chunked,
    )


def longest_gap_s(dep: Deployment, in_flight: Any, context: Any, isl: Any) -> Any:
    """Worst gap between two tokens of a stream under in-flight batching: the decode step
    that also carries a whole new prompt (a cache miss), or only one chunk of it."""
    b = np.maximum(np.asarray(in_flight, dtype=float), 1.0)
    miss = _without_prefix(dep)
    if dep.techniques.chunk_tokens:
        spike = chunked_prefill(miss, b - 1, context, isl).longest_step_s
    else:
        spike = step_time(miss, b - 1, context, 1.0, isl).total_s
    return np.where(b > 1, spike, decode_step(dep, b, context).total_s)


# ---------------------------------------------------------------------------------------------
# Static batching
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StaticBatch:
    """A static batch of B requests, elementwise (seconds, requests/s)."""

    prefill: StepTime  # the whole batch's prompts in one step
    decode: StepTime  # one decode step at B
    ttft_s: Any
    itl_s: Any
    e2e_s: Any
    requests_per_s: Any


def static_batch(
    dep: Deployment, batch: Any, isl: Any, osl: Any, handoff: bool = True
) -> StaticBatch:
    """TTFT = prefill of the whole batch (+ the request hand-off when ``handoff`` and the
    instance spans GPUs); ITL = decode step at B at mean context ISL + OSL / 2, per output
    token; E2E = TTFT + (OSL − 1) · ITL; B requests per E2E. ``handoff`` False: engine time
    only (benchmarks of one prefill or decode step)."""
    pre = prefill(dep, batch, isl)
    dec = decode_step(dep, batch, isl + osl / 2.0)
    ttft = np.asarray(pre.total_s, float) + (dep.handoff_s if handoff else 0.0)
    itl = np.asarray(dec.total_s, float) / dep.techniques.tokens_per_step
    e2e = e2e_s(ttft, itl, osl)
    return StaticBatch(pre, dec, ttft, itl, e2e, batch / e2e)


__all__ = [
    "ChunkedPrefill",
    "ChunkedSteps",
    "InflightSteps",
    "StaticBatch",
    "chunked_prefill",
    "chunked_steps",
    "inflight_steps",
    "longest_gap_s",
    "per_token_decode_s",
    "static_batch",
    "step_totals",
]
