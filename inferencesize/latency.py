"""Step math: time of one forward step (prefill, decode, or a mix) on one instance.

A step over M tokens = GEMMs (linear layers; roofline of 2·M·active params vs. the weights
it must stream) + attention (prefill: FLOP-bound, FlashAttention on 16-bit units; decode:
KV-cache reads) + TP all-reduces (2 per layer of M × hidden 16-bit activations) + overheads
(per step, per layer, and per sequence in the step: sampling, detokenising, streaming). With
PP, a stage holds 1/PP of the layers and a token crosses every stage: decode latency is PP ×
stage time of a 1/PP micro-batch, prefill latency PP × stage time of the whole prompt batch,
plus the stage-boundary sends.

:func:`step_time` is the one step model every caller uses: the roofline step above with the
deployment's serving techniques (``techniques.py``) applied. Without techniques it is the
roofline step itself.

* Prefix caching: the mean of a cache hit (the shared prefix skipped) and a miss, weighted by
  the hit rate. Time is averaged, so the mean prefill work drops by hit rate × prefix tokens.
* Speculative decoding: each decoding sequence verifies k + 1 tokens in the target (one read of
  its KV cache), after k draft decode steps at the same batch; the draft also prefills the
  prompt. A step then yields ``Techniques.tokens_per_step`` tokens per sequence:
  :func:`per_token_decode_s` divides the decode step by it.

Works elementwise on floats or numpy arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Concatenate, ParamSpec

import numpy as np

from inferencesize.comm import Link, allreduce_latency, allreduce_time, alltoall_time, p2p_time
from inferencesize.kernel_step import (
    GemmWork,
    KernelHardware,
    allreduce_s,
    decode_attention_s,
    gemm_s,
    prefill_attention_s,
)
from inferencesize.length_mix import LengthMix
from inferencesize.parallelism import (
    Parallelism,
    kv_heads_per_gpu,
    kv_share_per_gpu,
    layers_per_stage,
)
from inferencesize.roofline import Efficiency, gemm_efficiency, op_time
from inferencesize.techniques import NO_TECHNIQUES, Techniques
from inferencesize.transformer import (
    ModelCosts,
    attended_tokens,
    attention_pairs,
    causal_pairs,
    decode_cache_elements_read,
    decode_extra_flops,
    linear_state_bytes_per_sequence,
    prefill_extra_flops,
)

ACTIVATION_BYTES = 2.0  # activations and embeddings / lm_head stay 16-bit


@dataclass(frozen=True)
class Deployment:
    """Everything the step math needs about one instance: model, split, precision, hardware."""

    costs: ModelCosts
    par: Parallelism
    weight_bytes_per_param: float  # linear layers, in the weight precision
    kv_bytes_per_element: float
    peak_flops: float  # dense peak of the precision's tensor units, one GPU
    peak_flops_attention: float  # 16-bit dense peak, one GPU (attention kernels)
    hbm_bytes_per_s: float
    tp_link: Link
    pp_link: Link
    eff: Efficiency
    ep_link: Link | None = None  # all-to-all across DP groups (attention DP); None = tp_link
    techniques: Techniques = NO_TECHNIQUES  # applied by step_time
    #: The kernel tier of the GPU, engine and precision (``kernel_step``): GEMMs and the TP
    #: all-reduce from measured kernels instead of the set's shares of the datasheet.
    kernels: KernelHardware | None = None
    #: Every step's time multiplied by this (``step_time``): 1 predicts; a plan's pessimistic
    #: count takes the 90th percentile of measured / predicted (``inferencesize.bands``).
    step_scale: float = 1.0
    #: The traffic's binned ISL/OSL distribution the open-loop model sizes for
    #: (``inferencesize.length_mix``; ``Estimator.lengths``); None: the lengths asked, fixed.
    lengths: LengthMix | None = None

    @property
    def handoff_s(self) -> float:
        """Request hand-off (``Efficiency.handoff_s``), added once to TTFT. A set with a
        kernel tier pays it on every request (tokenising, the hop between the server and the
        engine process, the first token back); the older sets, fitted with it, on instances
        of more than one GPU only."""
        if self.kernels is not None or self.par.gpus > 1:
            return self.eff.handoff_s
        return 0.0


@dataclass(frozen=True)
class StepTime:
    """Seconds of one step split by cause; ``total_s`` is the latency of the step."""

    gemm_s: Any
    attention_s: Any
    comm_s: Any
    overhead_s: Any
    gemm_compute_bound: Any  # True where the GEMMs are FLOP-bound

    @property
    def total_s(self) -> Any:
        return self.gemm_s + self.attention_s + self.comm_s + self.overhead_s

    @property
    def bound(self) -> str:
        parts = {
            "compute" if bool(np.all(self.gemm_compute_bound)) else "memory": self.gemm_s
            + self.attention_s,
            "communication": self.comm_s,
            "overhead": self.overhead_s,
        }
        return max(parts, key=lambda k: float(np.mean(parts[k])))

    def plus(self, other: StepTime) -> StepTime:
        """Both steps one after the other (the bound of this one)."""
        return StepTime(
            self.gemm_s + other.gemm_s,
            self.attention_s + other.attention_s,
            self.comm_s + other.comm_s,
            self.overhead_s + other.overhead_s,
            self.gemm_compute_bound,
        )

    def scaled(self, w: Any) -> StepTime:
        """Every part times ``w`` (a weight of a mean, or 0/1 to switch the step off)."""
        return StepTime(
            self.gemm_s * w,
            self.attention_s * w,
            self.comm_s * w,
            self.overhead_s * w,
            self.gemm_compute_bound,
        )


def _touched_expert_params(costs: ModelCosts, tokens: Any) -> Any:
    if costs.num_experts == 0:
        return 0.0
    if costs.fixed_routing:  # the same k experts for every token (placeholder weights)
        return costs.moe_layers * costs.top_k * costs.expert_params + 0.0 * np.asarray(tokens)
    k, e = costs.top_k, costs.num_experts
    touched = e * (1.0 - (1.0 - k / e) ** np.maximum(tokens, 1e-9))
    return costs.moe_layers * touched * costs.expert_params


def _rows_per_expert(costs: ModelCosts, tokens: Any) -> Any:
    """GEMM rows of one touched routed expert in a step of ``tokens`` tokens: tokens · k spread
    over the experts they touch (at least 1; placeholder routing: every token on the same k)."""
    t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    if costs.num_experts == 0 or costs.fixed_routing:
        return t
    k, e = costs.top_k, costs.num_experts
    touched = e * (1.0 - (1.0 - k / e) ** t)
    return np.maximum(t * k / touched, 1.0)


def _expert_flops(costs: ModelCosts, par: Parallelism, tokens: Any, instance_tokens: Any) -> Any:
    """Routed-expert FLOPs of the busiest GPU's step before its layer / TP share: the part of
    the linear FLOPs that runs at the expert GEMMs' row count (attention DP: every group's
    tokens reach the experts, spread over the dp groups' GPUs)."""
    expert_active = costs.moe_layers * costs.top_k * costs.expert_params
    routed = instance_tokens / par.dp if par.dp > 1 else tokens
    return 2.0 * routed * expert_active


