"""`infersize plan` with the scale-out options: disaggregation, attention DP, NVLink-domain
instances, KV caps and context-parallel prefill (JSON blocks, flags, exit codes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shipped_plans import plan_run
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()

SHIPPED = [
    "disaggregated-long-prompt",
    "long-context-prefill",
    "streaming-kv-cap",
    "moe-wide-ep",
    "nvl72-deepseek",
]


@pytest.mark.parametrize("scenario", SHIPPED)
def test_shipped_scale_scenarios_plan(scenario: str) -> None:
    result = plan_run(scenario)  # the session's plan of the scenario (others read it too)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["plan"] is not None
    if scenario in ("disaggregated-long-prompt", "long-context-prefill"):
        block = data["disaggregated"]
        assert block["plan"] is not None, block["reason"]
        assert block["better"] in ("disaggregated", "aggregated")


def test_disaggregated_json_block() -> None:
    result = runner.invoke(app, ["plan", "disaggregated-long-prompt", "-f", "json", "--top", "0"])
    assert result.exit_code == 0, result.stderr
    d = json.loads(result.stdout)["disaggregated"]["plan"]
    pre, dec = d["prefill"], d["decode"]
    assert d["ratio"] == f"{pre['instances']}P{dec['instances']}D"
    assert d["gpus"] == pre["gpus"] + dec["gpus"]
    assert d["kv_transfer"]["link"] == "network"
    assert d["kv_transfer"]["bytes"] == 8000 * 80 * 2 * 8 * 128  # fp8 KV of the prompt
    assert d["ttft_ms"] <= 2000 and d["itl_ms"] <= 30
    assert json.loads(result.stdout)["disaggregated"]["better"] == "disaggregated"


def test_disaggregated_flag_and_table() -> None:
    args = ["plan", "--model", "llama-3.1-8b", "--isl", "4000", "--osl", "300", "--peak-rps", "5"]
    args += ["--ttft-ms", "1000", "--itl-ms", "30", "--disaggregated"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert "disaggregated prefill / decode" in result.stdout
    assert "KV transfer" in result.stdout
    off = runner.invoke(app, [*args[:-1], "--aggregated", "-f", "json"])
    assert off.exit_code == 0 and "disaggregated" not in json.loads(off.stdout)


def test_kv_cap_flags_raise_concurrency() -> None:
    base = ["plan", "streaming-kv-cap", "-f", "json", "--top", "0"]
    capped = json.loads(runner.invoke(app, base).stdout)["plan"]
    full = runner.invoke(app, [*base, "--kv-window-tokens", "32000", "--kv-sink-tokens", "0"])
    assert full.exit_code == 0, full.stderr
    plan = json.loads(full.stdout)["plan"]
    assert plan["gpus"] > capped["gpus"]  # 32k-token KV per sequence instead of 4096


def test_attention_dp_flag_on_moe() -> None:
    args = ["plan", "--model", "qwen3-30b-a3b", "--hardware", "dgx-h100", "--precision", "fp8"]
    args += ["--isl", "1000", "--osl", "500", "--peak-rps", "20", "--itl-ms", "40"]
    args += ["--tp", "1", "--pp", "1", "--ep", "auto", "--attention-dp", "2,4", "-f", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["plan"]["dp"] in (2, 4)
    assert data["plan"]["gpus_per_instance"] == data["plan"]["dp"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--attention-dp", "x"], "--attention-dp: expected an integer"),
        (["--prefill-cp", "auto"], "--prefill-cp: expected integers >= 1"),
        (["--batching", "static", "--disaggregated"], "disaggregated: needs batching inflight"),
    ],
)
def test_bad_scale_flags_exit_1(extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["plan", "default", *extra])
    assert result.exit_code == 1, result.stdout
    assert message in result.stderr


def test_bad_pool_hardware_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "model: llama-3.1-8b\nisl: 1000\nosl: 100\npeak_rps: 1\nttft_ms: 500\n"
        "hardware: [dgx-h100]\ndisaggregated:\n  prefill: {hardware: [dgx-h10]}\n"
    )
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 1
    assert "disaggregated.prefill.hardware[0]" in result.stderr
    assert "dgx-h100" in result.stderr  # did-you-mean


def test_decode_pool_has_no_context_parallelism(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "model: llama-3.1-8b\nisl: 1000\nosl: 100\npeak_rps: 1\nttft_ms: 500\n"
        "hardware: [dgx-h100]\ndisaggregated:\n  decode: {cp: [2]}\n"
    )
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 1
    assert "context parallelism applies to the prefill pool only" in result.stderr


def test_context_window_is_a_one_line_input_error() -> None:
    result = runner.invoke(
        app, ["plan", "default", "--model", "mixtral-8x7b", "--isl", "32000", "--osl", "1000"]
    )
    assert result.exit_code == 1
    assert "exceeds mixtral-8x7b's context window of 32768" in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
