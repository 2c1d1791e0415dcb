"""Offline sizing (``plan --requests N --deadline-h H``, ``--tokens-per-day T``, scenario
``offline:``): a batch finished by a deadline at each instance's throughput-optimal load.

Hand-computed: N requests in H hours need N / (3600 H) requests/s, so ⌈that / X⌉ instances of
throughput X each; T tokens a day are T / (ISL + OSL) requests in 24 h. X is the highest
closed-loop rate within the KV capacity (checked against `estimate` at several loads).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from inferencesize.cli import app
from inferencesize.offline import OfflineBatch, finish_s, offline_batch

runner = CliRunner()
ISL, OSL = 1000, 200
BASE = [
    "plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8", "--tp", "1",
    "--pp", "1", "--isl", str(ISL), "--osl", str(OSL),
]  # fmt: skip


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def plan_json(*args: str | Path) -> dict[str, Any]:
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def one_line_error(result: Result, *needles: str) -> str:
    assert result.exit_code in (1, 2), (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def batch() -> dict[str, Any]:
    return plan_json(*BASE, "--requests", "1e6", "--deadline-h", "8")


def test_instances_are_the_batch_over_the_deadline_over_throughput(batch: dict[str, Any]) -> None:
    p, o = batch["plan"], batch["offline"]
    need = 1e6 / (8 * 3600)  # 34.72 requests/s
    assert o["requests"] == 1e6 and o["deadline_h"] == 8 and o["tokens_per_day"] is None
    assert o["required_rps"] == pytest.approx(need) == batch["peak_rps"]
    x = p["per_instance"]["requests_per_s"]
    assert p["instances"] == math.ceil(need / x)
    assert p["gpus"] == p["instances"]  # tp1
    # no latency limit: the load stops at the KV capacity
    assert p["binding_constraint"] == "memory"
    assert all(v is None for v in batch["limits"].values())
    # the fleet answers the last request by the deadline: N / capacity plus one E2E
    finish = 1e6 / p["capacity_rps"] + p["per_instance"]["e2e_ms"] / 1e3
    assert o["finish_h"] == pytest.approx(finish / 3600)
    assert o["meets_deadline"] is True and o["finish_h"] <= 8


def test_load_is_throughput_optimal(batch: dict[str, Any]) -> None:
    """No concurrency within the KV capacity serves more requests/s than the chosen load."""
    x = batch["plan"]["per_instance"]["requests_per_s"]
    point = ["--model", "llama-3-8b", "--hardware", "h100-sxm", "--isl", str(ISL)]
    top = json.loads(
        invoke("estimate", *point, "--osl", str(OSL), "--concurrency", "1", "-f", "json").stdout
    )["max_concurrency"]
    for c in (1, 16, 128, top // 2, top):
        rec = json.loads(
            invoke(
                "estimate", *point, "--osl", str(OSL), "--concurrency", str(c), "-f", "json"
            ).stdout
        )
        assert rec["requests_per_s"] <= x * (1 + 1e-6), c


def test_tokens_per_day_are_requests_in_a_day(batch: dict[str, Any]) -> None:
    tokens = 1e10
    data = plan_json(*BASE, "--tokens-per-day", f"{tokens:g}")
    o, p = data["offline"], data["plan"]
    requests = tokens / (ISL + OSL)
    assert o["tokens_per_day"] == tokens and o["deadline_h"] == 24
    assert o["requests"] == pytest.approx(requests)
    assert data["peak_rps"] == pytest.approx(requests / 86_400)
    # the same instance and load as any offline batch: only the count differs
    x = batch["plan"]["per_instance"]["requests_per_s"]
    assert p["per_instance"]["requests_per_s"] == pytest.approx(x)
    assert p["instances"] == math.ceil(requests / 86_400 / x)


def test_more_work_or_less_time_never_fewer_gpus() -> None:
    gpus = [
        plan_json(*BASE, "--requests", f"{n:g}", "--deadline-h", f"{h:g}")["plan"]["gpus"]
        for n, h in ((2e5, 8), (1e6, 8), (4e6, 8), (4e6, 2))
    ]
    assert gpus == sorted(gpus) and gpus[-1] > gpus[0]


def test_scenario_block_matches_flags(tmp_path: Path, batch: dict[str, Any]) -> None:
    path = tmp_path / "offline.yaml"
    path.write_text(
        "model: llama-3-8b\nisl: 1000\nosl: 200\nhardware: [dgx-h100]\nprecision: [fp8]\n"
        "tp: [1]\npp: [1]\noffline: {requests: 1000000, deadline_h: 8}\n",
        encoding="utf-8",
    )
    data = plan_json("plan", path)
    assert data["plan"]["instances"] == batch["plan"]["instances"]
    assert data["offline"] == batch["offline"]


def test_offline_flags_replace_the_scenario_traffic_and_limits() -> None:
    """The shipped default states a peak and a TTFT limit; offline flags replace both."""
    data = plan_json("plan", "default", "--requests", "1e5", "--deadline-h", "1")
    assert data["offline"]["required_rps"] == pytest.approx(1e5 / 3600)
    assert data["mean_rps"] is None and data["limits"]["ttft_ms"] is None


def test_table_names_the_batch() -> None:
    result = invoke(*BASE, "--requests", "1e6", "--deadline-h", "8")
    assert result.exit_code == 0, result.stderr
    assert "offline batch" in result.stdout and "1,000,000 requests within 8 h" in result.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--requests", "1e6", "--deadline-h", "8", "--ttft-ms", "300"], ["drop --ttft-ms"]),
        (["--requests", "1e6", "--deadline-h", "8", "--peak-rps", "3"], ["drop --peak-rps"]),
        (["--tokens-per-day", "1e9", "--arrivals", "poisson"], ["drop --arrivals"]),
        (["--requests", "1e6"], ["deadline_h", "required"]),
        (["--tokens-per-day", "1e9", "--deadline-h", "30"], ["within 24 hours"]),
        (["--tokens-per-day", "1e9", "--requests", "5", "--deadline-h", "3"], ["exactly one"]),
        (["--requests", "0", "--deadline-h", "3"], ["--requests"]),
        (["--requests", "1e6", "--deadline-h", "0"], ["--deadline-h"]),
        (["--requests", "1e6", "--deadline-h", "inf"], ["--deadline-h"]),
    ],
)
def test_bad_offline_questions_are_one_line(args: list[str], needles: list[str]) -> None:
    one_line_error(invoke(*BASE, *args), *needles)


def test_scenario_with_limits_and_a_batch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "both.yaml"
    path.write_text(
        "model: llama-3-8b\nisl: 1000\nosl: 200\nttft_ms: 300\n"
        "offline: {requests: 1000, deadline_h: 1}\n",
        encoding="utf-8",
    )
    one_line_error(invoke("plan", path), "offline", "drop ttft_ms")


def test_batch_arithmetic() -> None:
    b = offline_batch(ISL, OSL, requests=7200, deadline_h=2)
    assert b == OfflineBatch(7200, 7200.0) and b.rate_rps == 1.0
    t = offline_batch(ISL, OSL, tokens_per_day=1.2e6 * 86.4)
    assert t.requests == pytest.approx(86_400) and t.deadline_s == 86_400 and t.rate_rps == 1.0
    assert finish_s(b, capacity_rps=2.0, e2e_s=5.0) == 3600 + 5.0
    with pytest.raises(ValueError):
        offline_batch(ISL, OSL, requests=10)
    with pytest.raises(ValueError):
        OfflineBatch(0, 10)


def test_verify_and_sweep_name_what_an_offline_batch_lacks() -> None:
    offline = ["--requests", "1e6", "--deadline-h", "8"]
    one_line_error(invoke(*BASE, *offline, "--verify"), "--verify", "no arrivals")
    sweep = ["sweep", *BASE[1:], *offline, "--vary", "isl=500,1000"]
    one_line_error(invoke(*sweep), "sweep", "offline batch")
