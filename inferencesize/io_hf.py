"""Import a HuggingFace ``config.json`` (read offline) as a model catalog entry.

Supported families, by ``model_type`` (or ``architectures[0]`` when it is missing): Llama
(incl. Llama 3.x rope scaling), Mistral, Mixtral, Qwen2, Qwen3, Qwen2-MoE, Qwen3-MoE,
Qwen3-Next and Qwen3.5-MoE (Gated DeltaNet linear attention), DeepSeek-V2/V3 and Kimi K2 (MLA
+ MoE), DeepSeek-V3.2 and GLM-5 (MLA + DeepSeek Sparse Attention), GLM-4.5/4.6/4.7, MiniMax-M2,
gpt-oss, Gemma, Gemma 2, Gemma 3 and Llama 4 (Gemma 3, Llama 4 and Qwen3.5 read
``text_config`` of the multimodal checkpoints). The mapping follows the HF modelling code of each
family (``transformers/models/<family>/``):

- ``head_dim`` is the config's own field when present, else hidden_size // num_attention_heads
  (MLA: qk_nope_head_dim + qk_rope_head_dim, the query/key width per head);
- the attention kind follows from the head counts (MHA equal, MQA one KV head, GQA between) or
  is MLA when the config has ``kv_lora_rank``;
- sliding / chunked attention becomes ``local_layers`` of every ``every`` layers, derived from
  ``layer_types`` when the config lists them, else from the family's rule (Gemma 2 and gpt-oss:
  1 of 2; Gemma 3: sliding_window_pattern − 1 of sliding_window_pattern; Llama 4:
  attention_chunk_size on 3 of every no_rope_layer_interval = 4; Mistral: every layer);
- a window that is not shorter than the context is dropped (it never limits anything);
- linear-attention layers come from ``layer_types`` (``linear_attention``) or
  ``full_attention_interval``; only the pattern "every k-th layer is full attention" fits;
- multi-token-prediction layers (``num_nextn_predict_layers``, ``mtp_num_hidden_layers``)
  become ``mtp_layers``.

Every number read must be a whole number under the schema's ceiling for its kind (layers at
most 1,000, heads 100,000, widths 1,000,000, experts 100,000, tokens 100,000,000:
``specs.common``), checked as it is read, before any list is built from it; a number of more
than 100 digits is refused without converting it.

Known approximations: DeepSeek ``moe_layer_freq`` > 1 places MoE layers by the schema's
interleave rule (the count may differ by one); Llama 4's QK norm has no weights and is left out.
``published_params_b`` is never set: the vendor figure is not in config.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from inferencesize.catalog import display_path, format_validation_error, read_text
from inferencesize.errors import CatalogError, InputError
from inferencesize.specs import ModelSpec
from inferencesize.specs.common import (
    MAX_COUNT,
    MAX_EXPERTS,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WIDTH,
    brief,
)

DEFAULT_SOURCE = "config.json imported by infersize catalog import-hf"

#: architectures[0] -> model_type, for configs without ``model_type``.
ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa",
    "Glm4MoeForCausalLM": "glm4_moe",
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "GptOssForCausalLM": "gpt_oss",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Llama4ForCausalLM": "llama4_text",
    "Llama4ForConditionalGeneration": "llama4",
}

#: DeepSeek-V3 descendants whose router has e_score_correction_bias when topk_method is absent.
NOAUX_FAMILIES: frozenset[str] = frozenset(
    {"deepseek_v3", "deepseek_v32", "glm_moe_dsa", "kimi_k2"}
)

#: Multimodal wrappers whose language model lives under ``text_config``.
NESTED: frozenset[str] = frozenset({"gemma3", "llama4", "qwen3_5_moe"})

#: HF config defaults for fields real checkpoints omit (Gemma3TextConfig, Llama4TextConfig).
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3": {
        "vocab_size": 262_208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131_072,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
    },
    "llama4": {
        "num_local_experts": 16,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 1,
        "no_rope_layer_interval": 4,
    },
}

#: Fields whose catalog name differs from the config.json name (for located errors).
JSON_NAMES: dict[str, str] = {
    "num_layers": "num_hidden_layers",
    "num_kv_heads": "num_key_value_heads",
    "max_context": "max_position_embeddings",
    "tie_embeddings": "tie_word_embeddings",
    "moe.top_k": "num_experts_per_tok",
}

#: config.json key -> the largest value read (the schema's ceiling for its kind); other keys:
#: :data:`MAX_COUNT`.
CEILINGS: dict[str, int] = {
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "first_k_dense_replace",
            "moe_layer_freq",
            "decoder_sparse_step",
            "interleave_moe_layer_step",
            "max_window_layers",
            "sliding_window_pattern",
            "no_rope_layer_interval",
            "full_attention_interval",
            "linear_conv_kernel_dim",
            "num_nextn_predict_layers",
            "mtp_num_hidden_layers",
            "index_topk_freq",
        ),
        MAX_LAYERS,
    ),
    **dict.fromkeys(
        (
            "num_attention_heads",
            "num_key_value_heads",
            "linear_num_key_heads",
            "linear_num_value_heads",
            "index_n_heads",
        ),
        MAX_HEADS,
    ),
    **dict.fromkeys(
        (
            "hidden_size",
            "intermediate_size",
            "intermediate_size_mlp",
            "head_dim",
            "moe_intermediate_size",
            "shared_expert_intermediate_size",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "index_head_dim",
        ),
        MAX_WIDTH,
    ),
    "vocab_size": MAX_VOCAB,
    **dict.fromkeys(
        (
            "num_local_experts",
            "num_experts",
            "n_routed_experts",
            "num_experts_per_tok",
            "experts_per_token",
            "n_shared_experts",
        ),
        MAX_EXPERTS,
    ),
    **dict.fromkeys(
        ("max_position_embeddings", "sliding_window", "attention_chunk_size", "index_topk"),
        MAX_TOKENS,
    ),
}
#: Digits of the longest integer config.json may hold (Python refuses to convert > 4,300).
MAX_DIGITS = 100


class _LongNumber:
    """An integer of more than :data:`MAX_DIGITS` digits in config.json, kept unconverted."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"a number of {self.digits:,} digits"


