"""`infersize peak` in-process: stdout, stderr and exit codes."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()


def test_plain_output_is_just_the_number() -> None:
    result = runner.invoke(app, ["peak", "--mean-rps", "64"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "77\n"
    assert result.stderr == ""


def test_plain_seed_7() -> None:
    assert runner.invoke(app, ["peak", "--mean-rps", "7"]).stdout == "12\n"


def test_plain_fractional_rate_has_no_trailing_zeros() -> None:
    # 1.5 req/s in 60 s windows: ppf(0.95, 90) = 106 requests -> 106 / 60 = 1.766667 req/s
    result = runner.invoke(app, ["peak", "--mean-rps", "1.5", "--window-s", "60"])
    assert result.exit_code == 0
    assert result.stdout == "1.766667\n"


def test_json_keys_and_values() -> None:
    result = runner.invoke(app, ["peak", "--mean-rps", "64", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data == {
        "mean_rps": 64,
        "percentile": 0.95,
        "peak_rps": 77,
        "window_s": 1,
        "dispersion": 0,
        "model": "poisson",
    }


def test_json_with_dispersion() -> None:
    result = runner.invoke(app, ["peak", "--mean-rps", "64", "--dispersion", "0.1", "-f", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["model"] == "negative-binomial"
    assert data["dispersion"] == 0.1
    assert data["peak_rps"] == 103


def test_yaml_output() -> None:
    result = runner.invoke(app, ["peak", "--mean-rps", "7", "--format", "yaml"])
    assert result.exit_code == 0, result.stderr
    assert yaml.safe_load(result.stdout)["peak_rps"] == 12


def test_table_output() -> None:
    result = runner.invoke(app, ["peak", "--mean-rps", "64", "--format", "table"])
    assert result.exit_code == 0, result.stderr
    assert "77 req/s" in result.stdout
    assert "poisson" in result.stdout


def test_requests_per_day() -> None:
    # 8.64e6 / 86400 s = 100 req/s; ppf(0.95, 100) = 117
    result = runner.invoke(app, ["peak", "--requests-per-day", "8.64e6", "-f", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["mean_rps"] == pytest.approx(100)
    assert data["peak_rps"] == 117


def test_requests_per_day_with_active_hours() -> None:
    # 8.64e6 over 8 h = 300 req/s
    result = runner.invoke(
        app, ["peak", "--requests-per-day", "8.64e6", "--active-hours", "8", "-f", "json"]
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["mean_rps"] == pytest.approx(300)


@pytest.mark.parametrize(
    "args",
    [
        ["peak"],
        ["peak", "--mean-rps", "64", "--requests-per-day", "1e6"],
        ["peak", "--mean-rps", "64", "--active-hours", "8"],
        ["peak", "--mean-rps", "64", "--format", "xml"],
        ["peak", "--mean-rps", "many"],
        ["peak", "--daily-active-users", "1000"],
        ["peak", "--daily-active-users", "1000", "--requests-per-user", "3", "--mean-rps", "2"],
    ],
    ids=[
        "neither",
        "both",
        "hours-without-daily",
        "bad-format",
        "not-a-number",
        "users-without-requests",
        "users-and-rate",
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_exactly_one_rate_message() -> None:
    result = runner.invoke(app, ["peak"])
    assert result.stderr == (
        "error: give exactly one of --mean-rps, --requests-per-day or --daily-active-users\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--mean-rps", "64", "--percentile", "95"],
            "--percentile must be a fraction strictly between 0 and 1, e.g. 0.95 (got 95.0)",
        ),
        (
            ["--mean-rps", "64", "--percentile", "1"],
            "--percentile must be a fraction strictly between 0 and 1, e.g. 0.95 (got 1.0)",
        ),
        (["--mean-rps", "-3"], "--mean-rps must be a finite number >= 0 (got -3.0)"),
        (
            ["--mean-rps", "3", "--window-s", "0"],
            "--window-s must be a positive number of seconds (got 0.0)",
        ),
        (
            ["--mean-rps", "3", "--dispersion", "-1"],
            "--dispersion must be a finite number >= 0; 0 is Poisson (got -1.0)",
        ),
        (
            ["--requests-per-day", "1000", "--active-hours", "25"],
            "--active-hours must be in (0, 24] hours (got 25.0)",
        ),
        (
            ["--daily-active-users", "0", "--requests-per-user", "3"],
            "--daily-active-users must be a finite number > 0 (got 0.0)",
        ),
        (
            ["--daily-active-users", "1e30", "--requests-per-user", "3"],
            "--daily-active-users × --requests-per-user must be at most 8.64e+13 requests/day"
            " (got 3e+30)",
        ),
    ],
    ids=[
        "percentile-95",
        "percentile-1",
        "negative-rate",
        "zero-window",
        "dispersion",
        "hours",
        "no-users",
        "too-many-users",
    ],
)
def test_bad_values_exit_1_with_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["peak", *args])
    assert result.exit_code == 1
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


def test_help_explains_dispersion() -> None:
    result = runner.invoke(app, ["peak", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "squared coefficient of variation" in result.stdout
    assert "infersize peak --mean-rps 64" in result.stdout


USERS = [
    "peak",
    "--daily-active-users",
    "678720",
    "--requests-per-user",
    "3",
    "--active-hours",
    "8",
]
BACK = ["peak", "--mean-rps", "70.7", "--active-hours", "8", "--requests-per-user", "3"]


def test_users_to_requests_to_rate_and_back() -> None:
    # 678,720 users × 3 requests = 2,036,160 requests/day; over an 8-hour working day that is
    # 2,036,160 / (8 · 3600 s) = 70.7 req/s on average; Poisson ppf(0.95, 70.7) = 85 req/s.
    result = runner.invoke(
        app,
        [
            "peak",
            "--daily-active-users",
            "678720",
            "--requests-per-user",
            "3",
            "--active-hours",
            "8",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "85\n"  # the peak alone on stdout, for scripts
    assert "mean 70.7 req/s" in result.stderr and "2,036,160 requests/day" in result.stderr
    assert "Poisson p95 peak" in result.stderr
    forward = json.loads(
        runner.invoke(
            app,
            [*USERS, "-f", "json"],
        ).stdout
    )
    assert forward["requests_per_day"] == 2_036_160
    assert forward["mean_rps"] == pytest.approx(70.7)
    # the same peak as the mean given directly
    assert f"{forward['peak_rps']:g}\n" == runner.invoke(app, ["peak", "--mean-rps", "70.7"]).stdout
    # and back: 70.7 req/s for 8 hours at 3 requests each is 678,720 users
    back = json.loads(
        runner.invoke(
            app,
            [*BACK, "-f", "json"],
        ).stdout
    )
    assert back["requests_per_day"] == pytest.approx(2_036_160)
    assert back["daily_active_users"] == pytest.approx(678_720)
    assert back["peak_rps"] == forward["peak_rps"]
