"""`plan` ranks and `check` gates on what is paid for; `check` holds the best plan within the
budget and names it; the alternatives compare the hardware asked about."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()

# gpt-oss-120b at the default scenario's traffic (200 req/s, TTFT ≤ 500 ms, fp8 TP1): a few
# GPUs, either part of one DGX B200 (8 GPUs, 14.3 kW) or of a whole GB200 NVL72 rack (72 GPUs
# on 18 trays, 18 × 6.67 kW)
GPT_OSS = ["default", "--model", "gpt-oss-120b"]
BOTH = [*GPT_OSS, "--hardware", "dgx-b200,gb200-nvl72"]


def _json(args: list[str], code: int = 0) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == code, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize("objective", ["servers", "gpus", "power"])
def test_dgx_b200_ranks_first_under_every_count_of_what_is_paid(objective: str) -> None:
    data = _json(["plan", *BOTH, "--objective", objective])
    p = data["plan"]
    assert p["hardware"] == "dgx-b200"
    assert p["economics"]["gpus_paid"] == 8 and p["economics"]["servers_paid"] == 1
    rack = next(a for a in data["alternatives"] if a["hardware"] == "gb200-nvl72")
    assert rack["economics"]["gpus_paid"] == 72 and rack["economics"]["servers_paid"] == 18
    assert p["power_kw"] < rack["power_kw"]


def test_alternatives_table_shows_what_is_paid() -> None:
    out = runner.invoke(app, ["plan", *BOTH], env={"COLUMNS": "200"}).stdout
    row = next(line for line in out.splitlines() if "gb200-nvl72 fp8" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    # servers, GPUs (used of paid) and the rack's wall power
    assert cells[1] == "18"
    assert cells[2].endswith("of 72")
    assert cells[-1] == f"{18 * 6.67:,.1f}"


def test_check_power_budget_holds_the_dgx_b200_plan() -> None:
    result = runner.invoke(app, ["check", *BOTH, "--max-power-kw", "20"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("ok: 1 × dgx-b200 (8 GPUs")
    assert result.stderr.rstrip().endswith("within budget")
    data = _json(["check", *BOTH, "--max-power-kw", "20"])
    assert data["within_budget"] is True and data["over"] == []
    held = data["held"]
    assert held["plan"].startswith("1 × dgx-b200") and held["plan"] in result.stderr
    assert held["power_kw"] == pytest.approx(14.3) and held["gpus"] == 8
    assert data["plan"]["hardware"] == "dgx-b200"
    table = runner.invoke(app, ["check", *BOTH, "--max-power-kw", "20", "--format", "table"])
    assert "plan held" in table.stdout and "1 × dgx-b200" in table.stdout


def test_check_gpu_budget_counts_the_whole_rack() -> None:
    args = ["check", *GPT_OSS, "--hardware", "gb200-nvl72", "--max-gpus", "8"]
    result = runner.invoke(app, args)
    assert result.exit_code == 4, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "no plan is within it" in line
    assert "gb200-nvl72" in line and "GPUs 72 > 8 (over by 64)" in line
    data = _json(args, code=4)
    assert data["within_budget"] is False and data["held"]["gpus"] == 72
    # the same budget with the DGX B200 offered: the plan within it is held
    ok = runner.invoke(app, ["check", *BOTH, "--max-gpus", "8"])
    assert ok.exit_code == 0 and "dgx-b200" in ok.stderr


def test_check_holds_the_best_plan_within_a_cost_budget() -> None:
    # ranked by servers, the unpriced DGX B200 comes first; a cost budget cannot be shown
    # within without a price, so the cheapest-ranked priced plan within it is held instead
    args = ["--model", "llama-3.1-70b", "--isl", "1000", "--osl", "300", "--peak-rps", "28"]
    args += ["--ttft-ms", "1000", "--itl-ms", "50", "--precision", "fp8"]
    args += ["--hardware", "aws-p5-48xlarge,lambda-8x-h100,dgx-b200"]
    every = _json(["plan", *args, "--top", "100"])
    assert every["plan"]["hardware"] == "dgx-b200"
    plans = [every["plan"], *every["alternatives"]]
    priced = [p for p in plans if p["cost_per_hour_usd"] is not None]
    cap = min(p["cost_per_hour_usd"] for p in priced) * 1.2
    data = _json(["check", *args, "--max-cost-per-hour", f"{cap:.2f}"])
    assert data["within_budget"] is True
    held = data["plan"]
    assert held["cost_per_hour_usd"] <= cap
    # the best within the budget by the ranking (servers, GPUs, cost, power paid, GPUs used)
    within = [p for p in priced if p["cost_per_hour_usd"] <= cap]

    def paid(p: dict[str, Any]) -> tuple[Any, ...]:
        e = p["economics"]
        return (e["servers_paid"], e["gpus_paid"], p["cost_per_hour_usd"], p["power_kw"])

    assert paid(held) == min(paid(p) for p in within)


def test_cost_comparison_shows_each_cloud() -> None:
    args = ["plan", "--model", "llama-3.1-70b", "--isl", "1000", "--osl", "500"]
    args += ["--mean-rps", "20", "--ttft-ms", "1000", "--itl-ms", "50", "--objective", "cost"]
    args += ["--hardware", "lambda-8x-h100,lambda-8x-b200,aws-p5-48xlarge", "--top", "2"]
    data = _json(args)
    shown = [data["plan"]["hardware"], *(a["hardware"] for a in data["alternatives"])]
    assert sorted(shown) == ["aws-p5-48xlarge", "lambda-8x-b200", "lambda-8x-h100"]
    costs = [
        data["plan"]["cost_per_hour_usd"],
        *(a["cost_per_hour_usd"] for a in data["alternatives"]),
    ]
    assert costs == sorted(costs)  # the best of each hardware, in rank order
