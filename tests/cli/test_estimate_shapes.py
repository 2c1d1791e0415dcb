"""`infersize estimate` on the deployment shapes published runs use: attention data parallelism
(--dp) and disaggregated prefill / decode pools (--prefill tp8x1 --decode tp8x3). Identities
the record must hold, not floats of today's model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from inferencesize.cli import app
from inferencesize.point_estimate import DISAGG_RECORD_KEYS

runner = CliRunner()
DSR1 = ["--model", "deepseek-r1", "--isl", "1024", "--osl", "1024", "--concurrency", "64"]


def invoke(*args: str) -> Result:
    return runner.invoke(app, ["estimate", *args])


def as_json(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def assert_one_line_error(result: Result, code: int, *needles: str) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_attention_dp_instance_spans_dp_groups() -> None:
    rec = as_json(*DSR1, "--hardware", "b200", "--tp", "1", "--dp", "8", "--ep", "8")
    assert (rec["tp"], rec["dp"], rec["ep"], rec["gpus"]) == (1, 8, 8, 8)
    assert rec["feasible"]
    # 64 closed-loop clients: Little's law on the instance
    assert rec["requests_per_s"] * rec["e2e_ms"] / 1000 == pytest.approx(64, rel=1e-3)


def test_attention_dp_on_a_dense_model_is_refused() -> None:
    rec = as_json("--model", "llama-3-8b", "--hardware", "h100-sxm", "--dp", "2")
    assert not rec["feasible"]
    assert "mixture-of-experts" in rec["reason"]


@pytest.fixture(scope="module")
def disagg() -> dict[str, Any]:
    return as_json(*DSR1, "--hardware", "h200-sxm", "--prefill", "tp8x1", "--decode", "tp8x3")


def test_disaggregated_record_keys_and_pools(disagg: dict[str, Any]) -> None:
    assert tuple(disagg) == DISAGG_RECORD_KEYS
    assert disagg["feasible"] and disagg["reason"] is None
    assert (disagg["prefill"]["instances"], disagg["prefill"]["gpus"]) == (1, 8)
    assert (disagg["decode"]["instances"], disagg["decode"]["gpus"]) == (3, 24)
    assert disagg["gpus"] == 32


def test_disaggregated_rates_per_gpu_and_identities(disagg: dict[str, Any]) -> None:
    rps = disagg["requests_per_s"]
    assert disagg["output_tokens_per_s_per_decode_gpu"] == pytest.approx(rps * 1024 / 24)
    assert disagg["input_tokens_per_s_per_prefill_gpu"] == pytest.approx(rps * 1024 / 8)
    assert disagg["tokens_per_s_per_gpu"] == pytest.approx(rps * 2048 / 32)
    assert disagg["e2e_ms"] == pytest.approx(disagg["ttft_ms"] + 1023 * disagg["itl_ms"])
    # every client waits for its first token or decodes: 64 = X · E2E
    assert rps * disagg["e2e_ms"] / 1000 == pytest.approx(64, rel=1e-6)
    # the decode pool holds the decoding clients: 3 instances × b = X · (OSL − 1) · ITL
    decoding = 3 * disagg["decode"]["sequences_per_instance"]
    assert decoding == pytest.approx(rps * 1023 * disagg["itl_ms"] / 1000, rel=1e-6)
    assert disagg["kv_transfer_ms"] > 0 and disagg["kv_link"] == "network"


def test_more_decode_instances_never_slow_a_token() -> None:
    one = as_json(*DSR1, "--hardware", "h200-sxm", "--prefill", "tp8x1", "--decode", "tp8x1")
    three = as_json(*DSR1, "--hardware", "h200-sxm", "--prefill", "tp8x1", "--decode", "tp8x3")
    assert three["itl_ms"] <= one["itl_ms"]
    assert three["requests_per_s"] >= one["requests_per_s"]


def test_disaggregated_table() -> None:
    result = invoke(*DSR1, "--hardware", "h200-sxm", "--prefill", "tp8x1", "--decode", "tp8x3")
    assert result.exit_code == 0, result.stderr
    assert "output tokens/s per decode GPU" in result.stdout
    assert "3 × tp8 (24 GPUs)" in result.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--prefill", "tp8x1"], ["needs both --prefill and --decode"]),
        (["--prefill", "tp8x1", "--decode", "8x3"], ["--decode", "tpN[ppN][dpN][epN][xW]"]),
        (["--prefill", "tp8x1", "--decode", "tp8x3", "--tp", "8"], ["drop --tp"]),
    ],
)
def test_disaggregated_usage_errors(args: list[str], needles: list[str]) -> None:
    assert_one_line_error(invoke(*DSR1, "--hardware", "h200-sxm", *args), 2, *needles)


def test_disaggregated_is_closed_loop() -> None:
    args = ["--model", "deepseek-r1", "--hardware", "h200-sxm", "--rate", "2"]
    result = invoke(*args, "--prefill", "tp8x1", "--decode", "tp8x3")
    assert_one_line_error(result, 2, "drop --rate")


def test_simulate_runs_an_attention_dp_instance() -> None:
    args = ["--model", "deepseek-r1", "--hardware", "b200", "--tp", "1", "--dp", "8", "--ep", "8"]
    args += ["--isl", "1024", "--osl", "256", "--concurrency", "64", "--requests", "400"]
    result = runner.invoke(app, ["simulate", *args, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    assert (rec["tp"], rec["dp"], rec["ep"]) == (1, 8, 8)
    # 64 closed-loop clients: Little's law on the simulated requests
    rate_e2e = rec["requests_per_s"] * rec["e2e_ms"]["mean"] / 1000
    assert rate_e2e == pytest.approx(64, rel=0.05)


def test_points_take_a_dp_column(tmp_path: Path) -> None:
    points = tmp_path / "points.csv"
    points.write_text(
        "model,hardware,tp,ep,dp,isl,osl,concurrency\n"
        "deepseek-r1,b200,1,8,8,1024,1024,64\n"
        "deepseek-r1,b200,8,1,,1024,1024,64\n"
    )
    result = invoke("--points", str(points), "--format", "json")
    assert result.exit_code == 0, result.stderr
    first, second = json.loads(result.stdout)
    assert (first["dp"], first["gpus"]) == (8, 8)
    assert (second["dp"], second["gpus"]) == (1, 8)


def test_points_refuse_the_point_flags(tmp_path: Path) -> None:
    points = tmp_path / "points.csv"
    points.write_text("model,hardware,isl,osl,concurrency\nllama-3-8b,h100-sxm,200,200,4\n")
    assert_one_line_error(invoke("--points", str(points), "--dp", "2"), 2, "drop --points")


def test_a_bare_gpu_wider_than_a_server_runs_on_its_dgx() -> None:
    wide = as_json(*DSR1, "--hardware", "b200", "--tp", "16", "--ep", "4")
    narrow = as_json(*DSR1, "--hardware", "b200", "--tp", "8")
    assert (wide["hardware"], narrow["hardware"]) == ("dgx-b200", "b200")