def _parse_int(text: str) -> int | _LongNumber:
    return int(text) if len(text) <= MAX_DIGITS else _LongNumber(len(text.lstrip("-")))


_HF_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_LOCAL_TYPES = frozenset({"sliding_attention", "chunked_attention"})

_MEANINGS: dict[str, str] = {
    "num_hidden_layers": "number of transformer layers",
    "hidden_size": "width of the residual stream",
    "intermediate_size": "width of the feed-forward block",
    "intermediate_size_mlp": "width of the dense feed-forward layers",
    "num_attention_heads": "number of query heads",
    "vocab_size": "number of tokens in the vocabulary",
    "max_position_embeddings": "longest context in tokens",
    "num_local_experts": "routed experts per MoE layer",
    "num_experts": "routed experts per MoE layer",
    "n_routed_experts": "routed experts per MoE layer",
    "num_experts_per_tok": "experts each token is routed to",
    "experts_per_token": "experts each token is routed to",
    "moe_intermediate_size": "width of one routed expert",
    "kv_lora_rank": "rank of the compressed KV latent (MLA)",
    "qk_rope_head_dim": "rotary part of the query/key head (MLA)",
    "qk_nope_head_dim": "non-rotary part of the query/key head (MLA)",
    "v_head_dim": "value head width (MLA)",
    "index_topk": "tokens each query attends (DeepSeek Sparse Attention)",
    "index_n_heads": "heads of the sparse-attention indexer",
    "index_head_dim": "key width of the sparse-attention indexer",
    "linear_num_key_heads": "key heads of a linear-attention layer",
    "linear_num_value_heads": "value heads of a linear-attention layer",
    "linear_key_head_dim": "key head width of a linear-attention layer",
    "linear_value_head_dim": "value head width of a linear-attention layer",
    "text_config": "the language model's settings",
}


