"""`infersize plan` and `check` in-process: JSON keys, exit codes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()

PLAN_KEYS = {
    "hardware",
    "system",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "instances",
    "gpus",
    "servers",
    "per_instance",
    "headroom",
    "tokens_per_day",
    "power_kw",
    "cost_per_hour_usd",
    "cost_per_million_output_tokens_usd",
    "engine",
    "efficiency",
}


def test_plan_json_keys() -> None:
    result = runner.invoke(app, ["plan", "default", "--pp", "1", "--format", "json", "--top", "2"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema_version"] == 1
    for key in (
        "peak_rps",
        "mean_rps",
        "percentile",
        "binding_constraint",
        "plan",
        "alternatives",
        "rejected",
        "model",
        "isl",
        "osl",
        "limits",
    ):
        assert key in data
    assert PLAN_KEYS <= set(data["plan"])
    assert set(data["plan"]["per_instance"]) >= {
        "concurrency",
        "requests_per_s",
        "ttft_ms",
        "itl_ms",
        "e2e_ms",
    }
    assert data["plan"]["hardware"] == "dgx-h100" and data["plan"]["tp"] == 1
    assert data["peak_rps"] == 200
    assert data["binding_constraint"] == "ttft"


def test_plan_flags_without_yaml_mean_rps() -> None:
    result = runner.invoke(
        app,
        [
            "plan",
            "--model",
            "llama-3-8b",
            "--isl",
            "2000",
            "--osl",
            "200",
            "--hardware",
            "h100-sxm",
            "--precision",
            "fp8",
            "--tp",
            "auto",
            "--mean-rps",
            "64",
            "--ttft-ms",
            "800",
            "--format",
            "json",
            "--explain",
        ],
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["peak_rps"] == 77 and data["mean_rps"] == 64
    for alt in data["alternatives"]:
        assert set(alt) == set(data["plan"])


def test_plan_table_and_explain() -> None:
    result = runner.invoke(app, ["plan", "default", "--explain", "--tp", "1,2"])
    assert result.exit_code == 0, result.stderr
    assert "binding constraint" in result.stdout


def test_impossible_limit_exits_3_with_nearest_miss() -> None:
    result = runner.invoke(app, ["plan", "default", "--ttft-ms", "1"])
    assert result.exit_code == 3
    assert "best TTFT is" in result.stderr and "> limit 1 ms" in result.stderr


def test_bad_flag_exits_1() -> None:
    result = runner.invoke(app, ["plan", "default", "--tp", "x"])
    assert result.exit_code == 1
    result = runner.invoke(app, ["plan", "default", "--model", "no-such-model"])
    assert result.exit_code == 1 and "model" in result.stderr


def test_check_within_and_over_budget() -> None:
    ok = runner.invoke(
        app, ["check", "default", "--pp", "1", "--max-servers", "4", "--format", "json"]
    )
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["within_budget"] is True
    assert ok.stderr.startswith("ok: ")
    over = runner.invoke(
        app, ["check", "default", "--pp", "1", "--max-servers", "2", "--max-gpus", "100"]
    )
    assert over.exit_code == 4
    assert "servers 3 > 2 (over by 1)" in over.stderr
    assert over.stdout == ""


def test_check_infeasible_exits_3_and_needs_budget() -> None:
    assert (
        runner.invoke(app, ["check", "default", "--ttft-ms", "1", "--max-gpus", "8"]).exit_code == 3
    )
    assert runner.invoke(app, ["check"]).exit_code == 1


def test_seed2_scenario_plans_12_to_14_dgx_in_its_matching_mode() -> None:
    # scenarios/seed-nemo-43b.yaml: static, FP16, engine trtllm-0.9-static, batch table
    result = runner.invoke(app, ["plan", "seed-nemo-43b", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["batching"] == "static" and data["batch_sizes"] == [1, 2, 4, 8, 16, 32, 64]
    assert data["plan"]["engine"].startswith("TensorRT-LLM 0.9")
    assert 12 <= data["plan"]["servers"] <= 14
    # --engine overrides the scenario's engine; any batch size (no table) needs fewer DGX
    nim = runner.invoke(app, ["plan", "seed-nemo-43b", "--engine", "nim-2024", "--format", "json"])
    assert nim.exit_code == 0, nim.stderr
    assert json.loads(nim.stdout)["plan"]["engine"].startswith("NVIDIA NIM")


def test_batch_sizes_flag_and_its_errors() -> None:
    base = ["plan", "default", "--batching", "static", "--tp", "1", "--pp", "1", "--format", "json"]
    ok = runner.invoke(app, [*base, "--batch-sizes", "1,2,4,8"])
    assert ok.exit_code == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["batch_sizes"] == [1, 2, 4, 8]
    assert data["plan"]["per_instance"]["concurrency"] in (1, 2, 4, 8)
    bad = runner.invoke(app, [*base, "--batch-sizes", "4,x"])
    assert bad.exit_code == 1 and "--batch-sizes" in bad.stderr
    inflight = runner.invoke(app, ["plan", "default", "--batch-sizes", "1,2"])
    assert inflight.exit_code == 1
    assert "batch_sizes: applies to batching static only" in inflight.stderr
    assert len(inflight.stderr.strip().splitlines()) == 1


def test_unknown_engine_in_a_scenario_names_the_field(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "s.yaml"
    path.write_text(
        "model: llama-3-8b\nisl: 100\nosl: 10\npeak_rps: 1\nttft_ms: 500\n"
        "hardware: [h100-sxm]\nengine: no-such-engine\n"
    )
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 1
    assert "engine" in result.stderr and "no-such-engine" in result.stderr


def test_a_scenario_names_its_engine_as_the_flag_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``engine: vllm`` in a file resolves like ``--engine vllm`` (the vLLM set), and a name the
    tool does not know is one line naming the field. (Closed-loop clients: how the engine is
    named does not depend on the arrivals, and an open-loop plan of this tiny request spends
    seconds finding each calibrated set's capacity for ``engine_choice``.)"""
    body = "model: llama-3-8b\nisl: 100\nosl: 10\npeak_rps: 1\nttft_ms: 500\nhardware: [h100-sxm]\n"
    body += "arrivals: closed-loop\n"
    named = tmp_path / "named.yaml"
    named.write_text(body + "engine: vllm\n")
    by_file = runner.invoke(app, ["plan", str(named), "--format", "json"])
    assert by_file.exit_code == 0, by_file.stderr
    plain = tmp_path / "plain.yaml"
    plain.write_text(body)
    by_flag = runner.invoke(app, ["plan", str(plain), "--engine", "vllm", "--format", "json"])
    assert by_flag.exit_code == 0, by_flag.stderr
    engine = json.loads(by_file.stdout)["plan"]["engine"]
    assert engine == json.loads(by_flag.stdout)["plan"]["engine"]
    assert "vLLM" in engine
    bad = tmp_path / "bad.yaml"
    bad.write_text(body + "engine: vllmx@1\n")
    result = runner.invoke(app, ["plan", str(bad)])
    assert result.exit_code == 1
    assert "engine" in result.stderr and len(result.stderr.strip().splitlines()) == 1
