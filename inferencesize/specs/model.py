"""Model architecture schema: every hyper-parameter the analytic model needs, from config.json."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from inferencesize.specs.common import Field, Spec, model_validator

if TYPE_CHECKING:  # annotation types: read by the schema (specs.schema), never imported here
    from inferencesize.specs.types import (
        ExpertCount,
        Experts,
        Heads,
        Id,
        Int,
        LayerCount,
        Layers,
        PositiveFloat,
        Source,
        TokenCount,
        Tokens,
        Vocab,
        Width,
    )

AttentionKind = Literal["MHA", "GQA", "MQA", "MLA"]
Activation = Literal["swiglu", "geglu", "gelu", "relu", "relu2"]
GATED_ACTIVATIONS: frozenset[str] = frozenset({"swiglu", "geglu"})


class SlidingWindow(Spec):
    """Local attention on some layers: in every group of ``every`` layers, ``local_layers`` are
    local (the rest global). Mistral v0.1: 1 of 1; Gemma 2 / gpt-oss: 1 of 2; Gemma 3: 5 of 6;
    Llama 4 chunked attention: 3 of 4 (``kind: chunked``)."""

    tokens: Tokens
    local_layers: Layers = 1
    every: Layers = 1
    kind: Literal["sliding", "chunked"] = "sliding"

    @model_validator(mode="after")
    def _fits(self) -> SlidingWindow:
        if self.local_layers > self.every:
            raise ValueError(
                f"local_layers: cannot exceed every (got {self.local_layers} > {self.every})"
            )
        return self


class MoE(Spec):
    """Mixture of experts. Layer i (0-based) is MoE when i >= first_k_dense_layers and
    (i - first_k_dense_layers + 1) % layer_step == 0 (HF's interleave rule for layer_step > 1)."""

    num_experts: Experts
    top_k: Experts
    shared_experts: ExpertCount = 0
    expert_intermediate_size: Width
    shared_expert_intermediate_size: Width | None = None
    first_k_dense_layers: LayerCount = 0
    layer_step: Layers = 1
    router_bias: bool = False
    expert_bias: bool = False
    shared_expert_gate: bool = Field(
        default=False,
        description="a hidden -> 1 sigmoid gate scales the shared experts (Qwen2-MoE, Qwen3-Next)",
    )

    @model_validator(mode="after")
    def _top_k(self) -> MoE:
        if self.top_k > self.num_experts:
            raise ValueError(
                f"top_k: cannot exceed num_experts (got {self.top_k} > {self.num_experts})"
            )
        return self


class MLA(Spec):
    """DeepSeek multi-head latent attention ranks (config.json names)."""

    kv_lora_rank: Width
    q_lora_rank: Width | None = None
    qk_rope_head_dim: Width
    qk_nope_head_dim: Width
    v_head_dim: Width


class SparseAttention(Spec):
    """DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): a lightning indexer scores every earlier
    token of every attention layer (``index_heads`` heads of ``index_head_dim``, reading one cached
    key of ``index_head_dim`` per token) and attention runs on the ``top_k`` best only. The KV
    cache keeps every token; the attention work is bounded by ``top_k``."""

    top_k: Tokens
    index_heads: Heads
    index_head_dim: Width


class LinearAttention(Spec):
    """Gated DeltaNet layers (Qwen3-Next, Qwen3.5): every ``full_attention_every``-th layer is
    softmax attention, the others keep a constant-size recurrent state per sequence (one
    ``key_head_dim`` x ``value_head_dim`` matrix per value head, and a short causal convolution
    over the last ``conv_kernel`` tokens) instead of a KV cache."""

    kind: Literal["gated_deltanet"] = "gated_deltanet"
    full_attention_every: Layers
    num_key_heads: Heads
    num_value_heads: Heads
    key_head_dim: Width
    value_head_dim: Width
    conv_kernel: Layers

    @model_validator(mode="after")
    def _heads(self) -> LinearAttention:
        if self.num_value_heads % self.num_key_heads != 0:
            raise ValueError(
                f"num_value_heads: must be a multiple of num_key_heads "
                f"(got {self.num_value_heads} and {self.num_key_heads})"
            )
        return self


class ModelSpec(Spec):
    """A decoder-only transformer. Parameter counts are computed from these fields
    (``inferencesize.transformer``); ``published_params_b`` is the vendor figure, for a check."""

    id: Id
    name: str
    aliases: list[str] = Field(default_factory=list)
    hf_id: str | None = None
    num_layers: Layers
    hidden_size: Width
    intermediate_size: Width = Field(
        description="dense FFN width (for MoE models: width of the dense layers, if any)"
    )
    num_attention_heads: Heads
    num_kv_heads: Heads
    head_dim: Width = Field(description="explicit: not always hidden / heads")
    vocab_size: Vocab
    max_context: Tokens
    tie_embeddings: bool
    attention: AttentionKind
    activation: Activation = "swiglu"
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norms_per_layer: Annotated[Int, Field(ge=1, le=4)] = 2
    qk_norm: bool = False
    attention_bias: bool = Field(default=False, description="biases on Q, K, V projections")
    attention_output_bias: bool = False
    mlp_bias: bool = False
    lm_head_bias: bool = False
    attention_sinks: bool = False
    parallel_attention: bool = Field(
        default=False,
        description="attention and MLP read the same input and their outputs are added"
        " (GPT-J, GPT-NeoX, Falcon): tensor parallelism needs one all-reduce per layer, not two",
    )
    learned_position_embeddings: TokenCount = Field(
        default=0, description="rows of a learned position table (GPT-3: 2048); 0 for RoPE/ALiBi"
    )
    attention_output_gate: bool = Field(
        default=False,
        description="q_proj also emits a sigmoid gate per attention output (Qwen3-Next, Qwen3.5)",
    )
    sliding_window: SlidingWindow | None = None
    moe: MoE | None = None
    mla: MLA | None = None
    sparse_attention: SparseAttention | None = None
    linear_attention: LinearAttention | None = None
    mtp_layers: LayerCount = Field(
        default=0,
        description="multi-token-prediction modules shipped with the checkpoint"
        " (num_nextn_predict_layers); not in the totals, used only as speculative-decoding heads",
    )
    published_params_b: PositiveFloat | None = Field(
        default=None, description="the vendor's stated total size in 1e9 parameters"
    )
    published_active_params_b: PositiveFloat | None = None
    source: Source

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        heads, kv = self.num_attention_heads, self.num_kv_heads
        if heads % kv != 0:
            raise ValueError(
                f"num_kv_heads: must divide num_attention_heads (got {kv} and {heads})"
            )
        expected = {
            "MHA": kv == heads,
            "GQA": 1 < kv < heads,
            "MQA": kv == 1,
            "MLA": self.mla is not None,
        }[self.attention]
        if not expected:
            raise ValueError(
                "attention: MLA needs an mla block"
                if self.attention == "MLA"
                else f"attention: {self.attention} does not fit num_kv_heads={kv} with "
                f"num_attention_heads={heads} (MHA: equal, GQA: between, MQA: 1)"
            )
        if self.mla is not None and self.attention != "MLA":
            raise ValueError("mla: needs attention: MLA")
        if self.moe is not None and self.moe.first_k_dense_layers >= self.num_layers:
            raise ValueError(
                f"moe.first_k_dense_layers: must be below num_layers "
                f"(got {self.moe.first_k_dense_layers} >= {self.num_layers})"
            )
        if self.sparse_attention is not None and self.mla is None:
            raise ValueError("sparse_attention: DeepSeek Sparse Attention needs an mla block")
        if self.linear_attention is not None and self.sliding_window is not None:
            raise ValueError(
                "linear_attention: cannot be combined with sliding_window (give one layer kind)"
            )
        return self

    @property
    def gated_mlp(self) -> bool:
        return self.activation in GATED_ACTIVATIONS
