"""The router and the gaps' cv on the command line: what a plan says it assumed, what is refused,
and that a router the question names is the one --verify simulates."""

from __future__ import annotations

import json
from functools import cache

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()
QUESTION = [
    *["plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--precision", "fp8"],
    *["--isl", "1000", "--osl", "200", "--peak-rps", "40", "--ttft-ms", "800", "--itl-ms", "40"],
]


def _plan(*extra: str) -> dict:  # type: ignore[type-arg]
    data: dict = json.loads(_plan_json(extra))  # type: ignore[type-arg]
    return data


@cache
def _plan_json(extra: tuple[str, ...]) -> str:
    """The question's JSON with ``extra`` flags, run once per module (several tests ask for
    the same router)."""
    result = runner.invoke(app, [*QUESTION, *extra, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("router", ["least-loaded", "round-robin", "random"])
def test_the_plan_names_its_router(router: str) -> None:
    rec = _plan("--router", router)
    assert rec["router"] == router
    table = runner.invoke(app, [*QUESTION, "--router", router])
    assert table.exit_code == 0, table.stderr
    assert f"Poisson arrivals, {router} router" in table.stdout.splitlines()[0]


def test_least_loaded_is_the_default_and_a_tool_default() -> None:
    rec = _plan()
    assert rec["router"] == "least-loaded"


def test_a_smoother_router_never_needs_more_instances_for_bursty_traffic() -> None:
    """cv 3 over the fleet: round-robin spreads the bursts (each instance sees cv 3/√N), a
    random split keeps more of them (1 + 8/N): never fewer instances than round-robin."""
    rr = _plan("--cv", "3", "--router", "round-robin")["plan"]["instances"]
    rnd = _plan("--cv", "3", "--router", "random")["plan"]["instances"]
    assert rr <= rnd


def test_evenly_spaced_arrivals() -> None:
    """cv 0: a client sending at a steady rate; said so in the title, sized like any other."""
    rec = _plan("--cv", "0")
    assert rec["cv"] == 0 and rec["plan"]["instances"] >= 1
    table = runner.invoke(app, [*QUESTION, "--cv", "0"])
    assert "evenly spaced arrivals" in table.stdout.splitlines()[0]


def test_a_router_beside_closed_loop_clients_is_one_line() -> None:
    result = runner.invoke(app, ["plan", "default", "--router", "random"])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0
    assert "router" in result.stderr and "closed-loop" in result.stderr


def test_an_unknown_router_is_a_usage_error() -> None:
    result = runner.invoke(app, [*QUESTION, "--router", "fastest"])
    assert result.exit_code == 2
    assert "router" in result.stderr.lower()


def test_a_scenario_states_its_router(tmp_path) -> None:  # type: ignore[no-untyped-def]
    body = (
        "model: llama-3-8b\nhardware: [h100-sxm]\nprecision: [fp8]\nisl: 1000\nosl: 200\n"
        "peak_rps: 40\nttft_ms: 800\nitl_ms: 40\nrouter: round-robin\n"
    )
    scenario = tmp_path / "rr.yaml"
    scenario.write_text(body)
    result = runner.invoke(app, ["plan", str(scenario), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    by_file = json.loads(result.stdout)
    assert by_file["router"] == "round-robin"
    by_flag = _plan("--router", "round-robin")
    assert by_file["plan"]["instances"] == by_flag["plan"]["instances"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(body.replace("round-robin", "fastest"))
    refused = runner.invoke(app, ["plan", str(bad)])
    assert refused.exit_code == 1 and "router" in refused.stderr


def test_verify_simulates_the_router_the_question_names() -> None:
    result = runner.invoke(
        app, [*QUESTION, "--router", "random", "--verify", "--format", "json", "--top", "0"]
    )
    assert result.exit_code == 0, result.stderr
    verify = json.loads(result.stdout)["verify"]
    assert verify["router"] == "random" and "random router" in verify["arrivals"]
