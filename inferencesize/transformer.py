"""Model math: parameter counts, KV-cache bytes, FLOPs (pure functions, SI units).

Counts follow the HF modelling code of each architecture family: embeddings, untied lm_head,
attention (Q/K/V/O, optional biases, QK norms, attention sinks), MLA low-rank projections,
dense or gated MLP, MoE experts + shared experts + router, norms, learned position table.
Not counted: vision towers, DeepSeek's MTP module.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inferencesize.specs.model import ModelSpec


def is_moe_layer(model: ModelSpec, layer: int) -> bool:
    """Whether 0-based ``layer`` is a mixture-of-experts layer."""
    moe = model.moe
    if moe is None or layer < moe.first_k_dense_layers:
        return False
    return (layer - moe.first_k_dense_layers + 1) % moe.layer_step == 0


def num_moe_layers(model: ModelSpec) -> int:
    return sum(is_moe_layer(model, i) for i in range(model.num_layers))


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
        return q + kv + out + (h if model.attention_output_bias else 0)
    hd, kv_heads = model.head_dim, model.num_kv_heads
    params = h * heads * hd + 2 * h * kv_heads * hd + heads * hd * h
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


def local_attention_layers(model: ModelSpec) -> int:
    """Layers whose attention is windowed (sliding or chunked)."""
    sw = model.sliding_window
    if sw is None:
        return 0
    groups, rest = divmod(model.num_layers, sw.every)
    return groups * sw.local_layers + min(rest, sw.local_layers)


def kv_elements_per_token_per_layer(model: ModelSpec) -> int:
    """Cached elements per token per layer: K and V for every KV head, or MLA's shared latent."""
    if model.mla is not None:
        return model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
    return 2 * model.num_kv_heads * model.head_dim


def capped_costs(costs: ModelCosts, sink_tokens: int, window_tokens: int) -> ModelCosts:
    """``costs`` with the global layers' KV capped at ``sink_tokens + window_tokens`` (the
    StreamingLLM scheme: keep the first few "attention sink" tokens and a recent window;
    Xiao et al. 2023, arXiv:2309.17453). Attention then behaves like a sliding window of that
    many tokens: KV bytes, decode reads and prefill pairs all cap there. No cap when both are 0.
    """
    return replace(costs, kv_cap_tokens=sink_tokens + window_tokens)


def kv_cache_bytes(model: ModelSpec, kv_bytes_per_element: float, seq_len: float) -> float:
    """KV-cache bytes of one sequence of ``seq_len`` tokens (windowed layers cap at the window).

    GQA/MHA/MQA: 2 · kv_heads · head_dim per layer; MLA: kv_lora_rank + rope_dim per layer.
    """
    per_layer_token = kv_elements_per_token_per_layer(model) * kv_bytes_per_element
    local = local_attention_layers(model)
    global_layers = model.num_layers - local
    window = model.sliding_window.tokens if model.sliding_window else 0
    tokens = global_layers * seq_len + local * min(seq_len, window)
    return per_layer_token * tokens


def kv_bytes_per_token(model: ModelSpec, kv_bytes_per_element: float, context: float) -> float:
    """Average KV bytes per token for a sequence of ``context`` tokens (full size at context 1)."""
    return kv_cache_bytes(model, kv_bytes_per_element, context) / context


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
        global_layers=model.num_layers - local,
        local_layers=local,
        window=model.sliding_window.tokens if model.sliding_window else 0,
        kv_elements_per_token_layer=kv_elements_per_token_per_layer(model),
        num_kv_heads=kv_heads,
        num_attention_heads=model.num_attention_heads,
        allreduces_per_layer=1 if model.parallel_attention else 2,
    )


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
    attention: flops-per-pair · causal pairs of the new tokens against all earlier ones.
    """
    new = isl - cached
    linear = 2.0 * costs.active_linear_params * new + 2.0 * costs.lm_head_params
    cap = costs.kv_cap_tokens
    pairs_global = causal_pairs(isl, cap) - causal_pairs(cached, cap)
    pairs_local = causal_pairs(isl, costs.window) - causal_pairs(cached, costs.window)
    attention = costs.attention_flops_per_pair * (
        costs.global_layers * pairs_global + costs.local_layers * pairs_local
    )
    return batch * (linear + attention)


def decode_flops(costs: ModelCosts, batch: float, context: float) -> float:
    """FLOPs of one decode step: ``batch`` sequences, each attending ``context`` earlier tokens."""
    linear = 2.0 * (costs.active_linear_params + costs.lm_head_params)
    attended = costs.global_layers * min(
        context, costs.kv_cap_tokens or context
    ) + costs.local_layers * min(context, costs.window or context)
    return batch * (linear + costs.attention_flops_per_pair * attended)


def experts_touched(num_experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts a layer reads for ``tokens`` routed tokens (uniform routing):
    E · (1 − (1 − k/E)^tokens). One token: k; many tokens: E."""
    if num_experts == 0:
        return 0.0
    return float(num_experts * (1.0 - (1.0 - top_k / num_experts) ** tokens))
