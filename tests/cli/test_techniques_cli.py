"""Serving-technique scenarios and flags end to end: shipped scenarios plan, flags override the
scenario's ``techniques:`` block, the effect shows in the plan, bad values exit 1 or 2."""

from __future__ import annotations

import json
from typing import Any

import pytest
from shipped_plans import plan_run
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()

SCENARIOS = {
    "prefix-caching": "prefix_caching",
    "chunked-prefill": "chunked_prefill",
    "speculative-decoding": "speculative",
    "weight-only-int4": "weight_only",
    "sparsity-2-4": "sparsity",
}


def plan_json(*args: str, code: int = 0) -> dict[str, Any]:
    """The plan's JSON; a shipped scenario alone is the session's run of it (read elsewhere
    too, tests/shipped_plans.py)."""
    result: Any = (
        plan_run(args[0]) if len(args) == 1 else runner.invoke(app, ["plan", *args, "-f", "json"])
    )
    assert result.exit_code == code, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize("ident", sorted(SCENARIOS))
def test_shipped_technique_scenarios_plan(ident: str) -> None:
    data = plan_json(ident)
    assert data["plan"] is not None
    assert SCENARIOS[ident] in data["techniques"]


def test_prefix_caching_needs_fewer_gpus_than_no_cache() -> None:
    cached = plan_json("prefix-caching")
    assert cached["techniques"]["prefix_caching"] == {"prefix_tokens": 2000.0, "hit_rate": 0.8}
    uncached = plan_json("scenarios/prefix-caching.yaml", "--prefix-hit-rate", "0")
    assert uncached["techniques"] is None
    assert cached["plan"]["gpus"] < uncached["plan"]["gpus"]


def test_speculative_with_zero_acceptance_cannot_meet_the_itl_it_was_chosen_for() -> None:
    data = plan_json("speculative-decoding")
    assert data["techniques"]["speculative"]["tokens_per_step"] == pytest.approx((1 - 0.7**5) / 0.3)
    assert data["plan"]["per_instance"]["itl_ms"] <= 15
    plan_json("scenarios/speculative-decoding.yaml", "--acceptance", "0", code=3)


def test_sparsity_flags_override_the_scenario_key_by_key() -> None:
    sparse = plan_json("sparsity-2-4")
    dense = plan_json(
        "scenarios/sparsity-2-4.yaml", "--sparse-weights", "1", "--sparse-speedup", "1"
    )
    assert dense["techniques"] is None  # factors of 1 are no sparsity
    assert sparse["plan"]["gpus"] <= dense["plan"]["gpus"]
    half = plan_json("scenarios/sparsity-2-4.yaml", "--sparse-speedup", "1")
    assert half["techniques"]["sparsity"] == {"weight_factor": 0.63, "compute_speedup": 1.0}


def estimate_json(*args: str) -> dict[str, Any]:
    base = ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision", "fp8"]
    result = runner.invoke(app, [*base, "--isl", "2200", "--osl", "200", *args, "-f", "json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_estimate_reports_techniques_and_the_longest_gap() -> None:
    plain = estimate_json("--concurrency", "25")
    assert plain["techniques"] is None
    assert plain["itl_max_ms"] > 2 * plain["itl_ms"]  # a whole prompt in one decode step
    chunked = estimate_json("--concurrency", "25", "--chunked-prefill", "512")
    assert chunked["techniques"] == {"chunked_prefill": {"chunk_tokens": 512}}
    assert chunked["itl_max_ms"] < 0.5 * plain["itl_max_ms"]
    mtp = estimate_json("--concurrency", "1", "--draft", "mtp", "--acceptance", "0.8")
    assert mtp["techniques"]["speculative"]["draft"] == "mtp"
    assert mtp["itl_ms"] < plain["itl_ms"]


def test_estimate_table_shows_techniques() -> None:
    base = ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm"]
    result = runner.invoke(app, [*base, "--prefix-tokens", "2000", "--prefix-hit-rate", "0.8"])
    assert result.exit_code == 0, result.stderr
    assert "prefix cache 2000 tok × hit 0.8" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--prefix-hit-rate", "0.5"],
            1,
            "flags: techniques.prefix_hit_rate: a hit rate needs a shared prefix",
        ),
        (
            ["--prefix-tokens", "5000", "--prefix-hit-rate", "0.5"],
            1,
            "techniques.prefix_tokens: the shared prefix (5000 tokens) is longer than the input",
        ),
        (
            ["--draft", "llama-2-7b", "--acceptance", "0.5"],
            1,
            "llama-2-7b has a 32000-token vocabulary and llama-3-8b 128256",
        ),
        (["--draft", "mtp"], 1, "speculative.acceptance: required field is missing"),
        (["--draft", "nope", "--acceptance", "0.5"], 1, "unknown model 'nope'"),
        (["--sparse-weights", "1.5"], 1, "sparsity.weight_factor"),
        (["--acceptance", "1.5"], 1, "--acceptance: must be <= 1 (got 1.5)"),
    ],
)
def test_bad_technique_values(args: list[str], code: int, message: str) -> None:
    base = ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--isl", "2000"]
    result = runner.invoke(app, [*base, *args])
    assert result.exit_code == code
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_draft_with_points_is_a_usage_error(tmp_path: Any) -> None:
    points = tmp_path / "p.csv"
    points.write_text("model,hardware,isl,osl,concurrency\nllama-3-8b,h100-sxm,100,100,1\n")
    result = runner.invoke(
        app, ["estimate", "--points", str(points), "--draft", "mtp", "--acceptance", "0.5"]
    )
    assert result.exit_code == 2
    assert "--draft needs one target model" in result.stderr