def _roofline_gemm(
    dep: Deployment,
    tokens: Any,
    instance_tokens: Any,
    head_rows: Any,
    touched: Any,
    per_expert: Any,
    shard: float,
) -> tuple[Any, Any]:
    """GEMM seconds of a stage's step at the set's shares of the datasheet, and whether they
    are FLOP-bound: the linear FLOPs (routed experts at ``per_expert`` rows) against the
    weights streamed (``touched`` routed-expert weights)."""
    c, par, eff = dep.costs, dep.par, dep.eff
    tp = par.tp
    flops = 2.0 * tokens * c.active_linear_params * shard
    flops += 2.0 * head_rows * c.lm_head_params / tp  # lm_head, last stage
    if par.dp > 1:  # experts see every group's tokens
        expert_active = c.moe_layers * c.top_k * c.expert_params
        flops += 2.0 * (instance_tokens / par.dp - tokens) * expert_active * shard
    weight_bytes = (c.dense_linear_params + touched) * shard * dep.weight_bytes_per_param
    weight_bytes += c.lm_head_params / tp * ACTIVATION_BYTES
    expert_flops = _expert_flops(c, par, tokens, instance_tokens) * shard
    compute = (flops - expert_flops) / (
        dep.peak_flops * gemm_efficiency(eff, np.maximum(tokens, 1.0))
    ) + expert_flops / (dep.peak_flops * gemm_efficiency(eff, per_expert))
    memory = weight_bytes / (dep.hbm_bytes_per_s * eff.memory)
    return np.maximum(compute, memory), compute >= memory


