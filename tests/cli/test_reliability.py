"""Defects of robustness: non-finite and absurd numbers are one-line input errors, simulated
overload is reported, import-hf creates the folders of --out, a sweep killed while writing
--out leaves no temporary file, progress only on a terminal after a second."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app, common

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--peak-rps", "inf", "--peak-rps: expected a finite number (got inf)"),
        ("--peak-rps", "nan", "--peak-rps: expected a finite number (got nan)"),
        ("--peak-rps", "1e308", "--peak-rps: must be <= 1e+09 (got 1e+308)"),
        ("--peak-rps", "-5", "--peak-rps: must be >= 0 (got -5)"),
        ("--mean-rps", "1e308", "--mean-rps: must be <= 1e+09 (got 1e+308)"),
        ("--ttft-ms", "nan", "--ttft-ms: expected a finite number (got nan)"),
        ("--usd-per-gpu-hour", "inf", "--usd-per-gpu-hour: expected a finite number (got inf)"),
        ("--percentile", "nan", "--percentile: expected a finite number (got nan)"),
    ],
)
def test_non_finite_and_huge_numbers_are_one_line_input_errors(
    flag: str, value: str, message: str
) -> None:
    result = runner.invoke(app, ["plan", "default", flag, value])
    assert result.exit_code == 1
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


def test_non_finite_rates_in_a_scenario_file_are_input_errors(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("model: llama-3-8b\nisl: 1000\nosl: 100\npeak_rps: .inf\nttft_ms: 500\n")
    result = runner.invoke(app, ["plan", str(scenario)])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "peak_rps" in result.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "1e308"])
def test_simulate_rate_must_be_finite(value: str) -> None:
    base = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm"]
    result = runner.invoke(app, [*base, "--rate", value])
    assert result.exit_code == 1 and result.stderr.startswith("error: --rate: ")


SIM = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--requests", "600"]


def test_an_overloaded_simulation_says_so() -> None:
    result = runner.invoke(app, [*SIM, "--rate", "100", "-f", "json"])
    assert result.exit_code == 0  # a result, not an error
    rec = json.loads(result.stdout)
    assert rec["overloaded"] is True
    assert rec["arrival_rps"] == pytest.approx(100, rel=0.15)
    assert rec["completion_rps"] < 0.5 * rec["arrival_rps"]
    table = runner.invoke(app, [*SIM, "--rate", "100"])
    assert table.exit_code == 0
    warnings = [line for line in table.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "overloaded" in warnings[0]
    csv_out = runner.invoke(app, [*SIM, "--rate", "100", "-f", "csv"]).stdout
    row = next(csv.DictReader(io.StringIO(csv_out)))
    assert row["overloaded"] == "true"
    assert float(row["arrival_rps"]) > float(row["completion_rps"])


def test_compare_flags_the_batching_that_falls_behind() -> None:
    """At 8 req/s of 2,000 requests static and dynamic batching serve about 7.4 req/s while
    their wait for a batch grows through the run (mean TTFT ~10 s); in-flight keeps up."""
    args = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "8"]
    args += ["--compare", "static,dynamic,inflight", "--requests", "2000"]
    recs = {r["batching"]: r for r in json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)}
    for name in ("static", "dynamic"):
        r = recs[name]
        assert r["completion_rps"] < 0.95 * r["arrival_rps"]  # the premise: 7.4 of 8
        assert r["overloaded"] is True, r
    assert recs["inflight"]["overloaded"] is False
    table = runner.invoke(app, args)
    warned = [line for line in table.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 2 and all("overloaded" in line for line in warned)


def test_a_steady_simulation_is_not_overloaded() -> None:
    result = runner.invoke(app, [*SIM, "--rate", "4"])
    assert result.exit_code == 0 and result.stderr == ""
    rec = json.loads(runner.invoke(app, [*SIM, "--rate", "4", "-f", "json"]).stdout)
    assert rec["overloaded"] is False
    assert rec["completion_rps"] == pytest.approx(rec["arrival_rps"], rel=0.1)


def test_import_hf_creates_the_folders_of_out(tmp_path: Path) -> None:
    config = ROOT / "tests" / "fixtures" / "hf" / "llama-3.1-8b.json"
    out = tmp_path / "my-catalog" / "models" / "x.yaml"
    result = runner.invoke(
        app, ["catalog", "import-hf", str(config), "--id", "x", "--out", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    assert out.is_file() and "id: x" in out.read_text()
    again = runner.invoke(
        app, ["catalog", "import-hf", str(config), "--id", "x", "--out", str(out)]
    )
    assert again.exit_code == 1 and "already exists" in again.stderr


SCRIPT = shutil.which("infersize")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "inferencesize"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_killed_sweep_leaves_no_temporary_file(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "grid.csv"
    grid = ["--vary", "isl=100:20000:10", "--vary", "peak_rps=1:50"]  # 100,000 points
    proc = subprocess.Popen(
        [*COMMAND, "sweep", *grid, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    deadline = time.monotonic() + 60
    temp: list[Path] = []
    while time.monotonic() < deadline and not any(t.stat().st_size > 0 for t in temp):
        time.sleep(0.05)
        temp = list(tmp_path.glob(".grid.csv.*.tmp"))
    assert temp, "the sweep never started writing"
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == 128 + sig
    assert list(tmp_path.iterdir()) == []  # neither the temporary file nor a partial grid.csv
    assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_appears_on_a_terminal_after_the_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    with common.Progress("work", total=3, delay_s=0.05) as bar:
        time.sleep(0.3)
        bar.advance()
    assert bar.was_shown


def test_progress_stays_silent_for_quick_work_and_pipes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", Tty())
    with common.Progress("quick", delay_s=5.0) as quick:
        pass
    assert not quick.was_shown and sys.stderr.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with common.Progress("piped", delay_s=0.0) as piped:
        time.sleep(0.1)
    assert not piped.was_shown and sys.stderr.getvalue() == ""
