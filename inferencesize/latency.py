"""Step math: time of one forward step (prefill, decode, or a mix) on one instance.

A step over M tokens = GEMMs (linear layers; roofline of 2·M·active params vs. the weights
it must stream) + attention (prefill: FLOP-bound, FlashAttention on 16-bit units; decode:
KV-cache reads) + TP all-reduces (2 per layer of M × hidden 16-bit activations) + overheads
(per step, per layer, and per sequence in the step: sampling, detokenising, streaming). With
PP, a stage holds 1/PP of the layers and a token crosses every stage: decode latency is PP ×
stage time of a 1/PP micro-batch, prefill latency PP × stage time of the whole prompt batch,
plus the stage-boundary sends.
Works elementwise on floats or numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from inferencesize.comm import Link, allreduce_latency, allreduce_time, alltoall_time, p2p_time
from inferencesize.parallelism import (
    Parallelism,
    kv_heads_per_gpu,
    kv_share_per_gpu,
    layers_per_stage,
)
from inferencesize.roofline import Efficiency, gemm_efficiency, op_time
from inferencesize.techniques import NO_TECHNIQUES, Techniques
from inferencesize.transformer import ModelCosts, causal_pairs

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
    techniques: Techniques = NO_TECHNIQUES  # applied by technique_steps, not by step_time

    @property
    def handoff_s(self) -> float:
        """Request hand-off of an instance on more than one GPU (``Efficiency.handoff_s``);
        0 on one GPU."""
        return self.eff.handoff_s if self.par.gpus > 1 else 0.0


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


def _touched_expert_params(costs: ModelCosts, tokens: Any) -> Any:
    if costs.num_experts == 0:
        return 0.0
    if costs.fixed_routing:  # the same k experts for every token (placeholder weights)
        return costs.moe_layers * costs.top_k * costs.expert_params + 0.0 * np.asarray(tokens)
    k, e = costs.top_k, costs.num_experts
    touched = e * (1.0 - (1.0 - k / e) ** np.maximum(tokens, 1e-9))
    return costs.moe_layers * touched * costs.expert_params


def step_time(
    dep: Deployment,
    decode_seqs: Any = 0.0,
    decode_context: Any = 0.0,
    prefill_seqs: Any = 0.0,
    prefill_len: Any = 0.0,
    prefill_cached: Any = 0.0,
    decode_tokens: Any = 1.0,
) -> StepTime:
    """One step of an instance: ``decode_seqs`` sequences each generating one token at
    ``decode_context`` and ``prefill_seqs`` prompts of ``prefill_len`` tokens (of which
    ``prefill_cached`` leading tokens are reused from cache). ``decode_tokens`` query tokens
    per decoding sequence (speculative verification: k + 1) share one read of its KV cache."""
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

    # GEMMs: linear FLOPs and the weights they stream (MoE: only the experts routed to).
    flops = 2.0 * tokens * c.active_linear_params * shard
    flops += 2.0 * (dec * decode_tokens + pre) * c.lm_head_params / tp  # lm_head, last stage
    weights = (c.dense_linear_params + _touched_expert_params(c, tokens)) * shard
    if par.dp > 1:  # experts spread over all dp · tp GPUs and see every group's tokens
        expert_active = c.moe_layers * c.top_k * c.expert_params
        flops += 2.0 * (instance_tokens / par.dp - tokens) * expert_active * shard
        touched = _touched_expert_params(c, instance_tokens) / par.dp
        weights = (c.dense_linear_params + touched) * shard
    weight_bytes = weights * dep.weight_bytes_per_param
    weight_bytes += c.lm_head_params / tp * ACTIVATION_BYTES
    gemm_eff = gemm_efficiency(eff, np.maximum(tokens, 1.0))
    gemm_compute = flops / (dep.peak_flops * gemm_eff)
    gemm_memory = weight_bytes / (dep.hbm_bytes_per_s * eff.memory)
    gemm = np.maximum(gemm_compute, gemm_memory)

    # Attention. Decode: read the KV cache (memory-bound). Prefill: FLOP-bound.
    pair_flops = c.attention_flops_per_pair / tp * layer_frac
    ctx = np.asarray(decode_context, dtype=float)
    window = c.window or 1e30
    global_ctx = np.minimum(ctx, c.kv_cap_tokens) if c.kv_cap_tokens else ctx
    attended = c.global_layers * global_ctx + c.local_layers * np.minimum(ctx, window)
    kv_layer_bytes = c.kv_elements_per_token_layer * max(
        dep.kv_bytes_per_element, eff.kv_read_min_bytes
    )
    kv_bytes = dec * attended * kv_layer_bytes * kv_share_per_gpu(c, tp) * layer_frac
    kv_memory_eff: Any = eff.memory
    if eff.kv_items_half > 0:  # few (sequence, KV head) pairs cannot fill the memory system
        items = np.maximum(dec * kv_heads_per_gpu(c, tp), 1e-9)
        kv_memory_eff = eff.memory * items / (items + eff.kv_items_half)
    decode_attn = op_time(
        dec * decode_tokens * attended * pair_flops,
        kv_bytes,
        dep.peak_flops_attention,
        dep.hbm_bytes_per_s,
        eff.attention,
        kv_memory_eff,
    )
    cap = c.kv_cap_tokens
    pairs = c.global_layers * (
        causal_pairs_array(prefill_len, cap) - causal_pairs_array(prefill_cached, cap)
    ) + c.local_layers * (
        causal_pairs_array(prefill_len, c.window) - causal_pairs_array(prefill_cached, c.window)
    )
    prefill_attn = pre * pairs * pair_flops / (dep.peak_flops_attention * eff.attention)
    attention = decode_attn + prefill_attn

    # Communication: 2 all-reduces per layer on the TP group (1 with parallel attention + MLP);
    # all-to-all for EP; PP sends.
    layers = layers_per_stage(c, pp)
    message = tokens * c.hidden_size * ACTIVATION_BYTES
    comm = (
        c.allreduces_per_layer * layers * allreduce_time_array(message, tp, dep.tp_link, eff.comm)
    )
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
    stage = StepTime(gemm, attention, comm, overhead, gemm_compute >= gemm_memory)
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


def decode_step(dep: Deployment, batch: Any, context: Any) -> StepTime:
    """One decode step of ``batch`` sequences at ``context`` tokens each."""
    return step_time(dep, decode_seqs=batch, decode_context=context)


def prefill(dep: Deployment, prompts: Any, isl: Any, cached: Any = 0.0) -> StepTime:
    """Prefill of ``prompts`` prompts of ``isl`` tokens in one step (static batch)."""
    return step_time(dep, prefill_seqs=prompts, prefill_len=isl, prefill_cached=cached)


__all__ = ["Deployment", "StepTime", "causal_pairs", "decode_step", "prefill", "step_time"]
