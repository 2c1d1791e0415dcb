"""Model math: parameter counts, KV-cache bytes, FLOPs (pure functions, SI units).

Counts follow the HF modelling code of each architecture family: embeddings, untied lm_head,
attention (Q/K/V/O, optional biases, QK norms, attention sinks, output gate), MLA low-rank
projections, the DeepSeek Sparse Attention indexer, Gated DeltaNet linear-attention layers,
dense or gated MLP, MoE experts + shared experts (and their gate) + router, norms, learned
position table. Multi-token-prediction modules are counted apart (``mtp_params``), as vendors
state their totals without them. Not counted: vision towers.

Layer kinds and what one sequence keeps per layer:

- global softmax attention: KV for every token; attends every earlier token;
- sliding / chunked window: KV for the last ``window`` tokens; attends at most ``window``;
- DeepSeek Sparse Attention: KV (latent + one indexer key) for every token; the indexer scans
  every earlier token, attention runs on ``top_k`` of them;
- linear attention (Gated DeltaNet): a constant recurrent state, no KV; work linear in tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from inferencesize.specs.model import ModelSpec


def is_moe_layer(model: ModelSpec, layer: int) -> bool:
    """Whether 0-based ``layer`` is a mixture-of-experts layer."""
    moe = model.moe
    if moe is None or layer < moe.first_k_dense_layers:
        return False
    return (layer - moe.first_k_dense_layers + 1) % moe.layer_step == 0


def num_moe_layers(model: ModelSpec) -> int:
    return sum(is_moe_layer(model, i) for i in range(model.num_layers))


def is_linear_attention_layer(model: ModelSpec, layer: int) -> bool:
    """Whether 0-based ``layer`` is a linear-attention layer (HF Qwen3-Next ``layer_types``: layer
    i is full attention when (i + 1) % full_attention_interval == 0)."""
    la = model.linear_attention
    return la is not None and (layer + 1) % la.full_attention_every != 0


def linear_attention_layers(model: ModelSpec) -> int:
    return sum(is_linear_attention_layer(model, i) for i in range(model.num_layers))


def _conv_channels(model: ModelSpec) -> int:
    """Channels of the causal convolution of a Gated DeltaNet layer: q, k (key width) and v."""
    la = model.linear_attention
    if la is None:
        return 0
    return 2 * la.num_key_heads * la.key_head_dim + la.num_value_heads * la.value_head_dim


def linear_attention_params(model: ModelSpec) -> int:
    """One Gated DeltaNet layer (HF Qwen3NextGatedDeltaNet): in_proj_qkvz (q, k of key width; v,
    z of value width), in_proj_ba (two scalars per value head), a depthwise conv of
    ``conv_kernel`` taps without bias, dt_bias and A_log per value head, the gated RMSNorm of one
    value head, out_proj."""
    la = model.linear_attention
    if la is None:
        return 0
    h = model.hidden_size
    key, value = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
    params = h * (2 * key + 2 * value) + h * 2 * la.num_value_heads
    params += _conv_channels(model) * la.conv_kernel + 2 * la.num_value_heads
    return params + la.value_head_dim + value * h


def linear_state_elements(model: ModelSpec) -> int:
    """Recurrent state of one sequence in one linear-attention layer: a key_head_dim x
    value_head_dim matrix per value head plus the last conv_kernel - 1 inputs of the conv."""
    la = model.linear_attention
    if la is None:
        return 0
    matrix = la.num_value_heads * la.key_head_dim * la.value_head_dim
    return matrix + (la.conv_kernel - 1) * _conv_channels(model)


#: Bytes per element of the recurrent state matrix: float32 (Qwen3.5 config.json
#: ``mamba_ssm_dtype: float32``; engines keep the delta-rule state in fp32 to bound drift).
STATE_MATRIX_BYTES = 4.0
#: Bytes per element of the conv window (the model dtype, bf16).
CONV_STATE_BYTES = 2.0


def linear_state_bytes(model: ModelSpec) -> float:
    """Bytes of one sequence's recurrent state in one linear-attention layer."""
    la = model.linear_attention
    if la is None:
        return 0.0
    matrix = la.num_value_heads * la.key_head_dim * la.value_head_dim
    conv = (la.conv_kernel - 1) * _conv_channels(model)
    return matrix * STATE_MATRIX_BYTES + conv * CONV_STATE_BYTES


