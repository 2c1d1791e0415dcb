"""Tensor / pipeline / expert parallelism: validity with reasons and per-GPU shards.

Conventions (TensorRT-LLM's): an instance has TP × PP GPUs. Attention and dense layers are
split TP ways within a pipeline stage; each stage holds num_layers / PP layers. Expert
parallelism re-partitions the MoE layers of a stage over the same TP GPUs: EP groups of
experts, each expert split TP / EP ways (EP must divide TP). DP replicas are instances.

Attention data parallelism (``dp`` > 1, MoE models only; DeepSeek-V3 / SGLang / TRT-LLM
"attention DP + wide EP"): an instance has DP × TP × PP GPUs. Attention and dense layers are
replicated on DP groups of TP GPUs, each group holding the KV cache of its own 1/DP of the
sequences; the routed experts of a stage are spread over all DP · TP GPUs (EP groups, each
expert split DP · TP / EP ways; EP must divide DP · TP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferencesize.transformer import ModelCosts


@dataclass(frozen=True)
class Parallelism:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1  # attention data-parallel groups inside one instance (MoE only)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def label(self) -> str:
        text = f"tp{self.tp}"
        text += f" pp{self.pp}" if self.pp > 1 else ""
        text += f" dp{self.dp}" if self.dp > 1 else ""
        return text + (f" ep{self.ep}" if self.ep > 1 else "")


def invalid_reason(costs: ModelCosts, par: Parallelism) -> str | None:
    """Why a split cannot run this model, or None when it can."""
    if min(par.tp, par.pp, par.ep) < 1:
        return "tp, pp and ep must be at least 1"
    if par.dp < 1:
        return "dp must be at least 1"
    heads, kv = costs.num_attention_heads, costs.num_kv_heads
    if heads % par.tp:
        return f"tp {par.tp} does not divide {heads} attention heads"
    if par.tp <= kv and kv % par.tp:
        return f"tp {par.tp} does not divide {kv} KV heads"
    if par.tp > kv and par.tp % kv:
        return f"tp {par.tp} is not a multiple of {kv} KV heads (cannot replicate them evenly)"
    if par.pp > costs.num_layers:
        return f"pp {par.pp} exceeds {costs.num_layers} layers"
    if par.ep > 1:
        if costs.num_experts == 0:
            return f"ep {par.ep} needs a mixture-of-experts model"
        if costs.num_experts % par.ep:
            return f"ep {par.ep} does not divide {costs.num_experts} experts"
        if par.dp == 1 and par.tp % par.ep:
            return f"ep {par.ep} must divide tp {par.tp} (experts share the TP GPUs)"
        if par.dp > 1 and (par.tp * par.dp) % par.ep:
            return f"ep {par.ep} must divide dp {par.dp} × tp {par.tp} (experts share the GPUs)"
    if par.dp > 1 and costs.num_experts == 0:
        return f"attention dp {par.dp} needs a mixture-of-experts model (dense: use instances)"
    return None


def kv_heads_per_gpu(costs: ModelCosts, tp: int) -> int:
    """KV heads a GPU holds: split over TP, replicated when TP > kv_heads (each GPU keeps one
    head). MLA's latent counts as one head, replicated on every TP rank."""
    return math.ceil(costs.num_kv_heads / tp)


def kv_share_per_gpu(costs: ModelCosts, tp: int) -> float:
    """Fraction of one token's KV cache a GPU holds (see :func:`kv_heads_per_gpu`)."""
    return kv_heads_per_gpu(costs, tp) / costs.num_kv_heads


def layers_per_stage(costs: ModelCosts, pp: int) -> int:
    """Layers on the largest pipeline stage."""
    return math.ceil(costs.num_layers / pp)


def valid_splits(
    costs: ModelCosts,
    max_gpus: int,
    tps: list[int] | None = None,
    pps: list[int] | None = None,
    eps: list[int] | None = None,
    dps: list[int] | None = None,
) -> list[Parallelism]:
    """Every valid (tp, pp, ep, dp) with tp · pp · dp ≤ max_gpus (powers of two unless listed;
    ``dps`` None means attention DP off, dp = 1)."""
    powers = [2**i for i in range(int(math.log2(max_gpus)) + 1)]
    out = []
    for dp in dps or [1]:
        for tp in tps or powers:
            for pp in pps or powers:
                if tp * pp * dp > max_gpus:
                    continue
                width = tp * dp
                auto_eps = [e for e in powers if e <= width] if costs.num_experts else [1]
                for ep in eps or auto_eps:
                    par = Parallelism(tp, pp, ep, dp)
                    if invalid_reason(costs, par) is None:
                        out.append(par)
    return out
