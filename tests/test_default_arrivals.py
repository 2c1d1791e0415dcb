"""Which arrivals a question is sized for when it states none: Poisson where the open-loop
model applies, closed-loop clients where only the closed-loop model does; stating the other
there is an error, not silently ignored."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.specs.scenario import ScenarioSpec

BASE: dict[str, Any] = {
    "model": "llama-3-8b",
    "isl": 1000,
    "osl": 200,
    "peak_rps": 10,
    "ttft_ms": 500,
}
STATIC = {"batching": "static"}
runner = CliRunner()
DISAGG = {"disaggregated": {"prefill": {"tp": [1]}, "decode": {"tp": [1]}}}


def _spec(**extra: Any) -> ScenarioSpec:
    return ScenarioSpec.model_validate({**BASE, **extra})


def test_traffic_defaults_to_poisson() -> None:
    s = _spec()
    assert s.arrivals == "poisson" and s.cv == 1.0
    assert _spec(cv=2.0).cv == 2.0  # burstier gaps need no stated arrivals
    assert _spec(latency_stat="p99").statistics == ("p99", "p99", "p99")


@pytest.mark.parametrize("extra", [STATIC, DISAGG], ids=["static", "disaggregated"])
def test_questions_only_the_closed_loop_model_answers_default_to_it(extra: dict[str, Any]) -> None:
    assert _spec(**extra).arrivals == "closed-loop"
    with pytest.raises(ValidationError, match="arrivals: poisson, but"):
        _spec(**extra, arrivals="poisson")
    # a percentile limit there names why it cannot be held
    with pytest.raises(ValidationError, match="percentile limits need arrivals: poisson; "):
        _spec(**extra, latency_stat="p95")


def test_a_stated_benchmark_keeps_closed_loop_and_refuses_a_cv() -> None:
    assert _spec(arrivals="closed-loop").arrivals == "closed-loop"
    with pytest.raises(ValidationError, match="cv: describes arrivals at a rate"):
        _spec(arrivals="closed-loop", cv=2.0)


def test_an_offline_batch_has_no_arrivals() -> None:
    batch = {k: v for k, v in BASE.items() if k not in ("peak_rps", "ttft_ms")}
    offline = {"offline": {"requests": 1000, "deadline_h": 1.0}}
    assert ScenarioSpec.model_validate({**batch, **offline}).arrivals == "closed-loop"
    for stated in ({"arrivals": "poisson"}, {"arrivals": "closed-loop"}, {"cv": 2.0}):
        with pytest.raises(ValidationError, match="offline: offline batches have no arrivals"):
            ScenarioSpec.model_validate({**batch, **offline, **stated})


def test_plan_says_which_arrivals_it_sized_for_and_where_that_came_from() -> None:
    question = ["--model", "llama-3-8b", "--isl", "1000", "--osl", "200", "--peak-rps", "10"]
    question += ["--ttft-ms", "500", "--hardware", "h100-sxm", "--tp", "1", "--pp", "1"]
    for args, arrivals, origin in (
        (question, "poisson", "default"),
        ([*question, "--arrivals", "closed-loop"], "closed-loop", "flag"),
        (["default"], "closed-loop", "scenario"),  # the NVIDIA seed states its benchmark
    ):
        result = runner.invoke(app, ["plan", *args, "--format", "json"])
        assert result.exit_code == 0, result.stderr
        rec = json.loads(result.stdout)
        assert (rec["arrivals"], rec["origins"]["arrivals"]) == (arrivals, origin)
        table = runner.invoke(app, ["plan", *args])
        title = table.stdout.splitlines()[0]
        assert ("Poisson arrivals" if arrivals == "poisson" else "closed-loop clients") in title


def test_a_table_prints_the_stated_percentiles_and_the_record_holds_them_all() -> None:
    question = ["--model", "llama-3-8b", "--isl", "1000", "--osl", "200", "--peak-rps", "10"]
    question += ["--ttft-ms", "500", "--hardware", "h100-sxm", "--tp", "1", "--pp", "1"]
    rec = json.loads(runner.invoke(app, ["plan", *question, "--format", "json"]).stdout)
    per = rec["plan"]["per_instance"]
    assert {f"{m}_ms_p{q}" for m in ("ttft", "itl", "e2e") for q in (50, 90, 95, 99)} <= set(per)
    assert per["ttft_ms_p50"] <= per["ttft_ms_p99"] < per["e2e_ms_p50"]
    p95 = runner.invoke(app, ["plan", *question, "--latency-stat", "p95"]).stdout
    assert "latency at peak (p95)" in p95 and "(p99)" not in p95
    # mean limits in a table: no percentile is computed, and the special functions that only
    # percentiles need are never imported
    code = (
        "import sys, contextlib, io\n"
        "from inferencesize.cli import build_app\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try: build_app(['plan'])({['plan', *question]!r})\n"
        "    except SystemExit as e: assert e.code in (0, None), e.code\n"
        "print('scipy.special' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
