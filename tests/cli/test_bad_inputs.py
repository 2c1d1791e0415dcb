"""Malformed-input corpus: every case exits 1 with exactly one pinned ``error:`` line on stderr
(usage errors exit 2 with Click's own message), nothing on stdout and never a traceback.

The CLI runs in-process with the working directory at ``tests/fixtures/bad`` (so messages show
short relative paths) and the built-in catalog replaced by ``tests/fixtures/mini_catalog`` (so
messages that list or suggest ids do not change when the shipped catalog grows).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

import inferencesize.catalog as catalog_module
from inferencesize.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BAD = FIXTURES / "bad"
MINI = FIXTURES / "mini_catalog"
SUPPORTED = (
    "deepseek_v2, deepseek_v3, deepseek_v32, gemma, gemma2, gemma3, gemma3_text, glm4_moe,"
    " glm_moe_dsa, gpt_oss, kimi_k2, llama, llama4, llama4_text, minimax_m2, mistral, mixtral,"
    " qwen2, qwen2_moe, qwen3, qwen3_5_moe, qwen3_5_moe_text, qwen3_moe, qwen3_next"
)
BYTE_UNITS = "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"
ENGINE_FORMS = (
    "NAME, NAME@VERSION (numbers separated by dots, e.g. vllm@0.6.3) or an efficiency set id"
)
#: A question stated by flags (the hardware left to each case).
PLAN_FLAGS = ["plan", "--model", "llama-3.1-8b", "--isl", "500", "--osl", "200"]
PLAN_FLAGS += ["--mean-rps", "1", "--ttft-ms", "1000"]

# (case id, CLI arguments, exact message after "error: ")
CASES: list[tuple[str, list[str], str]] = [
    # --- files that are not a YAML mapping
    (
        "yaml-syntax",
        ["catalog", "validate", "yaml/syntax.yaml"],
        "yaml/syntax.yaml:4:7: YAML syntax error: "
        + (  # libyaml (used when PyYAML has it) words the problem differently
            "did not find expected ',' or ']'"
            if yaml.__with_libyaml__
            else "expected ',' or ']', but got ':'"
        ),
    ),
    (
        "empty-file",
        ["catalog", "validate", "yaml/empty.yaml"],
        "yaml/empty.yaml: is empty, expected a YAML mapping of fields",
    ),
    (
        "top-level-list",
        ["catalog", "validate", "yaml/list.yaml"],
        "yaml/list.yaml: expected a YAML mapping of fields, got a list",
    ),
    (
        "not-utf8",
        ["catalog", "validate", "yaml/not-utf8.yaml"],
        "yaml/not-utf8.yaml: is not UTF-8 text",
    ),
    ("missing-file", ["catalog", "validate", "missing.yaml"], "missing.yaml: file not found"),
    (
        "directory-not-file",
        ["catalog", "validate", "a-directory"],
        "a-directory: is a directory, expected a YAML file",
    ),
    # --- GPU: quantities, types, keys
    (
        "quantity-without-unit",
        ["catalog", "validate", "hardware/gpus/memory-unitless.yaml"],
        "hardware/gpus/memory-unitless.yaml: memory: needs a number with a unit, e.g. '80 GiB'"
        f" (one of: {BYTE_UNITS})",
    ),
    (
        "quantity-wrong-unit",
        ["catalog", "validate", "hardware/gpus/memory-wrong-unit.yaml"],
        "hardware/gpus/memory-wrong-unit.yaml: memory: cannot read '80 GHz': expected a number"
        f" and one of {BYTE_UNITS}",
    ),
    (
        "quantity-zero",
        ["catalog", "validate", "hardware/gpus/memory-zero.yaml"],
        "hardware/gpus/memory-zero.yaml: memory: input should be greater than 0 (got '0 GiB')",
    ),
    (
        "quantity-negative",
        ["catalog", "validate", "hardware/gpus/memory-negative.yaml"],
        "hardware/gpus/memory-negative.yaml: memory: cannot read '-80 GiB': expected a number"
        f" and one of {BYTE_UNITS}",
    ),
    (
        "unknown-key-did-you-mean",
        ["catalog", "validate", "hardware/gpus/unknown-key.yaml"],
        "hardware/gpus/unknown-key.yaml: hbm_bandwith: unknown key"
        " (did you mean 'hbm_bandwidth'?) (+1 more error)",
    ),
    (
        "nested-unknown-key",
        ["catalog", "validate", "hardware/gpus/nested-unknown-key.yaml"],
        "hardware/gpus/nested-unknown-key.yaml: dense_flops.bf17: unknown key"
        " (did you mean 'bf16'?)",
    ),
    (
        "wrong-type",
        ["catalog", "validate", "hardware/gpus/wrong-type.yaml"],
        "hardware/gpus/wrong-type.yaml: pcie_gen: input should be a valid integer, unable to"
        " parse string as an integer (got 'five')",
    ),
    # --- systems
    (
        "missing-required-field",
        ["catalog", "validate", "hardware/systems/missing-source.yaml"],
        "hardware/systems/missing-source.yaml: source: required field is missing",
    ),
    (
        "system-unknown-gpu-file",
        ["catalog", "validate", "hardware/systems/unknown-gpu.yaml"],
        "hardware/systems/unknown-gpu.yaml: gpu: unknown GPU 'h100-sxn';"
        " did you mean h100-sxm, h200-sxm?",
    ),
    (
        "system-unknown-gpu-catalog",
        ["catalog", "validate", "catalogs/unknown-gpu"],
        "catalogs/unknown-gpu/hardware/systems/test-node.yaml: gpu: unknown GPU 'h100-sxn';"
        " did you mean h100-sxm, h200-sxm?",
    ),
    (
        "gpu-unknown-efficiency-like",
        ["catalog", "validate", "catalogs/unknown-efficiency-like"],
        "catalogs/unknown-efficiency-like/hardware/gpus/test-gpu.yaml: efficiency_like: unknown"
        " GPU 'h100-sxn'; did you mean h100-sxm, h200-sxm?",
    ),
    # --- models
    (
        "kv-heads-not-divisor",
        ["catalog", "validate", "models/kv-heads-not-divisor.yaml"],
        "models/kv-heads-not-divisor.yaml: num_kv_heads: must divide num_attention_heads"
        " (got 7 and 32)",
    ),
    (
        "attention-kind-mismatch",
        ["catalog", "validate", "models/attention-mismatch.yaml"],
        "models/attention-mismatch.yaml: attention: MHA does not fit num_kv_heads=8 with"
        " num_attention_heads=32 (MHA: equal, GQA: between, MQA: 1)",
    ),
    (
        "attention-kind-unknown",
        ["catalog", "validate", "models/bad-attention.yaml"],
        "models/bad-attention.yaml: attention: input should be 'MHA', 'GQA', 'MQA' or 'MLA'"
        " (got 'GQA2')",
    ),
    (
        "moe-top-k-above-experts",
        ["catalog", "validate", "models/moe-top-k.yaml"],
        "models/moe-top-k.yaml: moe.top_k: cannot exceed num_experts (got 9 > 8)",
    ),
    (
        "zero-size",
        ["catalog", "validate", "models/zero-layers.yaml"],
        "models/zero-layers.yaml: num_layers: input should be greater than 0 (got 0)",
    ),
    (
        "negative-size",
        ["catalog", "validate", "models/negative-hidden.yaml"],
        "models/negative-hidden.yaml: hidden_size: input should be greater than 0 (got -4096)",
    ),
    (
        "model-wrong-type",
        ["catalog", "validate", "models/wrong-type.yaml"],
        "models/wrong-type.yaml: num_layers: input should be a valid integer, unable to parse"
        " string as an integer (got 'thirty-two')",
    ),
    (
        "model-unknown-key",
        ["catalog", "validate", "models/unknown-key.yaml"],
        "models/unknown-key.yaml: num_kv_head: unknown key (did you mean 'num_kv_heads'?)"
        " (+1 more error)",
    ),
    (
        "model-missing-field",
        ["catalog", "validate", "models/missing-field.yaml"],
        "models/missing-field.yaml: vocab_size: required field is missing",
    ),
    (
        "model-bad-id",
        ["catalog", "validate", "models/bad-id.yaml"],
        "models/bad-id.yaml: id: must be lowercase letters, digits, '.', '_' or '-', starting"
        " with a letter or digit (got 'Test Model')",
    ),
    # --- scenarios
    (
        "isl-osl-beyond-context",
        ["catalog", "validate", "scenarios/beyond-context.yaml"],
        "scenarios/beyond-context.yaml: isl: ISL + OSL = 130000 + 2000 = 132000 tokens exceeds"
        " llama-3.1-8b's context window of 131072",
    ),
    (
        "both-mean-and-peak-rps",
        ["catalog", "validate", "scenarios/both-rps.yaml"],
        "scenarios/both-rps.yaml: mean_rps: give exactly one of mean_rps or peak_rps",
    ),
    (
        "neither-mean-nor-peak-rps",
        ["catalog", "validate", "scenarios/neither-rps.yaml"],
        "scenarios/neither-rps.yaml: mean_rps: give exactly one of mean_rps or peak_rps",
    ),
    (
        "negative-rps",
        ["catalog", "validate", "scenarios/negative-rps.yaml"],
        "scenarios/negative-rps.yaml: mean_rps: input should be greater than 0 (got -5)",
    ),
    (
        "unknown-precision",
        ["catalog", "validate", "scenarios/unknown-precision.yaml"],
        "scenarios/unknown-precision.yaml: precision: unknown precision 'fp7'; expected one of"
        " fp32, bf16, fp16, fp8, int8, int4, fp4",
    ),
    (
        "scenario-unknown-model",
        ["catalog", "validate", "scenarios/unknown-model.yaml"],
        "scenarios/unknown-model.yaml: model: unknown model 'llama-3.1-8c';"
        " did you mean llama-3.1-8b, llama-3.1-70b?",
    ),
    (
        "scenario-unknown-hardware",
        ["catalog", "validate", "scenarios/unknown-hardware.yaml"],
        "scenarios/unknown-hardware.yaml: hardware[1]: unknown hardware (GPU or system) 'h300';"
        " did you mean h200-sxm, h100-sxm, dgx-h100?",
    ),
    # --- catalog ids and directories
    (
        "show-unknown-id",
        ["catalog", "show", "lama-3.1-8b"],
        "unknown catalog id 'lama-3.1-8b'; did you mean llama-3.1-8b, llama-3.1-70b?",
    ),
    (
        "show-unknown-id-no-close-match",
        ["catalog", "show", "zzzz"],
        "unknown catalog id 'zzzz'; known: chat, dgx-h100, h100-sxm, h200-sxm, llama-3.1-70b,"
        " llama-3.1-8b, mixtral-8x7b",
    ),
    (
        "catalog-dir-missing",
        ["catalog", "list", "--catalog", "no-such-dir"],
        "no-such-dir: catalog directory not found (from --catalog)",
    ),
    (
        "user-catalog-duplicate-id",
        ["catalog", "list", "--catalog", "catalogs/duplicate-id"],
        "catalogs/duplicate-id/models/copy-2.yaml: id: duplicate id 'dup-model'"
        " (also in catalogs/duplicate-id/models/copy-1.yaml)",
    ),
    # --- import-hf
    (
        "hf-missing-field",
        ["catalog", "import-hf", "hf/missing-layers.json", "--id", "x"],
        "hf/missing-layers.json: num_hidden_layers: required in config.json for llama"
        " (number of transformer layers)",
    ),
    (
        "hf-invalid-json",
        ["catalog", "import-hf", "hf/invalid.json", "--id", "x"],
        "hf/invalid.json:4:3: JSON syntax error: Expecting ',' delimiter",
    ),
    (
        "hf-unsupported-model-type",
        ["catalog", "import-hf", "hf/unsupported.json", "--id", "x"],
        f"hf/unsupported.json: model_type: unsupported model type 'bert'; supported: {SUPPORTED}",
    ),
    (
        "hf-no-model-type",
        ["catalog", "import-hf", "hf/no-model-type.json", "--id", "x"],
        "hf/no-model-type.json: model_type: required in config.json (the architecture family);"
        f" supported: {SUPPORTED}",
    ),
    (
        "hf-wrong-type",
        ["catalog", "import-hf", "hf/wrong-type.json", "--id", "x"],
        "hf/wrong-type.json: hidden_size: expected a whole number (got '4096')",
    ),
    (
        "hf-kv-heads-not-divisor",
        ["catalog", "import-hf", "hf/kv-heads-not-divisor.json", "--id", "x"],
        "hf/kv-heads-not-divisor.json: num_key_value_heads: must divide num_attention_heads"
        " (got 7 and 32)",
    ),
    (
        "hf-moe-top-k-above-experts",
        ["catalog", "import-hf", "hf/moe-top-k.json", "--id", "x"],
        "hf/moe-top-k.json: num_experts_per_tok: cannot exceed num_experts (got 9 > 8)",
    ),
    (
        "hf-empty-file",
        ["catalog", "import-hf", "hf/empty.json", "--id", "x"],
        "hf/empty.json: is empty, expected a JSON object of fields",
    ),
    (
        "hf-top-level-list",
        ["catalog", "import-hf", "hf/list.json", "--id", "x"],
        "hf/list.json: expected a JSON object of fields, got a list",
    ),
    (
        "hf-missing-file",
        ["catalog", "import-hf", "hf/missing.json", "--id", "x"],
        "hf/missing.json: file not found",
    ),
    (
        "hf-directory",
        ["catalog", "import-hf", "a-directory", "--id", "x"],
        "a-directory: is a directory, expected a config.json file",
    ),
    (
        "hf-bad-id",
        ["catalog", "import-hf", "hf/missing-layers.json", "--id", "My Model"],
        "--id: 'My Model' is not a valid catalog id (lowercase letters, digits, '.', '_' and"
        " '-', starting with a letter or digit)",
    ),
    # --- figures far below any real part (they would overflow the step times): a range
    (
        "hbm-bandwidth-1e-300",
        ["catalog", "validate", "hardware/gpus/hbm-1e-300.yaml"],
        "hardware/gpus/hbm-1e-300.yaml: hbm_bandwidth: must be from 1 GB/s to 1 PB/s"
        " (got 1e-297 GB/s)",
    ),
    (
        "dense-flops-1e-300",
        ["catalog", "validate", "hardware/gpus/flops-1e-300.yaml"],
        "hardware/gpus/flops-1e-300.yaml: dense_flops.bf16: must be from 1 GFLOPS to 1e21 FLOPS"
        " (got 1e-297 GFLOPS)",
    ),
    (
        "scale-up-bandwidth-1e-300",
        ["catalog", "validate", "hardware/gpus/scale-up-1e-300.yaml"],
        "hardware/gpus/scale-up-1e-300.yaml: scale_up_bandwidth: must be 0 (no such link) or"
        " from 0.1 GB/s to 1 PB/s (got 1e-300 GB/s)",
    ),
    (
        "inter-node-bandwidth-1e-300",
        ["catalog", "validate", "hardware/systems/inter-node-1e-300.yaml"],
        "hardware/systems/inter-node-1e-300.yaml: inter_node_bandwidth: must be 0 (no such link)"
        " or from 0.1 GB/s to 1 PB/s (got 1e-300 GB/s)",
    ),
    (
        "plan-with-hbm-below-1-gb-s",
        [*PLAN_FLAGS, "--catalog", "catalogs/tiny-bandwidth", "--hardware", "test-gpu"],
        "catalogs/tiny-bandwidth/hardware/gpus/test-gpu.yaml: hbm_bandwidth: must be from"
        " 1 GB/s to 1 PB/s (got 0.5 GB/s)",
    ),
    # --- engine versions: numbers separated by dots, one '@' at most; named as stated (the
    # --engine flag, or the scenario file and its engine: field)
    (
        "engine-version-not-a-number",
        [*PLAN_FLAGS, "--hardware", "h100-sxm", "--engine", "vllm@abc"],
        f"--engine: 'vllm@abc': version 'abc' is not numbers separated by dots; give {ENGINE_FORMS}",
    ),
    (
        "engine-two-versions",
        [*PLAN_FLAGS, "--hardware", "h100-sxm", "--engine", "vllm@1.0@2.0"],
        f"--engine: 'vllm@1.0@2.0': at most one '@'; give {ENGINE_FORMS}",
    ),
    (
        "engine-empty-version",
        [*PLAN_FLAGS, "--hardware", "h100-sxm", "--engine", "vllm@"],
        f"--engine: 'vllm@': no version after '@'; give {ENGINE_FORMS}",
    ),
    (
        "estimate-engine-two-versions",
        [
            *["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm"],
            *["--isl", "500", "--osl", "200", "--concurrency", "1", "--engine", "trtllm@0.17@1"],
        ],
        f"--engine: 'trtllm@0.17@1': at most one '@'; give {ENGINE_FORMS}",
    ),
    (
        "calibrate-engine-empty-version",
        [
            *["calibrate", "--data", "scenarios/negative-rps.yaml", "--hardware", "h100-sxm"],
            *["--precision", "fp8", "--out", "never.yaml", "--engine", "vllm@"],
        ],
        f"--engine: 'vllm@': no version after '@'; give {ENGINE_FORMS}",
    ),
    (
        "engine-unknown",
        [*PLAN_FLAGS, "--hardware", "h100-sxm", "--engine", "tgi"],
        # the test catalog has no set: no engine name resolves, so none is listed
        "--engine: unknown engine 'tgi': name an efficiency set id (none loaded)",
    ),
    (
        "calibration-release-without-version",
        [
            *PLAN_FLAGS,
            "--hardware",
            "h100-sxm",
            "--calibration",
            "efficiency/release-no-version.yaml",
        ],
        "efficiency/release-no-version.yaml: releases[0]: 'vLLM' is not an engine name and a"
        " version ('TensorRT-LLM 0.17') or a range of versions ('vLLM 0.12-0.19')",
    ),
    (
        "calibration-release-backwards",
        [
            *PLAN_FLAGS,
            "--hardware",
            "h100-sxm",
            "--calibration",
            "efficiency/release-backwards.yaml",
        ],
        "efficiency/release-backwards.yaml: releases[1]: 'vLLM 0.19-0.12' is not an engine name"
        " and a version ('TensorRT-LLM 0.17') or a range of versions ('vLLM 0.12-0.19')",
    ),
    (
        "scenario-engine-version-not-a-number",
        ["plan", "scenarios/engine-version-not-a-number.yaml"],
        "scenarios/engine-version-not-a-number.yaml: engine: 'vllm@abc': version 'abc' is not"
        f" numbers separated by dots; give {ENGINE_FORMS}",
    ),
]

USAGE_CASES: list[tuple[str, list[str]]] = [
    ("format-not-allowed", ["catalog", "list", "--format", "xml"]),
    ("show-format-not-allowed", ["catalog", "show", "h100-sxm", "--format", "xml"]),
    ("unknown-kind", ["catalog", "list", "gpuz"]),
    ("unknown-option", ["catalog", "list", "--colour"]),
    ("import-hf-without-id", ["catalog", "import-hf", "hf/missing-layers.json"]),
]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setattr(catalog_module, "builtin_root", lambda: MINI)
    monkeypatch.delenv("INFERSIZE_CATALOG", raising=False)
    monkeypatch.chdir(BAD)
    return CliRunner()


def _assert_one_error(result: Result, message: str) -> None:
    assert "Traceback" not in result.stderr + result.stdout
    assert [line for line in result.stderr.splitlines() if line.startswith("error: ")] == [
        f"error: {message}"
    ]
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


def test_corpus_is_large_enough() -> None:
    assert len(CASES) + len(USAGE_CASES) >= 30
    assert len({case for case, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("case", "args", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input(cli: CliRunner, case: str, args: list[str], message: str) -> None:
    result = cli.invoke(app, args)
    assert result.exit_code == 1, (case, result.stderr)
    _assert_one_error(result, message)


def test_env_catalog_dir_missing(cli: CliRunner) -> None:
    result = cli.invoke(app, ["catalog", "list"], env={"INFERSIZE_CATALOG": "no-such-env-dir"})
    assert result.exit_code == 1
    _assert_one_error(
        result, "no-such-env-dir: catalog directory not found (from INFERSIZE_CATALOG)"
    )


@pytest.mark.parametrize(("case", "args"), USAGE_CASES, ids=[c[0] for c in USAGE_CASES])
def test_usage_error(cli: CliRunner, case: str, args: list[str]) -> None:
    result = cli.invoke(app, args)
    assert result.exit_code == 2, (case, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    assert "internal error" not in result.stderr
    assert result.stdout == ""


def test_every_fixture_file_has_a_case() -> None:
    """Every malformed file in tests/fixtures/bad is pinned by a case above."""
    pinned = {a for _, args, _ in CASES for a in args}
    files = [
        p.relative_to(BAD).as_posix()
        for p in BAD.rglob("*")
        if p.is_file() and p.suffix in {".yaml", ".json"} and "catalogs" not in p.parts
    ]
    assert sorted(f for f in files if f not in pinned) == []