def _roofline_step(
    dep: Deployment,
    decode_seqs: Any = 0.0,
    decode_context: Any = 0.0,
    prefill_seqs: Any = 0.0,
    prefill_len: Any = 0.0,
    prefill_cached: Any = 0.0,
    decode_tokens: Any = 1.0,
) -> StepTime:
    """The roofline step, without techniques (callers use :func:`step_time`).

    ``decode_seqs`` sequences each generating one token at ``decode_context`` and
    ``prefill_seqs`` prompts of ``prefill_len`` tokens (of which ``prefill_cached`` leading
    tokens are reused from cache). ``decode_tokens`` query tokens per decoding sequence
    (speculative verification: k + 1) share one read of its KV cache."""
    c, par, eff = dep.costs, dep.par, dep.eff
    pp, tp = par.pp, par.tp
    # Decode: a stage holds 1/pp of the layers and works on a 1/pp micro-batch while the other
    # stages work on the others; a token crosses all pp stages. Prefill: a prompt crosses the
    # stages one after another, so its latency is pp stages of the whole prompt (no speed-up).
    dec = np.asarray(decode_seqs, dtype=float) / pp
    pre = np.asarray(prefill_seqs, dtype=float)
    new_per_prompt = np.asarray(prefill_len, dtype=float) - prefill_cached
    instance_tokens = dec * decode_tokens + pre * new_per_prompt  # routed to all DP groups' experts
    if par.dp > 1:  # attention DP: the busiest group; a prompt is never split across groups
        dec, pre = dec / par.dp, np.maximum(pre / par.dp, np.minimum(pre, 1.0))
    tokens = dec * decode_tokens + pre * new_per_prompt
    layer_frac = layers_per_stage(c, pp) / c.num_layers
    shard = layer_frac / tp

    # GEMMs: linear FLOPs and the weights they stream (MoE: only the experts routed to; under
    # attention DP spread over all dp · tp GPUs, seeing every group's tokens). A routed
    # expert's GEMM has as many rows as tokens routed to it, not the step's tokens.
    if par.dp > 1:
        touched = _touched_expert_params(c, instance_tokens) / par.dp
    else:
        touched = _touched_expert_params(c, tokens)
    per_expert = _rows_per_expert(c, instance_tokens if par.dp > 1 else tokens)
    head_rows = dec * decode_tokens + pre
    if dep.kernels is None:
        gemm, compute_bound = _roofline_gemm(
            dep, tokens, instance_tokens, head_rows, touched, per_expert, shard
        )
        stream_share = eff.memory
    else:
        work = GemmWork(
            tokens=tokens,
            dense_params_per_layer=c.dense_linear_params / c.num_layers / tp,
            layers=layers_per_stage(c, pp),
            expert_rows=per_expert,
            expert_params_per_layer=touched / max(c.moe_layers, 1) / tp,
            moe_layers=c.moe_layers * layer_frac,
            head_rows=head_rows,
            head_params=c.lm_head_params / tp,
            hidden=c.hidden_size,
        )
        gemm, compute_bound = gemm_s(
            dep.kernels,
            work,
            dep.weight_bytes_per_param,
            dep.peak_flops,
            dep.peak_flops_attention,
            dep.hbm_bytes_per_s,
        )
        stream_share = dep.kernels.stream_share

    # Attention. Decode: read the KV cache (memory-bound). Prefill: FLOP-bound.
    pair_flops = c.attention_flops_per_pair / tp * layer_frac
    ctx = np.asarray(decode_context, dtype=float)
    attended = attended_tokens(c, ctx)  # windows, KV cap, sparse top-k: transformer.py
    kv_element_bytes = max(dep.kv_bytes_per_element, eff.kv_read_min_bytes)
    kv_read = decode_cache_elements_read(c, ctx) * kv_element_bytes * kv_share_per_gpu(c, tp)
    # linear-attention layers read and write their recurrent state once per step
    kv_read = kv_read + 2.0 * linear_state_bytes_per_sequence(c) / tp
    kv_bytes = dec * kv_read * layer_frac
    decode_flops = (
        dec * decode_tokens * (attended * pair_flops + decode_extra_flops(c, ctx) * shard)
    )
    pairs = attention_pairs(c, prefill_len, prefill_cached)
    extra = prefill_extra_flops(c, prefill_len, prefill_cached) * shard
    kh = dep.kernels
    attn_layers = (c.global_layers + c.local_layers) * layer_frac
    if kh is not None and kh.generation is not None and attn_layers > 0:
        # decode attention from the measured kernels: the cache of the attention layers (a
        # linear-attention state stays a stream); the extra (indexer, linear) FLOPs ride on
        # the same calls
        state = dec * 2.0 * linear_state_bytes_per_sequence(c) / tp * layer_frac
        decode_attn = decode_attention_s(
            kh,
            decode_flops,
            np.maximum(kv_bytes - state, 0.0),
            attn_layers,
            attended / (c.global_layers + c.local_layers),
            dec * kv_heads_per_gpu(c, tp),
            dep.peak_flops_attention,
            dep.hbm_bytes_per_s,
        ) + state / (dep.hbm_bytes_per_s * kh.stream_share)
    else:
        kv_memory_eff: Any = stream_share
        if eff.kv_items_half > 0:  # few (sequence, KV head) pairs cannot fill the memory system
            items = np.maximum(dec * kv_heads_per_gpu(c, tp), 1e-9)
            kv_memory_eff = stream_share * items / (items + eff.kv_items_half)
        decode_attn = op_time(
            decode_flops,
            kv_bytes,
            dep.peak_flops_attention,
            dep.hbm_bytes_per_s,
            eff.attention,
            kv_memory_eff,
        )
    if kh is not None and kh.context is not None and attn_layers > 0:
        full = attention_pairs(c, prefill_len)  # without a cached prefix
        prefill_attn = prefill_attention_s(
            kh,
            pre,
            prefill_len,
            c.num_attention_heads / tp,
            c.attention_flops_per_pair / (4.0 * c.num_attention_heads),
            attn_layers,
            c.local_layers * layer_frac,
            c.window,
            np.where(full > 0, pairs / np.maximum(full, 1e-9), 0.0),
            dep.peak_flops_attention,
            dep.hbm_bytes_per_s,
        ) + pre * extra / (dep.peak_flops_attention * kh.context.eta_max)
    else:
        prefill_attn = (
            pre * (pairs * pair_flops + extra) / (dep.peak_flops_attention * eff.attention)
        )
    attention = decode_attn + prefill_attn

    # Communication: 2 all-reduces per layer on the TP group (1 with parallel attention + MLP);
    # all-to-all for EP; PP sends.
    layers = layers_per_stage(c, pp)
    message = tokens * c.hidden_size * ACTIVATION_BYTES
    if kh is not None and kh.allreduce and dep.tp_link.name == "nvlink":
        reduce = allreduce_s(kh, message, tp, dep.tp_link.bytes_per_s)
    else:
        reduce = allreduce_time_array(message, tp, dep.tp_link, eff.comm)
    comm = c.allreduces_per_layer * layers * reduce
    if par.ep > 1 and c.moe_layers:
        routed = message * c.top_k
        moe_layers_stage = c.moe_layers * layer_frac
        comm = comm + 2 * moe_layers_stage * alltoall_time_array(
            routed / tp, par.ep, dep.ep_link or dep.tp_link, eff.comm
        )
    if par.dp > 1 and par.ep == 1 and c.moe_layers:
        # experts tensor-split over all dp · tp GPUs: gather every group's tokens to them and
        # reduce-scatter the results back, the volume of one all-reduce of the instance's tokens
        gather = instance_tokens * c.hidden_size * ACTIVATION_BYTES
        comm = comm + c.moe_layers * layer_frac * allreduce_time_array(
            gather, tp * par.dp, dep.ep_link or dep.tp_link, eff.comm
        )
    # host and launch costs: per step, per layer, and per sequence the step holds
    per_seq = eff.seq_overhead_s * (dec + pre)
    overhead = eff.step_overhead_s + eff.layer_overhead_s * layers + per_seq
    stage = StepTime(gemm, attention, comm, overhead, compute_bound)
    if pp == 1:
        return stage
    send = p2p_time_array(message, dep.pp_link, eff.comm)
    return StepTime(
        pp * stage.gemm_s,
        pp * stage.attention_s,
        pp * stage.comm_s + (pp - 1) * send,
        pp * stage.overhead_s,
        stage.gemm_compute_bound,
    )


