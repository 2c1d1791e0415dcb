"""`infersize check` exit codes end to end: a real subprocess of the installed console script.

The shipped default scenario (Llama-3-8B FP8 on DGX H100, 2000 / 200 tokens, 200 peak RPS,
TTFT < 500 ms) plans 3 DGX H100 with TP1 instances (ceil(200 / 70.7 req/s per DGX) = 3), so
--max-servers 3 is within budget and --max-servers 2 is one server over.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

SCRIPT = shutil.which("infersize")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "inferencesize"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}
    return subprocess.run(
        [*COMMAND, "check", "default", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_within_budget_exits_0() -> None:
    done = _run("--max-servers", "3")
    assert done.returncode == 0, done.stderr
    line = _one_line(done.stderr)
    assert line.startswith("ok: 3 × dgx-h100")
    assert "within budget" in line
    assert done.stdout == ""  # text format: the summary line only


def test_over_budget_exits_4_and_says_by_how_much() -> None:
    done = _run("--max-servers", "2")
    assert done.returncode == 4, done.stderr
    line = _one_line(done.stderr)
    assert "over budget" in line
    assert "servers 3 > 2 (over by 1)" in line


def test_over_gpu_budget_counts_the_gpus_paid_for() -> None:
    done = _run("--max-gpus", "8", "--format", "json")
    assert done.returncode == 4, done.stderr
    out = json.loads(done.stdout)
    gpus = out["plan"]["economics"]["gpus_paid"]  # whole 8-GPU servers, idle GPUs included
    assert gpus == 8 * out["plan"]["servers"] and gpus >= out["plan"]["gpus"] > 8
    assert out["within_budget"] is False
    assert out["held"]["gpus"] == gpus and out["held"]["plan"].startswith("3 × dgx-h100")
    line = _one_line(done.stderr)
    assert f"GPUs {gpus} > 8 (over by {gpus - 8})" in line


def test_infeasible_exits_3_with_nearest_miss() -> None:
    done = _run("--max-servers", "3", "--ttft-ms", "1")
    assert done.returncode == 3, done.stderr
    line = _one_line(done.stderr)
    assert "no feasible plan" in line
    m = re.search(r"best TTFT is ([\d.]+) ms on dgx-h100 fp8 tp1 > limit 1 ms", line)
    assert m is not None, line
    assert float(m.group(1)) > 1.0


def test_unknown_model_exits_1() -> None:
    done = _run("--max-servers", "3", "--model", "no-such-model")
    assert done.returncode == 1, done.stderr
    line = _one_line(done.stderr)
    assert "unknown model 'no-such-model'" in line


def test_missing_budget_is_bad_input() -> None:
    done = _run()
    assert done.returncode == 1, done.stderr
    assert "check needs a budget" in _one_line(done.stderr)


@pytest.mark.parametrize(("cap", "code"), [("3", 0), ("2", 4)])
def test_json_on_stdout_parses(cap: str, code: int) -> None:
    done = _run("--max-servers", cap, "--format", "json")
    assert done.returncode == code, done.stderr
    _one_line(done.stderr)
    out = json.loads(done.stdout)
    assert out["schema_version"] == 1
    assert out["budget"]["max_servers"] == int(cap)
    assert out["within_budget"] is (code == 0)
    plan = out["plan"]
    assert (plan["hardware"], plan["precision"], plan["tp"], plan["pp"]) == (
        "dgx-h100",
        "fp8",
        1,
        1,
    )
    assert plan["servers"] == 3
    assert out["peak_rps"] == 200
    assert plan["per_instance"]["ttft_ms"] <= 500
    # instances x per-instance rate covers the peak, one fewer does not
    rate = plan["per_instance"]["requests_per_s"]
    assert plan["instances"] * rate >= 200 > (plan["instances"] - 1) * rate