def linear_flops_per_token(model: ModelSpec) -> int:
    """FLOPs of one token in one linear-attention layer beyond its projections (recurrent form):
    per value head three matrix-vector products with the state (the delta rule's prediction
    S^T k, the rank-1 update, the read-out S^T q), 2 · d_k · d_v each; the conv, 2 · kernel per
    channel."""
    la = model.linear_attention
    if la is None:
        return 0
    state = 3 * 2 * la.num_value_heads * la.key_head_dim * la.value_head_dim
    return state + 2 * la.conv_kernel * _conv_channels(model)


def indexer_params_per_layer(model: ModelSpec) -> int:
    """DeepSeek Sparse Attention indexer of one layer (HF/DeepSeek ``Indexer``): wq_b from the
    query latent to index_heads x index_head_dim, wk from the hidden state to one key, the key's
    LayerNorm (weight and bias) and weights_proj (one weight per index head)."""
    sa, mla = model.sparse_attention, model.mla
    if sa is None or mla is None:
        return 0
    h = model.hidden_size
    q_in = mla.q_lora_rank or h
    d = sa.index_head_dim
    return q_in * sa.index_heads * d + h * d + 2 * d + h * sa.index_heads


def attention_params_per_layer(model: ModelSpec) -> int:
    """Attention weights of one layer (projections, biases, QK norms, sinks)."""
    h, heads = model.hidden_size, model.num_attention_heads
    mla = model.mla
    if mla is not None:
        qk_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        if mla.q_lora_rank:
            q = h * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * heads * qk_dim
        else:
            q = h * heads * qk_dim
        kv = (
            h * (mla.kv_lora_rank + mla.qk_rope_head_dim)
            + mla.kv_lora_rank
            + mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        )
        out = heads * mla.v_head_dim * h
        bias = h if model.attention_output_bias else 0
        return q + kv + out + bias + indexer_params_per_layer(model)
    hd, kv_heads = model.head_dim, model.num_kv_heads
    q_width = heads * hd * (2 if model.attention_output_gate else 1)
    params = h * q_width + 2 * h * kv_heads * hd + heads * hd * h
    if model.attention_bias:
        params += heads * hd + 2 * kv_heads * hd
    if model.attention_output_bias:
        params += h
    if model.qk_norm:
        params += 2 * hd
    if model.attention_sinks:
        params += heads
    return params


def mlp_params(model: ModelSpec, width: int, bias: bool) -> int:
    """One feed-forward block (or one expert) of FFN width ``width``."""
    h = model.hidden_size
    matrices = 3 if model.gated_mlp else 2
    params = matrices * h * width
    if bias:
        params += (2 if model.gated_mlp else 1) * width + h
    return params


def _norm_params(model: ModelSpec) -> int:
    return model.hidden_size * (2 if model.norm == "layernorm" else 1)


@dataclass(frozen=True)
class LayerParams:
    """Parameters of one layer split by how a token uses them."""

    attention: int
    norms: int
    dense_mlp: int  # always-on FFN: the dense MLP, or the shared experts + router of a MoE layer
    expert_each: int  # one routed expert (0 for a dense layer)
    num_experts: int
    top_k: int

    @property
    def total(self) -> int:
        return self.attention + self.norms + self.dense_mlp + self.expert_each * self.num_experts

    @property
    def active(self) -> int:
        return self.attention + self.norms + self.dense_mlp + self.expert_each * self.top_k