class HfConfig:
    """Typed, located access to one config.json mapping (or its ``text_config``)."""

    def __init__(self, data: dict[str, Any], shown: str, family: str, *, prefix: str = "") -> None:
        self.data = data
        self.shown = shown
        self.family = family
        self.prefix = prefix
        self.defaults = FAMILY_DEFAULTS.get(family.removesuffix("_text"), {})

    def error(self, key: str, problem: str) -> CatalogError:
        return CatalogError(self.shown, self.prefix + key, problem)

    def raw(self, key: str) -> Any:
        """The value, the family default when absent or null, else None."""
        value = self.data.get(key)
        return self.defaults.get(key) if value is None else value

    def has(self, key: str) -> bool:
        return self.raw(key) is not None

    def required(self, key: str) -> int:
        if not self.has(key):
            meaning = _MEANINGS.get(key, key.replace("_", " "))
            raise self.error(key, f"required in config.json for {self.family} ({meaning})")
        return self.integer(key, 1)

    def optional(self, key: str, default: int, minimum: int = 1) -> int:
        return self.integer(key, minimum) if self.has(key) else default

    def integer(self, key: str, minimum: int) -> int:
        value = self.raw(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected a whole number (got {brief(value)})")
        if value < minimum:
            what = "positive" if minimum == 1 else f"at least {minimum}"
            raise self.error(key, f"must be {what} (got {value})")
        ceiling = CEILINGS.get(key, MAX_COUNT)
        if value > ceiling:
            raise self.error(key, f"must be at most {ceiling:,} (got {value:,})")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false (got {brief(value)})")
        return value

    def first_of(self, keys: Sequence[str]) -> str:
        """The first of ``keys`` the config has (the first one if none)."""
        return next((k for k in keys if self.has(k)), keys[0])

    def int_list(self, key: str) -> list[int]:
        value = self.raw(key) or []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self.error(key, f"expected a list of whole numbers (got {brief(value)})")
        if len(value) > MAX_LAYERS or any(abs(v) > MAX_COUNT for v in value):
            raise self.error(
                key, f"at most {MAX_LAYERS:,} entries of at most {MAX_COUNT:,} (one per layer)"
            )
        return value

    def layer_flags(self, num_layers: int, rule: Callable[[int], bool]) -> list[bool]:
        """Which layers are local: from ``layer_types`` if listed, else ``rule(layer)``."""
        types = self.raw("layer_types")
        if types is None:
            return [rule(i) for i in range(num_layers)]
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise self.error("layer_types", f"expected a list of strings (got {brief(types)})")
        if len(types) > MAX_LAYERS:
            raise self.error(
                "layer_types", f"has {len(types):,} entries, at most {MAX_LAYERS:,} (one per layer)"
            )
        if len(types) != num_layers:
            raise self.error(
                "layer_types",
                f"has {len(types)} entries, expected one per layer ({num_layers})",
            )
        return [t in _LOCAL_TYPES for t in types]


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


def _core(
    c: HfConfig, *, tie_default: bool, intermediate_key: str = "intermediate_size"
) -> dict[str, Any]:
    """The fields every family has, in catalog order."""
    num_layers = c.required("num_hidden_layers")
    hidden = c.required("hidden_size")
    intermediate = c.required(intermediate_key)
    heads = c.required("num_attention_heads")
    kv_heads = c.optional("num_key_value_heads", heads)
    if c.has("head_dim"):
        head_dim = c.integer("head_dim", 1)
    elif hidden >= heads:
        head_dim = hidden // heads
    else:
        raise c.error("head_dim", "required when num_attention_heads exceeds hidden_size")
    return {
        "num_layers": num_layers,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_attention_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": c.required("vocab_size"),
        "max_context": c.required("max_position_embeddings"),
        "tie_embeddings": c.flag("tie_word_embeddings", tie_default),
        "attention": _attention_kind(heads, kv_heads),
        "activation": "swiglu",
    }


def _attention_kind(heads: int, kv_heads: int) -> str:
    if kv_heads == heads:
        return "MHA"
    return "MQA" if kv_heads == 1 else "GQA"


def _period(flags: Sequence[bool]) -> int:
    """The shortest repeat length of a layer pattern (len(flags) when it does not repeat)."""
    n = len(flags)
    return next(p for p in range(1, n + 1) if all(flags[i] == flags[i % p] for i in range(n)))


def _window(
    entry: dict[str, Any], tokens: int | None, flags: Sequence[bool], kind: str = "sliding"
) -> dict[str, Any] | None:
    """A SlidingWindow block: ``local_layers`` of every ``every`` (pattern of ``flags``).

    None when there is no window, no local layer, or the window is not shorter than the context.
    """
    if tokens is None or not any(flags) or tokens >= entry["max_context"]:
        return None
    every = _period(flags)
    block: dict[str, Any] = {"tokens": tokens, "local_layers": sum(flags[:every]), "every": every}
    if kind != "sliding":
        block["kind"] = kind
    return block


def _moe(
    *,
    num_experts: int,
    top_k: int,
    width: int,
    shared: int = 0,
    shared_width: int | None = None,
    first_dense: int = 0,
    step: int = 1,
    router_bias: bool = False,
    expert_bias: bool = False,
) -> dict[str, Any]:
    """A MoE block with only the fields that differ from the schema defaults."""
    block: dict[str, Any] = {"num_experts": num_experts, "top_k": top_k}
    if shared:
        block["shared_experts"] = shared
    block["expert_intermediate_size"] = width
    if shared and shared_width is not None and shared_width != width:
        block["shared_expert_intermediate_size"] = shared_width
    if first_dense:
        block["first_k_dense_layers"] = first_dense
    if step != 1:
        block["layer_step"] = step
    if router_bias:
        block["router_bias"] = True
    if expert_bias:
        block["expert_bias"] = True
    return block


def _biases(entry: dict[str, Any], qkv: bool, out: bool, mlp: bool = False) -> None:
    if qkv:
        entry["attention_bias"] = True
    if out:
        entry["attention_output_bias"] = True
    if mlp:
        entry["mlp_bias"] = True


def _first_dense(c: HfConfig, num_layers: int) -> int:
    """Qwen-MoE ``mlp_only_layers`` as a count of leading dense layers (all the schema holds)."""
    dense = sorted(set(c.int_list("mlp_only_layers")))
    if dense != list(range(len(dense))) or len(dense) >= num_layers:
        raise c.error(
            "mlp_only_layers",
            f"only leading dense layers (0, 1, …, k-1) can be imported (got {dense})",
        )
    return len(dense)


# ---------------------------------------------------------------------------------------------
# Families
# ---------------------------------------------------------------------------------------------


def _llama(c: HfConfig) -> dict[str, Any]:
    entry = _core(c, tie_default=False)
    bias = c.flag("attention_bias", False)
    _biases(entry, bias, bias, c.flag("mlp_bias", False))
    return entry


def _mistral(c: HfConfig) -> dict[str, Any]:
    entry = _core(c, tie_default=False)
    window = c.optional("sliding_window", 0) or None
    entry["sliding_window"] = _window(entry, window, [True] * entry["num_layers"])
    return entry


def _mixtral(c: HfConfig) -> dict[str, Any]:
    entry = _mistral(c)
    entry["moe"] = _moe(
        num_experts=c.required("num_local_experts"),
        top_k=c.required("num_experts_per_tok"),
        width=entry["intermediate_size"],
    )
    return entry


def _qwen_window(c: HfConfig, entry: dict[str, Any]) -> dict[str, Any] | None:
    """Qwen2/3: with use_sliding_window, layers from max_window_layers on are local."""
    if not c.flag("use_sliding_window", False):
        return None
    n = entry["num_layers"]
    start = c.optional("max_window_layers", n, minimum=0)
    tokens = c.optional("sliding_window", 0) or None
    return _window(entry, tokens, c.layer_flags(n, lambda i: i >= start))


def _qwen2(c: HfConfig) -> dict[str, Any]:
    entry = _core(c, tie_default=False)
    _biases(entry, qkv=True, out=False)  # Qwen2 always has q/k/v biases
    entry["sliding_window"] = _qwen_window(c, entry)
    return entry


def _qwen3(c: HfConfig) -> dict[str, Any]:
    entry = _core(c, tie_default=False)
    entry["qk_norm"] = True
    bias = c.flag("attention_bias", False)
    _biases(entry, bias, bias)
    entry["sliding_window"] = _qwen_window(c, entry)
    return entry


def _qwen_moe_block(c: HfConfig, entry: dict[str, Any]) -> dict[str, Any]:
    shared_width = c.optional("shared_expert_intermediate_size", 0, minimum=0)
    return _moe(
        num_experts=c.required("num_experts"),
        top_k=c.required("num_experts_per_tok"),
        width=c.required("moe_intermediate_size"),
        shared=1 if shared_width else 0,
        shared_width=shared_width or None,
        first_dense=_first_dense(c, entry["num_layers"]),
        step=c.optional("decoder_sparse_step", 1),
    )


def _qwen2_moe(c: HfConfig) -> dict[str, Any]:
    entry = _qwen2(c)
    entry["moe"] = _qwen_moe_block(c, entry)
    return entry


def _qwen3_moe(c: HfConfig) -> dict[str, Any]:
    entry = _qwen3(c)
    entry["moe"] = _qwen_moe_block(c, entry)
    return entry


def _deepseek(c: HfConfig) -> dict[str, Any]:
    """DeepSeek-V2/V3: MLA attention, shared + routed experts after k dense layers."""
    entry = _core(c, tie_default=False)
    rope = c.required("qk_rope_head_dim")
    nope = c.required("qk_nope_head_dim")
    entry["head_dim"] = rope + nope
    entry["attention"] = "MLA"
    method = c.raw("topk_method")
    noaux = method == "noaux_tc" or (method is None and c.family in NOAUX_FAMILIES)
    entry["moe"] = _moe(
        num_experts=c.required("n_routed_experts"),
        top_k=c.required("num_experts_per_tok"),
        width=c.required("moe_intermediate_size"),
        shared=c.optional("n_shared_experts", 0, minimum=0),
        first_dense=c.optional("first_k_dense_replace", 0, minimum=0),
        step=c.optional("moe_layer_freq", 1),
        router_bias=noaux,  # e_score_correction_bias
    )
    mla: dict[str, Any] = {"kv_lora_rank": c.required("kv_lora_rank")}
    if c.has("q_lora_rank"):
        mla["q_lora_rank"] = c.integer("q_lora_rank", 1)
    mla.update(qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=c.required("v_head_dim"))
    entry["mla"] = mla
    _mtp(c, entry, "num_nextn_predict_layers")
    return entry


def _mtp(c: HfConfig, entry: dict[str, Any], key: str) -> None:
    """Multi-token-prediction layers shipped with the checkpoint (counted apart)."""
    layers = c.optional(key, 0, minimum=0)
    if layers:
        entry["mtp_layers"] = layers


def _deepseek_sparse(c: HfConfig) -> dict[str, Any]:
    """DeepSeek-V3.2 / GLM-5: DeepSeek-V3 plus the sparse-attention indexer on every layer."""
    entry = _deepseek(c)
    freq = c.optional("index_topk_freq", 1)
    types = c.raw("indexer_types")
    if freq != 1 or (isinstance(types, list) and any(t != "full" for t in types)):
        key = "index_topk_freq" if freq != 1 else "indexer_types"
        raise c.error(
            key,
            "only an indexer on every layer can be imported (indexers shared across layers"
            " are not modelled)",
        )
    entry["sparse_attention"] = {
        "top_k": c.required("index_topk"),
        "index_heads": c.required("index_n_heads"),
        "index_head_dim": c.required("index_head_dim"),
    }
    return entry


def _glm4_moe(c: HfConfig) -> dict[str, Any]:
    """GLM-4.5/4.6/4.7: GQA with Q/K/V biases (and optional Q/K norm), sigmoid-routed experts
    with a correction bias and one shared expert after k dense layers."""
    entry = _core(c, tie_default=False)
    _biases(entry, c.flag("attention_bias", False), False)
    if c.flag("use_qk_norm", False):
        entry["qk_norm"] = True
    entry["moe"] = _moe(
        num_experts=c.required("n_routed_experts"),
        top_k=c.required("num_experts_per_tok"),
        width=c.required("moe_intermediate_size"),
        shared=c.optional("n_shared_experts", 0, minimum=0),
        first_dense=c.optional("first_k_dense_replace", 0, minimum=0),
        router_bias=True,  # e_score_correction_bias
    )
    _mtp(c, entry, "num_nextn_predict_layers")
    return entry


def _minimax_m2(c: HfConfig) -> dict[str, Any]:
    """MiniMax-M2: GQA with Q/K norm, every layer MoE, sigmoid router with a correction bias.
    Its MTP modules (num_mtp_modules) are not imported: their structure is not in config.json."""
    entry = _core(c, tie_default=False)
    entry["qk_norm"] = True
    entry["moe"] = _moe(
        num_experts=c.required("num_local_experts"),
        top_k=c.required("num_experts_per_tok"),
        width=entry["intermediate_size"],
        router_bias=c.flag("use_routing_bias", True),
    )
    return entry


def _full_attention_every(c: HfConfig, num_layers: int) -> int:
    """k such that layer i is full attention when (i + 1) % k == 0, the rest linear."""
    types = c.raw("layer_types")
    if types is None:
        return c.required("full_attention_interval")
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise c.error("layer_types", f"expected a list of strings (got {brief(types)})")
    if len(types) != num_layers:
        raise c.error(
            "layer_types", f"has {len(types)} entries, expected one per layer ({num_layers})"
        )
    unknown = sorted(set(types) - {"linear_attention", "full_attention"})
    if unknown:
        raise c.error(
            "layer_types",
            f"unsupported layer type {brief(unknown[0])} (linear_attention, full_attention)",
        )
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    every = full[0] + 1 if full else 0
    if not full or full != list(range(every - 1, num_layers, every)):
        raise c.error(
            "layer_types",
            "only 'every k-th layer is full attention, the others linear' can be imported",
        )
    return every


def _qwen3_next(c: HfConfig) -> dict[str, Any]:
    """Qwen3-Next / Qwen3.5-MoE: Gated DeltaNet layers with a gated-attention layer every k,
    every layer MoE with a gated shared expert (Qwen3.5 has no dense FFN width: the expert's)."""
    width = c.first_of(("intermediate_size", "moe_intermediate_size"))
    entry = _core(c, tie_default=False, intermediate_key=width)
    entry["qk_norm"] = True
    if c.flag("attn_output_gate", True):
        entry["attention_output_gate"] = True
    entry["linear_attention"] = {
        "full_attention_every": _full_attention_every(c, entry["num_layers"]),
        "num_key_heads": c.required("linear_num_key_heads"),
        "num_value_heads": c.required("linear_num_value_heads"),
        "key_head_dim": c.required("linear_key_head_dim"),
        "value_head_dim": c.required("linear_value_head_dim"),
        "conv_kernel": c.optional("linear_conv_kernel_dim", 4),
    }
    moe = _qwen_moe_block(c, entry)
    if moe.get("shared_experts"):
        moe["shared_expert_gate"] = True
    entry["moe"] = moe
    _mtp(c, entry, "mtp_num_hidden_layers")
    return entry


def _gpt_oss(c: HfConfig) -> dict[str, Any]:
    entry = _core(c, tie_default=False)
    bias = c.flag("attention_bias", True)
    _biases(entry, bias, bias)
    entry["attention_sinks"] = True
    flags = c.layer_flags(entry["num_layers"], lambda i: (i + 1) % 2 != 0)
    entry["sliding_window"] = _window(entry, c.optional("sliding_window", 128), flags)
    entry["moe"] = _moe(
        num_experts=c.required("num_local_experts"),
        top_k=c.required(c.first_of(("experts_per_token", "num_experts_per_tok"))),
        width=entry["intermediate_size"],
        router_bias=True,
        expert_bias=True,
    )
    return entry


def _gemma(c: HfConfig) -> dict[str, Any]:
    entry = _core(c, tie_default=True)
    entry["activation"] = "geglu"
    bias = c.flag("attention_bias", False)
    _biases(entry, bias, bias)
    return entry


def _gemma2(c: HfConfig) -> dict[str, Any]:
    entry = _gemma(c)
    entry["norms_per_layer"] = 4  # input, post-attention, pre- and post-feed-forward
    flags = c.layer_flags(entry["num_layers"], lambda i: (i + 1) % 2 != 0)
    entry["sliding_window"] = _window(entry, c.optional("sliding_window", 4096), flags)
    return entry


def _gemma3(c: HfConfig) -> dict[str, Any]:
    entry = _gemma(c)
    entry["norms_per_layer"] = 4
    entry["qk_norm"] = True
    pattern = c.optional("sliding_window_pattern", 6)
    flags = c.layer_flags(entry["num_layers"], lambda i: (i + 1) % pattern != 0)
    entry["sliding_window"] = _window(entry, c.optional("sliding_window", 4096), flags)
    return entry


def _llama4(c: HfConfig) -> dict[str, Any]:
    entry = _core(c, tie_default=False)
    n = entry["num_layers"]
    step = c.optional("interleave_moe_layer_step", 1)
    moe_layers = c.int_list("moe_layers")
    if moe_layers and moe_layers != list(range(step - 1, n, step)):
        raise c.error(
            "moe_layers",
            f"only every {step}th layer (interleave_moe_layer_step) can be MoE (got {moe_layers})",
        )
    if step > 1:
        entry["intermediate_size"] = c.required("intermediate_size_mlp")
    entry["moe"] = _moe(
        num_experts=c.required("num_local_experts"),
        top_k=c.required("num_experts_per_tok"),
        width=c.required("intermediate_size"),
        shared=1,  # one always-on shared expert per MoE layer
        step=step,
    )
    if c.has("attention_chunk_size"):
        interval = c.optional("no_rope_layer_interval", 4)
        no_rope = c.int_list("no_rope_layers")
        if no_rope:  # 1 = RoPE layer = chunked local attention; 0 = global NoPE layer
            flags = [bool(v) for v in no_rope]
        else:
            flags = [(i + 1) % interval != 0 for i in range(n)]
        if len(flags) != n:
            raise c.error("no_rope_layers", f"has {len(flags)} entries, expected {n}")
        chunk = c.integer("attention_chunk_size", 1)
        entry["sliding_window"] = _window(entry, chunk, flags, kind="chunked")
    return entry


FAMILIES: dict[str, Callable[[HfConfig], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen2_moe": _qwen2_moe,
    "qwen3_moe": _qwen3_moe,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "kimi_k2": _deepseek,
    "deepseek_v32": _deepseek_sparse,
    "glm_moe_dsa": _deepseek_sparse,
    "glm4_moe": _glm4_moe,
    "minimax_m2": _minimax_m2,
    "qwen3_next": _qwen3_next,
    "qwen3_5_moe": _qwen3_next,
    "qwen3_5_moe_text": _qwen3_next,
    "gpt_oss": _gpt_oss,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3,
    "llama4": _llama4,
    "llama4_text": _llama4,
}


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def model_type_of(config: dict[str, Any], shown: str) -> str:
    """The family key: ``model_type``, else derived from ``architectures[0]``."""
    supported = ", ".join(sorted(FAMILIES))
    model_type = config.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise CatalogError(
            shown,
            "model_type",
            f"expected a string naming the architecture family (got {brief(model_type)});"
            f" supported: {supported}",
        )
    if model_type is None:
        archs = config.get("architectures")
        first = archs[0] if isinstance(archs, list) and archs else None
        model_type = ARCHITECTURES.get(first) if isinstance(first, str) else None
        if model_type is None:
            raise CatalogError(
                shown,
                "model_type",
                f"required in config.json (the architecture family); supported: {supported}",
            )
    if model_type not in FAMILIES:
        raise CatalogError(
            shown,
            "model_type",
            f"unsupported model type {brief(model_type)}; supported: {supported}",
        )
    return str(model_type)


def _settings(config: dict[str, Any], shown: str, family: str) -> HfConfig:
    """The mapping that holds the language model (``text_config`` for multimodal wrappers)."""
    if family not in NESTED:
        return HfConfig(config, shown, family)
    text = config.get("text_config")
    if not isinstance(text, dict):
        top = HfConfig(config, shown, family)
        if text is not None:
            raise top.error("text_config", f"expected a JSON object (got {brief(text)})")
        meaning = _MEANINGS["text_config"]
        raise top.error("text_config", f"required in config.json for {family} ({meaning})")
    merged = dict(text)
    if "tie_word_embeddings" not in merged and "tie_word_embeddings" in config:
        merged["tie_word_embeddings"] = config["tie_word_embeddings"]
    return HfConfig(merged, shown, family, prefix="text_config.")


def hf_id_of(config: dict[str, Any]) -> str | None:
    """``_name_or_path`` when it is a Hub id (``org/name``), not a local path."""
    value = config.get("_name_or_path")
    return value if isinstance(value, str) and _HF_ID.match(value) else None


def model_entry_from_hf(
    config: dict[str, Any],
    ident: str,
    shown: str,
    *,
    name: str | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """Map a parsed config.json to a ModelSpec mapping (catalog key order, defaults left out).

    ``shown`` is the file name used in errors. Raises CatalogError naming the config.json field
    when a required field is missing or has the wrong type. The result is not yet validated.
    """
    family = model_type_of(config, shown)
    settings = _settings(config, shown, family)
    body = FAMILIES[family](settings)
    hf_id = hf_id_of(config)
    entry: dict[str, Any] = {"id": ident, "name": name or _default_name(hf_id, ident)}
    if hf_id:
        entry["hf_id"] = hf_id
        entry["aliases"] = [hf_id]
    entry.update({k: v for k, v in body.items() if v is not None})
    entry["source"] = source or _default_source(hf_id)
    return entry


def _default_name(hf_id: str | None, ident: str) -> str:
    return hf_id.rsplit("/", 1)[-1] if hf_id else ident


def _default_source(hf_id: str | None) -> str:
    if hf_id:
        return f"https://huggingface.co/{hf_id}/blob/main/config.json"
    return DEFAULT_SOURCE


def validate_entry(entry: dict[str, Any], shown: str, prefix: str = "") -> ModelSpec:
    """Validate a converted entry, naming the config.json field where one corresponds."""
    try:
        return ModelSpec.model_validate(entry)
    except ValidationError as err:
        path, msg = format_validation_error(err, ModelSpec)
        raise CatalogError(shown, prefix + JSON_NAMES.get(path, path), msg) from None


def read_config(path: Path) -> dict[str, Any]:
    """Read a config.json object; every failure is a located CatalogError."""
    shown, text = read_text(path, "a config.json file")
    if not text.strip():
        raise CatalogError(shown, "", "is empty, expected a JSON object of fields")
    try:
        data = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as err:
        where = f"{shown}:{err.lineno}:{err.colno}"
        raise CatalogError(where, "", f"JSON syntax error: {err.msg}") from None
    except RecursionError:
        raise CatalogError(shown, "", "nested too deeply to read") from None
    if not isinstance(data, dict):
        kind = "list" if isinstance(data, list) else type(data).__name__
        raise CatalogError(shown, "", f"expected a JSON object of fields, got a {kind}")
    return data


def import_hf_yaml(path: Path, ident: str, *, name: str | None, source: str | None) -> str:
    """The YAML text of a validated catalog entry for the model in a config.json."""
    if not _ID.match(ident):
        raise InputError(
            f"--id: {brief(ident)} is not a valid catalog id "
            "(lowercase letters, digits, '.', '_' and '-', starting with a letter or digit)"
        )
    config = read_config(path)
    shown = display_path(path)
    entry = model_entry_from_hf(config, ident, shown, name=name, source=source)
    family = model_type_of(config, shown)
    validate_entry(entry, shown, "text_config." if family in NESTED else "")
    return to_yaml(entry)


def to_yaml(entry: dict[str, Any]) -> str:
    """Block-style YAML in the entry's key order (long strings are not wrapped)."""
    return yaml.safe_dump(entry, sort_keys=False, allow_unicode=True, width=10_000)
