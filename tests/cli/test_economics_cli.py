"""`plan` / `check` with economics, daily traffic and pipelines, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()


def _json(args: list[str], code: int = 0) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.stderr + result.stdout
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_owned_scenario_cost_is_the_hand_formula() -> None:
    data = _json(["plan", "economics-owned", "--format", "json"])
    p = data["plan"]
    e = p["economics"]
    assert e["basis"] == "owned" and e["server_power_from"] == "system"
    capex = 300_000 * p["servers"] / (4 * 8766)
    energy = 10.2 * p["servers"] * 1.3 * 0.12
    assert p["cost_per_hour_usd"] == pytest.approx(capex + energy)
    assert e["facility_power_kw"] == pytest.approx(1.3 * p["power_kw"])
    tokens_per_s = p["capacity_rps"] * 2200
    assert e["joules_per_token"] == pytest.approx(p["power_kw"] * 1e3 / tokens_per_s)
    assert e["usd_per_million_input_tokens"] < e["usd_per_million_output_tokens"]


def test_flags_override_the_scenario_economics() -> None:
    base = _json(["plan", "economics-owned", "--format", "json"])["plan"]
    dear = _json(["plan", "economics-owned", "--usd-per-kwh", "0.30", "--format", "json"])["plan"]
    assert dear["servers"] == base["servers"]
    extra = 10.2 * base["servers"] * 1.3 * (0.30 - 0.12)
    assert dear["cost_per_hour_usd"] - base["cost_per_hour_usd"] == pytest.approx(extra)
    cloud = _json(
        [
            "plan",
            "economics-owned",
            "--cost-basis",
            "cloud",
            "--usd-per-gpu-hour",
            "2",
            "--format",
            "json",
        ]
    )["plan"]
    assert cloud["economics"]["basis"] == "cloud"
    # rented in whole 8-GPU servers: 2 $/GPU-h × 8 × servers, idle GPUs included
    assert cloud["cost_per_hour_usd"] == pytest.approx(2 * 8 * cloud["servers"])
    assert cloud["economics"]["utilisation"] == pytest.approx(
        cloud["gpus"] / (8 * cloud["servers"])
    )


def test_objective_cost_prefers_the_cheaper_cloud() -> None:
    args = [
        "plan",
        "--model",
        "llama-3.1-8b",
        "--isl",
        "1000",
        "--osl",
        "200",
        "--peak-rps",
        "40",
        "--ttft-ms",
        "500",
        "--hardware",
        "aws-p5-48xlarge",
        "--hardware",
        "lambda-8x-h100",
        "--precision",
        "fp8",
        "--format",
        "json",
    ]
    cost = _json([*args, "--objective", "cost"])
    assert cost["objective"] == "cost"
    assert cost["plan"]["hardware"] == "lambda-8x-h100"
    for alt in cost["alternatives"]:
        assert alt["cost_per_hour_usd"] >= cost["plan"]["cost_per_hour_usd"]


def test_power_budget_is_reported_and_checked() -> None:
    data = _json(["plan", "economics-cost", "--format", "json"])
    assert data["power_budget"]["budget_kw"] == 60
    assert data["power_budget"]["within"] is (data["plan"]["power_kw"] <= 60)
    kw = data["plan"]["power_kw"]
    over = runner.invoke(app, ["check", "economics-cost", "--max-power-kw", f"{kw / 2:.3f}"])
    assert over.exit_code == 4, over.stderr
    assert "kW" in over.stderr and "over by" in over.stderr
    ok = runner.invoke(app, ["check", "economics-cost", "--max-power-kw", f"{kw * 2:.3f}"])
    assert ok.exit_code == 0, ok.stderr


def test_daily_block_from_flags() -> None:
    data = _json(
        [
            "plan",
            "--model",
            "llama-3.1-8b",
            "--isl",
            "800",
            "--osl",
            "250",
            "--ttft-ms",
            "500",
            "--hardware",
            "aws-p5-48xlarge",
            "--precision",
            "fp8",
            "--tp",
            "1",
            "--requests-per-day",
            "2.4e6",
            "--peak-hour-share",
            "0.1",
            "--format",
            "json",
        ]
    )
    d = data["daily"]
    # busiest hour 240,000 / 3600 = 66.7 req/s: the plan is sized for its Poisson 95th
    # percentile, scipy.stats.poisson.ppf(0.95, 66.67) = 80
    assert data["peak_rps"] == 80.0
    assert d["requests_per_day"] == pytest.approx(2.4e6)
    assert d["output_tokens_per_day"] == pytest.approx(2.4e6 * 250)
    assert d["fixed"]["instances"] == data["plan"]["instances"]
    # paid in whole 8-GPU p5.48xlarge instances, however few GPUs run an instance
    assert d["unit"] == "8-GPU instance"
    units = -(-data["plan"]["gpus"] // 8)
    assert d["fixed"]["units"] == units
    assert d["fixed"]["gpu_hours"] == 24 * 8 * units
    assert d["autoscaled"]["gpu_hours"] <= d["fixed"]["gpu_hours"]
    assert d["autoscaled"]["cost_usd"] == pytest.approx(6.88 * d["autoscaled"]["gpu_hours"])
    assert len(d["hours"]) == 24


def test_daily_scenario_table() -> None:
    result = runner.invoke(app, ["plan", "daily-chat"])
    assert result.exit_code == 0, result.stderr
    assert "autoscaled / day" in result.stdout and "fixed fleet / day" in result.stdout


def test_pipeline_scenario_json_and_check() -> None:
    data = _json(["plan", "pipeline-guardrail-judge", "--format", "json"])
    assert data["pipeline"] is True and data["feasible"] is True
    stages = data["stages"]
    assert [s["name"] for s in stages] == ["guardrail", "main", "judge"]
    assert data["total"]["gpus"] == sum(s["plan"]["gpus"] for s in stages)
    assert data["total"]["e2e_ms"] <= data["e2e_limit_ms"] == 30_000
    assert stages[1]["plan"]["per_instance"]["itl_ms"] <= 50  # the main stage's own ITL limit
    # a budget holds what is paid for: each stage's whole servers
    total = sum(s["plan"]["economics"]["gpus_paid"] for s in stages)
    assert total >= data["total"]["gpus"]
    over = runner.invoke(app, ["check", "pipeline-guardrail-judge", "--max-gpus", str(total - 1)])
    assert over.exit_code == 4, over.stderr
    ok = runner.invoke(app, ["check", "pipeline-guardrail-judge", "--max-gpus", str(total)])
    assert ok.exit_code == 0, ok.stderr
    table = runner.invoke(app, ["plan", "pipeline-agent"])
    assert table.exit_code == 0 and "total:" in table.stdout


def test_infeasible_pipeline_exits_3() -> None:
    result = runner.invoke(app, ["plan", "pipeline-agent", "--e2e-ms", "1000"])
    assert result.exit_code == 3
    assert "unloaded E2E of the chain" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hourly-rps", "1,2,3"], "--hourly-rps: expected 24 values, one per hour (got 3)"),
        (["--requests-per-day", "1000"], "peak_hour_share"),
        (["--requests-per-day", "1000", "--peak-hour-share", "0.01"], "must be >= 1/24"),
    ],
)
def test_bad_economics_flags_exit_1(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["plan", "default", *args])
    assert result.exit_code == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_scenarios_exit_1(tmp_path: Path) -> None:
    both = tmp_path / "both.yaml"
    both.write_text(
        "model: llama-3-8b\nisl: 100\nosl: 10\nmean_rps: 3\nttft_ms: 500\nhardware: [dgx-h100]\n"
        "daily: {requests_per_day: 1000, peak_hour_share: 0.1}\n"
    )
    r = runner.invoke(app, ["plan", str(both)])
    assert r.exit_code == 1 and "daily: replaces mean_rps / peak_rps" in r.stderr
    stage = tmp_path / "stage.yaml"
    stage.write_text(
        "pipeline: [{name: a, model: llama-3-8b, isl: 100, osl: 10}]\nmean_rps: 1\n"
        "hardware: [dgx-h100]\n"
    )
    r = runner.invoke(app, ["plan", str(stage)])
    assert r.exit_code == 1 and "e2e_ms: a pipeline needs the user request's E2E limit" in r.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(
        "pipeline: [{name: a, model: llama-9b, isl: 100, osl: 10}]\nmean_rps: 1\ne2e_ms: 5000\n"
        "hardware: [dgx-h100]\n"
    )
    r = runner.invoke(app, ["plan", str(unknown)])
    assert r.exit_code == 1 and "pipeline[0].model" in r.stderr
    forced = runner.invoke(
        app, ["plan", "default", "--cost-basis", "cloud"]
    )  # dgx-h100 has no rent
    assert forced.exit_code == 1 and "usd_per_gpu_hour" in forced.stderr


@pytest.mark.parametrize(
    ("flag", "value", "choices"),
    [
        ("--objective", "cheap", "'servers', 'gpus', 'cost', 'power'"),
        ("--cost-basis", "lease", "'auto', 'cloud', 'owned'"),
    ],
)
def test_a_choice_flag_names_its_choices_as_a_usage_error(
    flag: str, value: str, choices: str
) -> None:
    result = runner.invoke(app, ["plan", "default", flag, value])
    assert result.exit_code == 2
    words = result.stderr.replace("│", " ").split()
    assert choices in " ".join(words)


LAMBDA = ["plan", "--model", "llama-3-8b", "--hardware", "lambda-8x-b200", "--objective", "cost"]
LAMBDA += ["--isl", "1000", "--osl", "200", "--peak-rps", "300", "--ttft-ms", "500"]
LAMBDA += ["--itl-ms", "20", "--precision", "fp8", "--tp", "1", "--pp", "1"]


def test_cost_objective_costs_whole_lambda_servers() -> None:
    data = _json([*LAMBDA, "--top", "5", "--format", "json"])
    for p in [data["plan"], *data["alternatives"]]:
        e = p["economics"]
        units = -(-p["gpus"] // 8)  # 8-GPU servers, rented whole
        assert e["units"] == units and e["gpus_paid"] == 8 * units
        assert e["utilisation"] == pytest.approx(p["gpus"] / (8 * units))
        assert e["usd_per_unit_hour"] == pytest.approx(8 * 6.69)  # 53.52 $/h per server
        assert p["cost_per_hour_usd"] == pytest.approx(units * 8 * 6.69)
        # one $/M output tokens, the economics' own
        assert p["cost_per_million_output_tokens_usd"] == e["usd_per_million_output_tokens"]
    table = runner.invoke(app, LAMBDA).stdout
    assert "× lambda-8x-b200 (8-GPU instance)" in table and "GPUs used" in table
    assert "per 8-GPU instance" in table
    assert table.count("$/M") == 0 and table.count("per million tokens") == 1


def test_cost_objective_without_prices_exits_1_naming_them() -> None:
    result = runner.invoke(
        app, ["plan", "default", "--hardware", "dgx-h100,mi300x-8x", "--objective", "cost"]
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and "dgx-h100" in line and "mi300x-8x" in line
    assert "--usd-per-gpu-hour" in line
    power = runner.invoke(
        app, ["plan", "default", "--hardware", "tpu-v5e-pod", "--objective", "power"]
    )
    assert power.exit_code == 1 and "tpu-v5e-pod" in power.stderr


def test_unpriced_candidates_are_listed_and_ranked_last() -> None:
    args = ["plan", "default", "--hardware", "aws-p5-48xlarge,dgx-h100", "--objective", "cost"]
    data = _json([*args, "--top", "30", "--format", "json"])
    assert data["unranked"] == ["dgx-h100"]
    assert data["plan"]["hardware"] == "aws-p5-48xlarge"
    costs = [a["cost_per_hour_usd"] for a in data["alternatives"]]
    priced = [c for c in costs if c is not None]
    assert costs[: len(priced)] == priced  # every unpriced plan after every priced one
    table = runner.invoke(app, [*args, "--top", "30"]).stdout
    assert "ranked last, no price in the catalog: dgx-h100" in table
    rows = [line for line in table.splitlines() if line.lstrip("│ ").startswith("dgx-h100")]
    assert rows and all("—" in line for line in rows)  # no price: a dash in the $/h column


def test_nvl72_plan_reads_as_the_rack_it_is_sold_as() -> None:
    args = ["plan", "--model", "llama-3.1-70b", "--hardware", "gb200-nvl72", "--isl", "1000"]
    args += ["--osl", "300", "--peak-rps", "20", "--ttft-ms", "1000", "--itl-ms", "50"]
    args += ["--precision", "fp8"]
    data = _json([*args, "--format", "json"])
    p, e = data["plan"], data["plan"]["economics"]
    assert e["unit"] == "72-GPU rack of 18 × 4-GPU trays"
    assert e["units"] == -(-p["gpus"] // 72) and e["gpus_paid"] == 72 * e["units"]
    # the rack is powered whole: 18 trays × 6.67 kW
    assert p["power_kw"] == pytest.approx(18 * 6.67 * e["units"])
    assert e["gpu_board_power_kw"] == pytest.approx(72 * 1.2 * e["units"])
    table = runner.invoke(app, args).stdout
    assert "gb200-nvl72 (72-GPU rack" in table and "(servers)" not in table


def test_spare_servers_in_plan_cost_and_check() -> None:
    base = _json([*LAMBDA, "--format", "json"])["plan"]
    spare = _json([*LAMBDA, "--spare-servers", "1", "--format", "json"])["plan"]
    assert spare["servers"] == base["servers"] + 1 and spare["gpus"] == base["gpus"]
    assert spare["economics"]["spare_servers"] == 1
    assert spare["cost_per_hour_usd"] == pytest.approx(base["cost_per_hour_usd"] + 53.52)
    check = ["check", *LAMBDA[1:], "--spare-servers", "1", "--max-servers", str(base["servers"])]
    assert runner.invoke(app, check).exit_code == 4  # N + 1 needs one server more
    check[-1] = str(base["servers"] + 1)
    assert runner.invoke(app, check).exit_code == 0


def test_scenario_users_and_redundancy(tmp_path: Path) -> None:
    path = tmp_path / "users.yaml"
    path.write_text(
        "model: llama-3-8b\nisl: 1000\nosl: 200\nttft_ms: 500\nhardware: [lambda-8x-b200]\n"
        "precision: [fp8]\ntp: [1]\npp: [1]\n"
        "users: {daily_active_users: 678720, requests_per_user: 3, active_hours: 8}\n"
        "redundancy: {spare_servers: 1}\n"
    )
    data = _json(["plan", str(path), "--format", "json"])
    # 678,720 × 3 / (8 · 3600 s) = 70.7 req/s, Poisson p95 = 85 req/s (as `peak` prints)
    assert data["mean_rps"] == pytest.approx(70.7)
    assert data["peak_rps"] == 85.0
    assert data["plan"]["economics"]["spare_servers"] == 1
    both = tmp_path / "both.yaml"
    both.write_text(path.read_text() + "mean_rps: 3\n")
    r = runner.invoke(app, ["plan", str(both)])
    assert r.exit_code == 1 and "users: replaces mean_rps" in r.stderr


def test_owned_cost_row_splits_write_off_and_energy() -> None:
    p = _json(["plan", "economics-owned", "--format", "json"])["plan"]
    e = p["economics"]
    # 300,000 $ per server over 4 × 8766 h, and wall power × PUE 1.3 × 0.12 $/kWh
    assert e["capex_usd_per_hour"] == pytest.approx(300_000 * e["units"] / (4 * 8766))
    assert e["energy_usd_per_hour"] == pytest.approx(p["power_kw"] * 1.3 * 0.12)
    table = runner.invoke(app, ["plan", "economics-owned"]).stdout
    expected = f"${e['capex_usd_per_hour']:,.2f} write-off of {e['units']} × 8-GPU server"
    assert expected in table and f"${e['energy_usd_per_hour']:,.2f} energy" in table
