"""``plan --trace``: the plan sized for the trace's length distribution (the default) or its
mean lengths (``--trace-lengths mean``), both answers shown (``trace.lengths`` in JSON, a row
in the table)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from inferencesize.cli import app


def _trace(tmp_path: Path) -> Path:
    rng = np.random.default_rng(11)
    times = np.cumsum(rng.exponential(1 / 8.0, 2400))  # 8 req/s for about 300 s
    long = rng.random(len(times)) < 0.1  # one prompt in ten is 14 times the others
    isl = np.where(long, 7000, 500)
    rows = "".join(f"{t:.4f},{i},100\n" for t, i in zip(times, isl, strict=True))
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,isl,osl\n" + rows)
    return path


def _plan(path: Path, *more: str) -> dict:  # type: ignore[type-arg]
    question = ["plan", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--precision"]
    question += ["fp8", "--tp", "2", "--pp", "1", "--ttft-ms", "800", "--itl-ms", "60"]
    question += ["--latency-stat", "p99", "--trace", str(path), "-f", "json", *more]
    result = CliRunner().invoke(app, question)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_plan_json_shows_the_distribution_and_the_mean_lengths(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    rec = _plan(path)
    lengths = rec["trace"]["lengths"]
    assert lengths["sized_for"] == "distribution"
    assert sum(b["probability"] for b in lengths["bins"]) == pytest.approx(1.0)
    assert [b["isl_mean"] for b in lengths["prompt_bins"]] == [500.0, 7000.0]
    # every answer is 100 tokens: the reservation is the mean ISL + OSL
    isl_mean = rec["trace"]["isl_mean"]
    assert lengths["kv_tokens_per_sequence"] == pytest.approx(isl_mean + 100)
    assert lengths["decode_context_tokens"] == pytest.approx(isl_mean + 50)
    plan = rec["plan"]
    assert lengths["distribution"] == {"instances": plan["instances"], "gpus": plan["gpus"]}
    # the long prompts set the TTFT tail: a mean-length plan needs fewer GPUs than is true
    assert lengths["mean"]["gpus"] < lengths["distribution"]["gpus"]
    by_mean = _plan(path, "--trace-lengths", "mean")
    assert by_mean["trace"]["lengths"]["sized_for"] == "mean"
    assert by_mean["trace"]["lengths"]["mean"] == lengths["mean"]
    assert by_mean["trace"]["lengths"]["distribution"] == lengths["distribution"]
    assert by_mean["plan"]["instances"] == lengths["mean"]["instances"]


def test_the_table_row_and_a_wrong_value(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    question = ["plan", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "2"]
    question += ["--ttft-ms", "800", "--itl-ms", "60", "--trace", str(path)]
    table = CliRunner().invoke(app, question)
    assert table.exit_code == 0, table.stderr
    assert "sized for the length distribution (2 prompt bins" in table.stdout
    wrong = CliRunner().invoke(app, [*question, "--trace-lengths", "median"])
    assert wrong.exit_code == 1  # bad input (DESIGN.md)
    assert "trace_lengths" in wrong.stderr and "Traceback" not in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