def layer_params(model: ModelSpec, layer: int) -> LayerParams:
    if is_linear_attention_layer(model, layer):
        attn = linear_attention_params(model)
    else:
        attn = attention_params_per_layer(model)
    norms = model.norms_per_layer * _norm_params(model)
    moe = model.moe
    if moe is None or not is_moe_layer(model, layer):
        return LayerParams(
            attn, norms, mlp_params(model, model.intermediate_size, model.mlp_bias), 0, 0, 0
        )
    shared_width = moe.shared_expert_intermediate_size or moe.expert_intermediate_size
    always_on = moe.shared_experts * mlp_params(model, shared_width, moe.expert_bias)
    always_on += model.hidden_size * moe.num_experts + (moe.num_experts if moe.router_bias else 0)
    always_on += model.hidden_size if moe.shared_expert_gate else 0
    expert = mlp_params(model, moe.expert_intermediate_size, moe.expert_bias)
    return LayerParams(attn, norms, always_on, expert, moe.num_experts, moe.top_k)


def embedding_params(model: ModelSpec) -> int:
    """Input embedding, lm_head (if untied), lm_head bias, position table and final norm."""
    table = model.vocab_size * model.hidden_size
    params = table + (0 if model.tie_embeddings else table)
    params += model.vocab_size if model.lm_head_bias else 0
    params += model.learned_position_embeddings * model.hidden_size
    return params + _norm_params(model)


def total_params(model: ModelSpec) -> int:
    """All parameters, computed from the architecture."""
    layers = sum(layer_params(model, i).total for i in range(model.num_layers))
    return layers + embedding_params(model)


def active_params(model: ModelSpec) -> int:
    """Parameters one token uses (top-k routed experts only), embeddings and lm_head included."""
    layers = sum(layer_params(model, i).active for i in range(model.num_layers))
    return layers + embedding_params(model)


def mtp_params(model: ModelSpec) -> int:
    """Multi-token-prediction modules (DeepSeek-V3 §2.2): each is one more decoder layer (as the
    last layer) plus the projection of [norm(embedding); norm(hidden)] from 2h to h, those two
    norms and its own final norm; the embedding and lm_head are the model's own."""
    if model.mtp_layers == 0:
        return 0
    last = layer_params(model, model.num_layers - 1).total
    if is_linear_attention_layer(model, model.num_layers - 1):  # MTP layers are full attention
        last += attention_params_per_layer(model) - linear_attention_params(model)
    h = model.hidden_size
    return model.mtp_layers * (last + 2 * h * h + 3 * _norm_params(model))


def local_attention_layers(model: ModelSpec) -> int:
    """Layers whose attention is windowed (sliding or chunked)."""
    sw = model.sliding_window
    if sw is None:
        return 0
    groups, rest = divmod(model.num_layers, sw.every)
    return groups * sw.local_layers + min(rest, sw.local_layers)


def kv_elements_per_token_per_layer(model: ModelSpec) -> int:
    """Cached elements per token per attention layer: K and V for every KV head, or MLA's shared
    latent (plus the sparse-attention indexer's key)."""
    if model.mla is not None:
        sa = model.sparse_attention
        index = sa.index_head_dim if sa is not None else 0
        return model.mla.kv_lora_rank + model.mla.qk_rope_head_dim + index
    return 2 * model.num_kv_heads * model.head_dim


def capped_costs(costs: ModelCosts, sink_tokens: int, window_tokens: int) -> ModelCosts:
    """``costs`` with the global layers' KV capped at ``sink_tokens + window_tokens`` (the
    StreamingLLM scheme: keep the first few "attention sink" tokens and a recent window;
    Xiao et al. 2023, arXiv:2309.17453). Attention then behaves like a sliding window of that
    many tokens: KV bytes, decode reads and prefill pairs all cap there. No cap when both are 0.
    """
    return replace(costs, kv_cap_tokens=sink_tokens + window_tokens)