def causal_pairs_array(seq_len: Any, window: float = 0.0) -> Any:
    """Vectorised ``transformer.causal_pairs``."""
    seq = np.asarray(seq_len, dtype=float)
    if window <= 0:
        return seq * (seq + 1) / 2
    w = float(window)
    return np.where(seq <= w, seq * (seq + 1) / 2, w * (w + 1) / 2 + (seq - w) * w)


def allreduce_time_array(message: Any, n: int, link: Link, efficiency: float) -> Any:
    if n <= 1:
        return 0.0 * np.asarray(message, dtype=float)
    alpha = allreduce_latency(n, link)
    per_byte = allreduce_time(1.0, n, link, efficiency) - alpha
    return np.where(message > 0, alpha + per_byte * message, 0.0)


def alltoall_time_array(message: Any, n: int, link: Link, efficiency: float) -> Any:
    per_byte = alltoall_time(1.0, n, link, efficiency) - link.latency_s
    return np.where(message > 0, link.latency_s + per_byte * message, 0.0)


def p2p_time_array(message: Any, link: Link, efficiency: float) -> Any:
    per_byte = p2p_time(1.0, link, efficiency) - link.latency_s
    return np.where(message > 0, link.latency_s + per_byte * message, 0.0)


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


def _speculative_step(
    dep: Deployment,
    decode_seqs: Any,
    decode_context: Any,
    prefill_seqs: Any,
    prefill_len: Any,
    prefill_cached: Any,
) -> StepTime:
    """The roofline step, or with speculative decoding the target's verification of k + 1
    tokens per sequence, k draft decode steps and the draft's prefill of the prompts."""
    spec = dep.techniques.speculative
    if spec is None:
        return _roofline_step(
            dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached
        )
    k = spec.draft_tokens
    target = _roofline_step(
        dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached, k + 1
    )
    draft = draft_deployment(dep)
    assert draft is not None
    dec = np.asarray(decode_seqs, dtype=float) > 0
    pre = np.asarray(prefill_seqs, dtype=float) > 0
    proposing = _roofline_step(draft, decode_seqs, decode_context).scaled(k * dec)
    draft_prefill = _roofline_step(
        draft, 0.0, 0.0, prefill_seqs, prefill_len, prefill_cached
    ).scaled(1.0 * pre)
    return target.plus(proposing.plus(draft_prefill))


