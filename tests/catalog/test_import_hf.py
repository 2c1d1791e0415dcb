"""`catalog import-hf`: published config.json files convert to the shipped catalog entries.

The fixtures in tests/fixtures/hf/ are the public config.json files, verbatim:
https://huggingface.co/<repo>/blob/main/config.json for meta-llama/Llama-3.1-8B,
mistralai/Mixtral-8x7B-v0.1, Qwen/Qwen3-30B-A3B, deepseek-ai/DeepSeek-V3 and openai/gpt-oss-120b.
Hand-made from the real config.json fields (the values each shipped entry's ``source`` cites;
some published copies are abridged): Qwen/Qwen3-Next-80B-A3B, Qwen/Qwen3-Coder-480B-A35B-Instruct,
moonshotai/Kimi-K2-Instruct, zai-org/GLM-4.7, deepseek-ai/DeepSeek-V3.2-Exp (DeepSeek-V3's
file with the three indexer fields), zai-org/GLM-5, Qwen/Qwen3.5-397B-A17B (text_config) and
MiniMaxAI/MiniMax-M2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from inferencesize.catalog import load_catalog
from inferencesize.cli import app
from inferencesize.errors import CatalogError
from inferencesize.io_hf import model_entry_from_hf, validate_entry
from inferencesize.specs import ModelSpec
from inferencesize.transformer import active_params, local_attention_layers, total_params

HF = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
NOT_ARCHITECTURE = {
    "id",
    "name",
    "aliases",
    "hf_id",
    "source",
    "published_params_b",
    "published_active_params_b",
}
SHIPPED = [
    "llama-3.1-8b",
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "deepseek-v3",
    "gpt-oss-120b",
    "qwen3-next-80b-a3b",
    "qwen3-coder-480b-a35b",
    "kimi-k2",
    "glm-4.7",
    "deepseek-v3.2",
    "glm-5",
    "qwen3.5-397b-a17b",
    "minimax-m2",
]


def _convert(config: dict[str, Any], ident: str = "x") -> ModelSpec:
    return validate_entry(model_entry_from_hf(config, ident, "config.json"), "config.json")


def _fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HF / f"{name}.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def shipped() -> dict[str, ModelSpec]:
    return load_catalog(include_builtin=True).models


@pytest.mark.parametrize("ident", SHIPPED)
def test_conversion_equals_shipped_entry(ident: str, shipped: dict[str, ModelSpec]) -> None:
    converted = _convert(_fixture(ident), ident).model_dump(exclude=NOT_ARCHITECTURE)
    expected = shipped[ident].model_dump(exclude=NOT_ARCHITECTURE)
    assert converted == expected


@pytest.mark.parametrize(
    ("ident", "total_b", "active_b"),
    [
        # computed from the architecture (reference/models.csv), not the marketing figures
        ("llama-3.1-8b", 8.03, 8.03),
        ("mixtral-8x7b", 46.70, 12.88),
        ("qwen3-30b-a3b", 30.53, 3.35),
        ("deepseek-v3", 671.03, 37.55),
        ("gpt-oss-120b", 116.83, 5.71),
    ],
)
def test_fixture_parameter_counts(ident: str, total_b: float, active_b: float) -> None:
    model = _convert(_fixture(ident))
    assert round(total_params(model) / 1e9, 2) == total_b
    assert round(active_params(model) / 1e9, 2) == active_b


def test_deepseek_v3_mla_and_moe_fields() -> None:
    model = _convert(_fixture("deepseek-v3"))
    assert model.attention == "MLA"
    assert model.head_dim == 128 + 64  # qk_nope_head_dim + qk_rope_head_dim
    assert model.mla is not None and model.mla.kv_lora_rank == 512
    assert model.mla.q_lora_rank == 1536
    assert model.moe is not None
    assert (model.moe.num_experts, model.moe.top_k, model.moe.shared_experts) == (256, 8, 1)
    assert model.moe.first_k_dense_layers == 3
    assert model.moe.router_bias  # topk_method noaux_tc: e_score_correction_bias


def test_gpt_oss_fields() -> None:
    model = _convert(_fixture("gpt-oss-120b"))
    assert model.sliding_window is not None
    sw = model.sliding_window
    assert (sw.tokens, sw.local_layers, sw.every) == (128, 1, 2)
    assert local_attention_layers(model) == 18  # 36 layers, alternating
    assert model.attention_sinks and model.attention_bias and model.attention_output_bias
    assert model.moe is not None and model.moe.router_bias and model.moe.expert_bias


# Architecture fields of other public configs (the fields that matter, not whole files), with
# the parameter counts of reference/models.csv.
FAMILY_CASES: dict[str, tuple[dict[str, Any], float, float]] = {
    "llama4-scout": (
        {
            "architectures": ["Llama4ForConditionalGeneration"],
            "model_type": "llama4",
            "tie_word_embeddings": False,
            "text_config": {
                "model_type": "llama4_text",
                "hidden_size": 5120,
                "intermediate_size": 8192,
                "intermediate_size_mlp": 16384,
                "num_hidden_layers": 48,
                "num_attention_heads": 40,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "vocab_size": 202048,
                "max_position_embeddings": 10485760,
                "num_local_experts": 16,
                "num_experts_per_tok": 1,
                "interleave_moe_layer_step": 1,
                "attention_chunk_size": 8192,
            },
        },
        107.77,
        17.17,
    ),
    "llama4-maverick": (
        {
            "model_type": "llama4",
            "text_config": {
                "hidden_size": 5120,
                "intermediate_size": 8192,
                "intermediate_size_mlp": 16384,
                "num_hidden_layers": 48,
                "num_attention_heads": 40,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "vocab_size": 202048,
                "max_position_embeddings": 1048576,
                "num_local_experts": 128,
                "num_experts_per_tok": 1,
                "interleave_moe_layer_step": 2,
                "attention_chunk_size": 8192,
            },
        },
        400.71,
        17.18,
    ),
    "gemma3-27b": (
        {
            "model_type": "gemma3",
            "text_config": {
                "model_type": "gemma3_text",
                "hidden_size": 5376,
                "intermediate_size": 21504,
                "num_hidden_layers": 62,
                "num_attention_heads": 32,
                "num_key_value_heads": 16,
                "head_dim": 128,
                "sliding_window": 1024,
            },
        },
        27.01,
        27.01,
    ),
    "gemma2-27b": (
        {
            "model_type": "gemma2",
            "hidden_size": 4608,
            "intermediate_size": 36864,
            "num_hidden_layers": 46,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "vocab_size": 256000,
            "max_position_embeddings": 8192,
            "sliding_window": 4096,
        },
        27.23,
        27.23,
    ),
    "qwen2.5-7b": (
        {
            "model_type": "qwen2",
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "vocab_size": 152064,
            "max_position_embeddings": 32768,
            "tie_word_embeddings": False,
            "use_sliding_window": False,
            "sliding_window": 131072,
            "max_window_layers": 28,
        },
        7.62,
        7.62,
    ),
    "mistral-7b-v0.1": (
        {
            "architectures": ["MistralForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32000,
            "max_position_embeddings": 32768,
            "sliding_window": 4096,
        },
        7.24,
        7.24,
    ),
}


@pytest.mark.parametrize("case", list(FAMILY_CASES))
def test_family_parameter_counts(case: str) -> None:
    config, total_b, active_b = FAMILY_CASES[case]
    model = _convert(config)
    assert round(total_params(model) / 1e9, 2) == total_b
    assert round(active_params(model) / 1e9, 2) == active_b


def test_local_attention_patterns() -> None:
    def local(case: str) -> int:
        return local_attention_layers(_convert(FAMILY_CASES[case][0]))

    assert local("gemma3-27b") == 62 - 62 // 6  # 5 of every 6 (sliding_window_pattern 6)
    assert local("gemma2-27b") == 23  # 1 of 2 over 46 layers
    assert local("llama4-scout") == 36  # chunked 3 of 4 over 48 layers
    assert local("mistral-7b-v0.1") == 32  # every layer
    assert local("qwen2.5-7b") == 0  # use_sliding_window false
    scout = _convert(FAMILY_CASES["llama4-scout"][0])
    assert scout.sliding_window is not None and scout.sliding_window.kind == "chunked"


def test_gemma_defaults() -> None:
    model = _convert(FAMILY_CASES["gemma2-27b"][0])
    assert model.tie_embeddings  # Gemma2Config default
    assert model.activation == "geglu"
    assert model.norms_per_layer == 4
    gemma3 = _convert(FAMILY_CASES["gemma3-27b"][0])
    assert gemma3.qk_norm and gemma3.vocab_size == 262208 and gemma3.max_context == 131072


LLAMA = {
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 8,
    "vocab_size": 100,
    "max_position_embeddings": 512,
}


@pytest.mark.parametrize(
    ("extra", "kind", "head_dim"),
    [
        ({}, "MHA", 8),  # num_key_value_heads defaults to the head count; 64 // 8
        ({"num_key_value_heads": 1}, "MQA", 8),
        ({"num_key_value_heads": 2, "head_dim": 32}, "GQA", 32),  # explicit head_dim wins
    ],
)
def test_attention_kind_and_head_dim(extra: dict[str, Any], kind: str, head_dim: int) -> None:
    model = _convert({**LLAMA, **extra})
    assert (model.attention, model.head_dim) == (kind, head_dim)


def test_hf_id_name_and_source_from_name_or_path() -> None:
    entry = model_entry_from_hf({**LLAMA, "_name_or_path": "org/Some-Model"}, "x", "c.json")
    assert entry["hf_id"] == "org/Some-Model"
    assert entry["aliases"] == ["org/Some-Model"]
    assert entry["name"] == "Some-Model"
    assert entry["source"] == "https://huggingface.co/org/Some-Model/blob/main/config.json"
    local = model_entry_from_hf({**LLAMA, "_name_or_path": "./"}, "x", "c.json")
    assert "hf_id" not in local
    assert local["source"] == "config.json imported by infersize catalog import-hf"
    named = model_entry_from_hf(LLAMA, "x", "c.json", name="N", source="https://example.org/c")
    assert (named["name"], named["source"]) == ("N", "https://example.org/c")
    assert "published_params_b" not in entry


def test_missing_field_in_text_config_is_located() -> None:
    config = {"model_type": "llama4", "text_config": {"hidden_size": 64}}
    with pytest.raises(CatalogError) as err:
        model_entry_from_hf(config, "x", "c.json")
    assert str(err.value) == (
        "c.json: text_config.num_hidden_layers: required in config.json for llama4"
        " (number of transformer layers)"
    )


# --- the command line ------------------------------------------------------------------------


def test_import_writes_a_valid_catalog_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = Path("models") / "my-oss.yaml"
    out.parent.mkdir()
    runner = CliRunner()
    args = ["catalog", "import-hf", str(HF / "gpt-oss-120b.json"), "--id", "my-oss"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {out}\n"
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert list(data)[:3] == ["id", "name", "num_layers"]
    assert list(data)[-1] == "source"
    checked = runner.invoke(app, ["catalog", "validate", str(out)])
    assert checked.exit_code == 0, checked.stderr
    assert checked.stdout == "ok: 1 entry valid\n"


def test_import_to_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app, ["catalog", "import-hf", str(HF / "mixtral-8x7b.json"), "--id", "mixtral-copy"]
    )
    assert result.exit_code == 0, result.stderr
    spec = ModelSpec.model_validate(yaml.safe_load(result.stdout))
    assert spec.id == "mixtral-copy"
    assert spec.moe is not None and (spec.moe.num_experts, spec.moe.top_k) == (8, 2)


def test_import_never_overwrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = Path("existing.yaml")
    out.write_text("keep me\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["catalog", "import-hf", str(HF / "llama-3.1-8b.json"), "--id", "x", "--out", str(out)],
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "error: --out existing.yaml: already exists; pass --force to replace it, or choose"
        " another name\n"
    )
    assert out.read_text(encoding="utf-8") == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.yaml"]


def _error(config: dict[str, Any]) -> str:
    with pytest.raises(CatalogError) as err:
        model_entry_from_hf(config, "x", "c.json")
    return str(err.value)


def test_qwen3_next_layer_types_must_be_every_kth_full() -> None:
    config = _fixture("qwen3-next-80b-a3b")
    # an explicit layer_types list with the same pattern gives the same entry
    listed = dict(config, layer_types=(["linear_attention"] * 3 + ["full_attention"]) * 12)
    assert _convert(listed) == _convert(config)
    irregular = dict(config, layer_types=["full_attention"] * 2 + ["linear_attention"] * 46)
    assert _error(irregular) == (
        "c.json: layer_types: only 'every k-th layer is full attention, the others linear'"
        " can be imported"
    )
    unknown = dict(config, layer_types=["mamba"] * 48)
    assert _error(unknown) == (
        "c.json: layer_types: unsupported layer type 'mamba' (linear_attention, full_attention)"
    )


def test_sparse_attention_fields_are_required_and_shared_indexers_refused() -> None:
    config = _fixture("deepseek-v3.2")
    missing = {k: v for k, v in config.items() if k != "index_topk"}
    assert _error(missing) == (
        "c.json: index_topk: required in config.json for deepseek_v32"
        " (tokens each query attends (DeepSeek Sparse Attention))"
    )
    shared = dict(_fixture("glm-5"), index_topk_freq=4)
    assert _error(shared).startswith("c.json: index_topk_freq: only an indexer on every layer")


def test_qwen3_5_reads_text_config_and_its_mtp_layer() -> None:
    model = _convert(_fixture("qwen3.5-397b-a17b"))
    assert model.linear_attention is not None
    assert model.linear_attention.num_value_heads == 64
    assert model.mtp_layers == 1
    assert model.intermediate_size == 1024  # no dense FFN: the expert width