def kv_cache_bytes(model: ModelSpec, kv_bytes_per_element: float, seq_len: float) -> float:
    """KV-cache bytes of one sequence of ``seq_len`` tokens (windowed layers cap at the window;
    linear-attention layers hold their constant state, ``linear_state_bytes``).

    GQA/MHA/MQA: 2 · kv_heads · head_dim per layer; MLA: kv_lora_rank + rope_dim per layer.
    """
    costs = model_costs(model)
    kv = float(kv_tokens(costs, seq_len)) * costs.kv_elements_per_token_layer
    return kv * kv_bytes_per_element + linear_state_bytes_per_sequence(costs)


def kv_bytes_per_token(model: ModelSpec, kv_bytes_per_element: float, context: float) -> float:
    """Average KV bytes per token for a sequence of ``context`` tokens (full size at context 1).

    The recurrent state of linear-attention layers does not grow with tokens and is left out
    (``linear_state_bytes_per_sequence``)."""
    kv = kv_cache_bytes(model, kv_bytes_per_element, context)
    return (kv - linear_state_bytes_per_sequence(model_costs(model))) / context


# ---------------------------------------------------------------------------------------------
# Aggregated per-token costs used by the step-time model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCosts:
    """Whole-model (unsharded) quantities the step-time model needs, computed once per model.

    Linear parameters exclude the input embedding (a table lookup) and the lm_head (applied to
    one token per sequence in prefill and to every token in decode).
    """

    num_layers: int
    hidden_size: int
    dense_linear_params: int  # attention + dense MLPs + shared experts + routers, all layers
    expert_params: int  # one routed expert in one layer
    moe_layers: int
    num_experts: int
    top_k: int
    embedding_params: int  # input table
    lm_head_params: int  # output projection (equal to the table when tied)
    attention_flops_per_pair: int  # per layer per (query, key) pair: QK^T and AV
    global_layers: int
    local_layers: int
    window: int  # tokens; 0 when no windowed layers
    kv_elements_per_token_layer: int
    num_kv_heads: int  # 1 for MLA (latent shared by all heads)
    num_attention_heads: int
    #: KV cap on the global layers set by the serving engine (StreamingLLM attention sinks +
    #: recent window, tokens); 0 = none. The model's own windowed layers keep ``window``.
    kv_cap_tokens: int = 0
    #: Tensor-parallel all-reduces per layer: 2 (after attention, after the MLP), 1 when the
    #: two run in parallel on the same input and their outputs are reduced together.
    allreduces_per_layer: int = 2
    #: Every token routed to the same top-k experts: what benchmarks run with placeholder
    #: ("fake") weights measure, whose identical router logits always pick the same experts.
    #: Real checkpoints spread tokens over the experts (False).
    fixed_routing: bool = False
    #: DeepSeek Sparse Attention: the global layers attend at most this many tokens (the KV cache
    #: still holds them all); 0 = dense attention.
    sparse_top_k: int = 0
    #: the sparse-attention indexer: cached key elements per token per layer (part of
    #: ``kv_elements_per_token_layer``) and FLOPs per (query, key) pair it scores.
    index_elements_per_token_layer: int = 0
    index_flops_per_pair: int = 0
    #: linear-attention layers (neither global nor local): a constant state per sequence.
    linear_layers: int = 0
    linear_state_bytes_per_layer: float = 0.0
    linear_flops_per_token_layer: int = 0

    @property
    def total_linear_params(self) -> int:
        return self.dense_linear_params + self.moe_layers * self.num_experts * self.expert_params

    @property
    def active_linear_params(self) -> int:
        return self.dense_linear_params + self.moe_layers * self.top_k * self.expert_params


