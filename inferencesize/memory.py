"""Memory budget of one GPU of an instance and the KV capacity it leaves.

free = memory − weights − activations − runtime reserve; KV capacity = kv_fraction · free
(TensorRT-LLM's kv_cache_free_gpu_mem_fraction, default 0.9). A request holds KV for
ISL + OSL tokens from admission (the no-eviction scheduler reserves the whole sequence), so
max concurrent sequences = KV capacity / KV bytes of one ISL + OSL sequence.
Techniques: a draft model adds its weights and KV; a prefix cache holds the prefix's KV once
and a hit shares it; chunked prefill below MAX_NUM_TOKENS sizes the activation buffers for one
chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inferencesize.latency import ACTIVATION_BYTES, Deployment, draft_deployment
from inferencesize.parallelism import kv_share_per_gpu, layers_per_stage
from inferencesize.transformer import kv_tokens, linear_state_bytes_per_sequence
from inferencesize.units import GIB

#: CUDA context, runtime and allocator slack per GPU (aiconfigurator reserves ~3.5 GiB).
RUNTIME_RESERVE_BYTES = 3.5 * GIB
#: NCCL / custom all-reduce buffers per GPU when the instance spans GPUs.
COMM_BUFFER_BYTES = 0.5 * GIB
#: Share of the free memory given to the KV cache.
KV_FRACTION = 0.9
#: Tokens one engine step may hold (activation buffers are sized for this): TensorRT-LLM's
#: default max_num_tokens (BuildConfig).
MAX_NUM_TOKENS = 8192


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes per GPU (the most loaded GPU of the instance)."""

    capacity_bytes: float
    weights_bytes: float
    activations_bytes: float
    reserve_bytes: float
    kv_capacity_bytes: float
    kv_bytes_per_sequence: float  # one sequence of ISL + OSL tokens, on this GPU

    @property
    def free_bytes(self) -> float:
        return (
            self.capacity_bytes - self.weights_bytes - self.activations_bytes - self.reserve_bytes
        )

    @property
    def max_sequences(self) -> int:
        if self.kv_capacity_bytes <= 0 or self.kv_bytes_per_sequence <= 0:
            return 0
        return int(self.kv_capacity_bytes // self.kv_bytes_per_sequence)

    @property
    def fits(self) -> bool:
        return self.max_sequences >= 1


def weight_bytes_per_gpu(dep: Deployment) -> float:
    """Weights on the most loaded GPU: its share of the linear layers (experts included) plus
    the 16-bit embedding table and lm_head split over TP (on the first / last stage)."""
    c, par = dep.costs, dep.par
    stage = layers_per_stage(c, par.pp) / c.num_layers
    linear = c.total_linear_params * stage / par.tp * dep.weight_bytes_per_param
    if par.dp > 1:  # attention DP: dense layers per DP group, experts over all dp · tp GPUs
        experts = c.total_linear_params - c.dense_linear_params
        linear -= experts * stage / par.tp * (1.0 - 1.0 / par.dp) * dep.weight_bytes_per_param
    tables = (
        c.embedding_params + c.lm_head_params
        if par.pp == 1
        else max(c.embedding_params, c.lm_head_params)
    )
    return linear + tables / par.tp * ACTIVATION_BYTES


def activation_bytes_per_gpu(dep: Deployment) -> float:
    """Activation buffers for one step of MAX_NUM_TOKENS tokens: hidden states, the widest
    sharded intermediate (QKV / MLP), and fp32 logits of one token per sequence."""
    c, tp = dep.costs, dep.par.tp
    step_tokens = min(dep.techniques.chunk_tokens or MAX_NUM_TOKENS, MAX_NUM_TOKENS)
    widest = max(c.dense_linear_params / max(c.num_layers, 1) / c.hidden_size, c.hidden_size)
    per_token = (4 * c.hidden_size + 2 * widest / tp) * ACTIVATION_BYTES
    logits = 256 * c.lm_head_params / c.hidden_size / tp * 4.0
    return step_tokens * per_token + logits


def kv_bytes_per_sequence_per_gpu(dep: Deployment, seq_len: float) -> float:
    """KV cache (and linear-attention state) one sequence of ``seq_len`` tokens holds on the most
    loaded GPU: cached entries (``transformer.kv_tokens``) at the KV element width, split like
    the KV heads; the recurrent state, constant in ``seq_len``, split over TP by value heads."""
    c, par = dep.costs, dep.par
    stage = layers_per_stage(c, par.pp) / c.num_layers
    per = c.kv_elements_per_token_layer * dep.kv_bytes_per_element * kv_share_per_gpu(c, par.tp)
    kv = float(kv_tokens(c, seq_len)) * per
    state = linear_state_bytes_per_sequence(c) / par.tp
    # attention DP: a sequence lives on one of dp groups, so per GPU it costs 1/dp on average
    return (kv + state) * stage / par.dp


def _technique_bytes(dep: Deployment, seq_len: float) -> tuple[float, float, float]:
    """(extra weights, KV bytes per sequence, KV held by the prefix cache) per GPU: a draft
    model's weights and KV (built-in heads share the target's embedding and lm_head); prefix
    caching keeps one copy of the prefix and a hit (share h) does not hold its own."""
    t = dep.techniques
    draft = draft_deployment(dep)
    extra = draft_kv = 0.0
    if draft is not None:
        if t.speculative is not None and t.speculative.kind == "mtp":
            draft = replace(draft, costs=replace(draft.costs, embedding_params=0, lm_head_params=0))
        extra = weight_bytes_per_gpu(draft)
        draft_kv = kv_bytes_per_sequence_per_gpu(draft, seq_len)
    own = seq_len
    held = 0.0
    if t.prefix_active:
        prefix = min(t.prefix_tokens, max(seq_len - 1, 0.0))
        own = seq_len - t.prefix_hit_rate * prefix
        held = kv_bytes_per_sequence_per_gpu(dep, prefix)
    return extra, kv_bytes_per_sequence_per_gpu(dep, own) + draft_kv, held


def memory_budget(dep: Deployment, memory_bytes: float, seq_len: float) -> MemoryBudget:
    weights = weight_bytes_per_gpu(dep)
    acts = activation_bytes_per_gpu(dep)
    reserve = RUNTIME_RESERVE_BYTES + (COMM_BUFFER_BYTES if dep.par.gpus > 1 else 0.0)
    per_sequence = kv_bytes_per_sequence_per_gpu(dep, seq_len)
    held = 0.0
    if dep.techniques.active:
        extra, per_sequence, held = _technique_bytes(dep, seq_len)
        weights += extra
    free = memory_bytes - weights - acts - reserve
    return MemoryBudget(
        capacity_bytes=memory_bytes,
        weights_bytes=weights,
        activations_bytes=acts,
        reserve_bytes=reserve,
        kv_capacity_bytes=max(max(free, 0.0) * KV_FRACTION - held, 0.0),
        kv_bytes_per_sequence=per_sequence,
    )
