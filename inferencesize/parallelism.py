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

from inferencesize.outcomes import SplitConstraint, SplitProblem
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


def split_problem(costs: ModelCosts, par: Parallelism) -> SplitProblem | None:
    """The structural rule a split breaks for this model (typed, with the count it breaks),
    or None when it can run: TP must divide the attention heads and divide (or, above them,
    be a multiple of) the KV heads; PP at most the layers; EP only on MoE models, dividing the
    experts and the GPUs that share them (TP, or DP · TP with attention DP)."""

    def problem(constraint: SplitConstraint, count: int = 0) -> SplitProblem:
        return SplitProblem(constraint, par.tp, par.pp, par.ep, par.dp, count)

    c = SplitConstraint
    if min(par.tp, par.pp, par.ep) < 1:
        return problem(c.DEGREE_BELOW_ONE)
    if par.dp < 1:
        return problem(c.DP_BELOW_ONE)
    heads, kv = costs.num_attention_heads, costs.num_kv_heads
    if heads % par.tp:
        return problem(c.TP_DIVIDES_HEADS, heads)
    if par.tp <= kv and kv % par.tp:
        return problem(c.TP_DIVIDES_KV_HEADS, kv)
    if par.tp > kv and par.tp % kv:
        return problem(c.TP_MULTIPLE_OF_KV_HEADS, kv)
    if par.pp > costs.num_layers:
        return problem(c.PP_AT_MOST_LAYERS, costs.num_layers)
    if par.ep > 1:
        if costs.num_experts == 0:
            return problem(c.EP_NEEDS_MOE)
        if costs.num_experts % par.ep:
            return problem(c.EP_DIVIDES_EXPERTS, costs.num_experts)
        if par.dp == 1 and par.tp % par.ep:
            return problem(c.EP_DIVIDES_TP)
        if par.dp > 1 and (par.tp * par.dp) % par.ep:
            return problem(c.EP_DIVIDES_DP_TP)
    if par.dp > 1 and costs.num_experts == 0:
        return problem(c.DP_NEEDS_MOE)
    return None


def invalid_reason(costs: ModelCosts, par: Parallelism) -> str | None:
    """Why a split cannot run this model (:func:`split_problem`'s sentence), or None."""
    problem = split_problem(costs, par)
    return problem.message if problem is not None else None


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


def enumerate_splits(
    costs: ModelCosts,
    max_gpus: int,
    tps: list[int] | None = None,
    pps: list[int] | None = None,
    eps: list[int] | None = None,
    dps: list[int] | None = None,
) -> list[tuple[Parallelism, SplitProblem | None]]:
    """Every (tp, pp, ep, dp) requested with tp · pp · dp ≤ max_gpus, each with the rule it
    breaks (None: valid). A degree not listed means every power of two up to ``max_gpus``
    (ep: up to the GPUs sharing the experts, on MoE models; 1 on dense ones); ``dps`` None
    means attention DP off (dp = 1)."""
    powers = [2**i for i in range(int(math.log2(max_gpus)) + 1)]
    out: list[tuple[Parallelism, SplitProblem | None]] = []
    for dp in dps or [1]:
        for tp in tps or powers:
            for pp in pps or powers:
                if tp * pp * dp > max_gpus:
                    continue
                width = tp * dp
                auto_eps = [e for e in powers if e <= width] if costs.num_experts else [1]
                for ep in eps or auto_eps:
                    par = Parallelism(tp, pp, ep, dp)
                    out.append((par, split_problem(costs, par)))
    return out


def valid_splits(
    costs: ModelCosts,
    max_gpus: int,
    tps: list[int] | None = None,
    pps: list[int] | None = None,
    eps: list[int] | None = None,
    dps: list[int] | None = None,
) -> list[Parallelism]:
    """Every valid (tp, pp, ep, dp) with tp · pp · dp ≤ max_gpus (powers of two unless listed;
    ``dps`` None means attention DP off, dp = 1): :func:`enumerate_splits` without the
    invalid ones."""
    return [p for p, why in enumerate_splits(costs, max_gpus, tps, pps, eps, dps) if why is None]