def model_costs(model: ModelSpec) -> ModelCosts:
    dense = 0
    expert = 0
    for i in range(model.num_layers):
        lp = layer_params(model, i)
        dense += lp.attention + lp.dense_mlp
        expert = expert or lp.expert_each
    table = model.vocab_size * model.hidden_size
    if model.mla is not None:
        qk = model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim
        per_pair = 2 * model.num_attention_heads * (qk + model.mla.v_head_dim)
        kv_heads = 1
    else:
        per_pair = 4 * model.num_attention_heads * model.head_dim
        kv_heads = model.num_kv_heads
    local = local_attention_layers(model)
    linear = linear_attention_layers(model)
    sa = model.sparse_attention
    moe = model.moe
    return ModelCosts(
        num_layers=model.num_layers,
        hidden_size=model.hidden_size,
        dense_linear_params=dense,
        expert_params=expert,
        moe_layers=num_moe_layers(model),
        num_experts=moe.num_experts if moe else 0,
        top_k=moe.top_k if moe else 0,
        embedding_params=table + model.learned_position_embeddings * model.hidden_size,
        lm_head_params=table,
        attention_flops_per_pair=per_pair,
        global_layers=model.num_layers - local - linear,
        local_layers=local,
        window=model.sliding_window.tokens if model.sliding_window else 0,
        kv_elements_per_token_layer=kv_elements_per_token_per_layer(model),
        num_kv_heads=kv_heads,
        num_attention_heads=model.num_attention_heads,
        allreduces_per_layer=1 if model.parallel_attention else 2,
        sparse_top_k=sa.top_k if sa else 0,
        index_elements_per_token_layer=sa.index_head_dim if sa else 0,
        index_flops_per_pair=2 * sa.index_heads * sa.index_head_dim if sa else 0,
        linear_layers=linear,
        linear_state_bytes_per_layer=linear_state_bytes(model),
        linear_flops_per_token_layer=linear_flops_per_token(model),
    )


# ---------------------------------------------------------------------------------------------
# What one sequence keeps and attends, summed over layers (scalars or numpy arrays)
# ---------------------------------------------------------------------------------------------


def _cap(x: Any, cap: float) -> Any:
    return np.minimum(x, cap) if cap > 0 else x


def kv_tokens(costs: ModelCosts, seq_len: Any) -> Any:
    """Cached (token, layer) entries of one sequence of ``seq_len`` tokens: every token on the
    global layers (up to an engine KV cap), the window on the local ones, none on linear ones."""
    return costs.global_layers * _cap(seq_len, costs.kv_cap_tokens) + costs.local_layers * _cap(
        seq_len, costs.window
    )


def attention_cap(costs: ModelCosts) -> int:
    """Most tokens one query of a global layer attends: the engine's KV cap or the sparse
    attention's top-k, whichever is smaller (0 = unbounded)."""
    caps = [c for c in (costs.kv_cap_tokens, costs.sparse_top_k) if c > 0]
    return min(caps) if caps else 0


def attended_tokens(costs: ModelCosts, context: Any) -> Any:
    """(key, layer) pairs one decode token attends with ``context`` earlier tokens: the context
    on global layers (bounded by ``attention_cap``), the window on local ones."""
    return costs.global_layers * _cap(context, attention_cap(costs)) + costs.local_layers * _cap(
        context, costs.window
    )


def decode_cache_elements_read(costs: ModelCosts, context: Any) -> Any:
    """Cache elements one decode token reads: the attended entries (without the indexer key) and,
    with sparse attention, the indexer key of every cached token of the global layers."""
    main = costs.kv_elements_per_token_layer - costs.index_elements_per_token_layer
    scanned = costs.global_layers * _cap(context, costs.kv_cap_tokens)
    return attended_tokens(costs, context) * main + scanned * costs.index_elements_per_token_layer


def decode_extra_flops(costs: ModelCosts, context: Any) -> Any:
    """FLOPs of one decode token beyond the attention pairs and the GEMMs: the indexer scoring
    every cached token of the global layers, and the linear layers' recurrence."""
    scanned = costs.global_layers * _cap(context, costs.kv_cap_tokens)
    linear = costs.linear_layers * costs.linear_flops_per_token_layer
    return scanned * costs.index_flops_per_pair + linear