P = ParamSpec("P")


def _step_scaled(
    step: Callable[Concatenate[Deployment, P], StepTime],
) -> Callable[Concatenate[Deployment, P], StepTime]:
    """``step`` with its result scaled by the deployment's ``step_scale``, once, at the end."""

    def scaled(dep: Deployment, /, *args: P.args, **kwargs: P.kwargs) -> StepTime:
        out = step(dep, *args, **kwargs)
        return out if dep.step_scale == 1.0 else out.scaled(dep.step_scale)

    scaled.__doc__, scaled.__name__ = step.__doc__, step.__name__
    return scaled


@_step_scaled
def step_time(
    dep: Deployment,
    decode_seqs: Any = 0.0,
    decode_context: Any = 0.0,
    prefill_seqs: Any = 0.0,
    prefill_len: Any = 0.0,
    prefill_cached: Any = 0.0,
) -> StepTime:
    """One engine step of an instance with its techniques (module docstring): ``decode_seqs``
    sequences each generating at ``decode_context`` and ``prefill_seqs`` prompts of
    ``prefill_len`` tokens, of which ``prefill_cached`` leading tokens are reused from cache
    (prefix caching: also the shared prefix on a hit)."""
    t = dep.techniques
    if not t.prefix_active:
        return _speculative_step(
            dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached
        )
    hit_cached = np.maximum(prefill_cached, t.cached_tokens(prefill_len))
    hit = _speculative_step(dep, decode_seqs, decode_context, prefill_seqs, prefill_len, hit_cached)
    miss = _speculative_step(
        dep, decode_seqs, decode_context, prefill_seqs, prefill_len, prefill_cached
    )
    h = t.prefix_hit_rate
    return hit.scaled(h).plus(miss.scaled(1.0 - h))


def decode_step(dep: Deployment, batch: Any, context: Any) -> StepTime:
    """One decode step of ``batch`` sequences at ``context`` tokens each (speculative: drafts
    and verification, which yields ``tokens_per_step`` tokens per sequence)."""
    return step_time(dep, decode_seqs=batch, decode_context=context)


def per_token_decode_s(dep: Deployment, batch: Any, context: Any) -> Any:
    """Seconds per output token of a sequence in a decode-only step at ``batch``."""
    return decode_step(dep, batch, context).total_s / dep.techniques.tokens_per_step


def prefill(dep: Deployment, prompts: Any, isl: Any, cached: Any = 0.0) -> StepTime:
    """Prefill of ``prompts`` prompts of ``isl`` tokens in one step (static batch)."""
    return step_time(dep, prefill_seqs=prompts, prefill_len=isl, prefill_cached=cached)


__all__ = [
    "Deployment",
    "StepTime",
    "causal_pairs",
    "decode_step",
    "draft_deployment",
    "per_token_decode_s",
    "prefill",
    "step_time",
]