def attention_pairs(costs: ModelCosts, length: Any, cached: Any = 0.0) -> Any:
    """(query, key, layer) triples a causal prefill of tokens ``cached`` .. ``length`` attends."""
    cap = attention_cap(costs)
    return costs.global_layers * (
        causal_pairs_array(length, cap) - causal_pairs_array(cached, cap)
    ) + costs.local_layers * (
        causal_pairs_array(length, costs.window) - causal_pairs_array(cached, costs.window)
    )


def prefill_extra_flops(costs: ModelCosts, length: Any, cached: Any = 0.0) -> Any:
    """FLOPs of a prefill beyond the attention pairs and the GEMMs: the indexer scores every
    causal pair of the global layers; the linear layers' recurrence runs once per new token."""
    cap = costs.kv_cap_tokens
    scored = costs.global_layers * (
        causal_pairs_array(length, cap) - causal_pairs_array(cached, cap)
    )
    new = np.asarray(length, dtype=float) - np.asarray(cached, dtype=float)
    linear = costs.linear_layers * costs.linear_flops_per_token_layer * new
    return scored * costs.index_flops_per_pair + linear


def linear_state_bytes_per_sequence(costs: ModelCosts) -> float:
    """Recurrent state of one sequence over all linear-attention layers (constant in context)."""
    return costs.linear_layers * costs.linear_state_bytes_per_layer


def causal_pairs_array(seq_len: Any, window: float = 0.0) -> Any:
    """Vectorised ``causal_pairs``."""
    seq = np.asarray(seq_len, dtype=float)
    if window <= 0:
        return seq * (seq + 1) / 2
    w = float(window)
    return np.where(seq <= w, seq * (seq + 1) / 2, w * (w + 1) / 2 + (seq - w) * w)


def causal_pairs(seq_len: float, window: float = 0.0) -> float:
    """(query, key) pairs a causal prefill of ``seq_len`` tokens attends: sum_i min(i, window).

    Without a window: L (L + 1) / 2. With a window w < L: w (w + 1) / 2 + (L - w) w.
    """
    if window <= 0 or seq_len <= window:
        return seq_len * (seq_len + 1) / 2
    return window * (window + 1) / 2 + (seq_len - window) * window


def prefill_flops(costs: ModelCosts, isl: float, batch: float = 1.0, cached: float = 0.0) -> float:
    """FLOPs to prefill ``batch`` prompts of ``isl`` tokens (``cached`` leading tokens reused).

    Linear: 2 · active linear params per new token; lm_head on the last token of each prompt;
    attention: flops-per-pair · causal pairs of the new tokens against all earlier ones (bounded
    by windows and sparse top-k), plus the indexer and linear-attention recurrences.
    """
    new = isl - cached
    linear = 2.0 * costs.active_linear_params * new + 2.0 * costs.lm_head_params
    attention = costs.attention_flops_per_pair * attention_pairs(costs, isl, cached)
    return float(batch * (linear + attention + prefill_extra_flops(costs, isl, cached)))


def decode_flops(costs: ModelCosts, batch: float, context: float) -> float:
    """FLOPs of one decode step: ``batch`` sequences, each attending ``context`` earlier tokens."""
    linear = 2.0 * (costs.active_linear_params + costs.lm_head_params)
    attended = attended_tokens(costs, context)
    extra = decode_extra_flops(costs, context)
    return float(batch * (linear + costs.attention_flops_per_pair * attended + extra))


def experts_touched(num_experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts a layer reads for ``tokens`` routed tokens (uniform routing):
    E · (1 − (1 − k/E)^tokens). One token: k; many tokens: E."""
    if num_experts == 0:
        return 0.0
    return float(num_experts * (1.0 - (1.0 - top_k / num_experts) ** tokens))
