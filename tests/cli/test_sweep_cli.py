"""`infersize sweep` in-process: a pinned 3×3×3 grid, formats, atomic --out, bad input."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.render.sweep import INPUT_COLUMNS, RESULT_COLUMNS

runner = CliRunner()

GRID = [
    "sweep",
    "--vary",
    "hardware=dgx-h100,h100-sxm,h200-sxm",
    "--vary",
    "isl=1000,2000,4000",
    "--vary",
    "peak_rps=50,200,800",
]
# The shipped default scenario (Llama-3-8B FP8 TP1, OSL 200, TTFT ≤ 500 ms, nim-2024). The
# H200 has the H100's compute die and architecture (the same fitted shares): the TTFT-bound
# load is about the H100's, its faster HBM serves at least as many req/s. dgx-h100 and a bare
# h100-sxm (packed 8 per node) must agree.
# Published (NVIDIA DLI sizing notebook, NIM): 8.843 req/s per TP1 instance at TTFT 489.5 ms.
# Issue #4 accepts 15 % on it (the model's TTFT at 25 clients is a little under the measured
# 489.5 ms, so the TTFT-bound load is a few clients more than 25).
SEED_MEASURED_RPS = 8.843


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_pinned_3x3x3_grid() -> None:
    result = runner.invoke(app, GRID)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    header = result.stdout.splitlines()[0].split(",")
    assert header == [*INPUT_COLUMNS, *RESULT_COLUMNS]
    rows = _rows(result.stdout)
    assert len(rows) == 27
    assert [int(r["point"]) for r in rows] == list(range(27))
    for i in range(9):  # dgx-h100 and a bare h100-sxm: the same plan
        dgx, bare = rows[i], rows[9 + i]
        for k in ("servers", "gpus", "instances", "concurrency", "rps_per_instance"):
            assert dgx[k] == bare[k], (i, k)
    rates = {(r["hardware_options"], int(r["isl"])): float(r["rps_per_instance"]) for r in rows}
    for isl in (1000, 2000, 4000):
        assert rates[("h200-sxm", isl)] >= rates[("h100-sxm", isl)]
    for hw in ("h100-sxm", "h200-sxm"):  # longer prompts: fewer requests per instance
        assert rates[(hw, 1000)] > rates[(hw, 2000)] > rates[(hw, 4000)]
    for i, r in enumerate(rows):
        hw, isl, peak = r["hardware_options"], int(r["isl"]), float(r["peak_rps"])
        assert (hw, isl, peak) == (
            ["dgx-h100", "h100-sxm", "h200-sxm"][i // 9],
            [1000, 2000, 4000][i // 3 % 3],
            [50.0, 200.0, 800.0][i % 3],
        )
        assert r["feasible"] == "true" and r["reason"] == ""
        assert r["hardware"] == hw and r["precision"] == "fp8" and r["tp"] == "1"
        # the load is the largest meeting the limit: 1/64 client more misses TTFT = 500 ms
        assert 499.0 < float(r["ttft_ms"]) <= 500.0
        assert float(r["ttft_ms"]) <= 500.0 and r["binding_constraint"] == "ttft"
        # the sizing arithmetic: TP1 instances, 8 per server
        rate = float(r["rps_per_instance"])
        instances = math.ceil(peak / rate - 1e-9)
        assert int(r["instances"]) == instances == int(r["gpus"])
        assert int(r["servers"]) == math.ceil(instances / 8)
        assert float(r["capacity_rps"]) == pytest.approx(instances * rate, rel=1e-5)
        e2e = float(r["ttft_ms"]) + 199 * float(r["itl_ms"])
        assert float(r["e2e_ms"]) == pytest.approx(e2e, rel=1e-5)
    seed = rows[4]  # dgx-h100, ISL 2000, 200 req/s: the default scenario itself
    assert float(seed["rps_per_instance"]) == pytest.approx(SEED_MEASURED_RPS, rel=0.15)


@pytest.mark.parametrize("point", [0, 13, 26])
def test_rows_match_plan(point: int) -> None:
    """A sweep row is what `infersize plan` answers for the same inputs."""
    rows = _rows(runner.invoke(app, GRID).stdout)
    r = rows[point]
    args = ["plan", "default", "--hardware", r["hardware_options"], "--isl", r["isl"]]
    planned = runner.invoke(app, [*args, "--peak-rps", r["peak_rps"], "--format", "json"])
    assert planned.exit_code == 0, planned.stderr
    p = json.loads(planned.stdout)["plan"]
    assert (p["servers"], p["gpus"], p["instances"]) == (
        int(r["servers"]),
        int(r["gpus"]),
        int(r["instances"]),
    )
    assert p["per_instance"]["concurrency"] == pytest.approx(float(r["concurrency"]), rel=1e-5)
    assert p["per_instance"]["ttft_ms"] == pytest.approx(float(r["ttft_ms"]), rel=1e-5)


def test_jsonl_and_atomic_out(tmp_path: Path) -> None:
    out = tmp_path / "grid.jsonl"
    result = runner.invoke(
        app, ["sweep", "--vary", "mean_rps=10:30:10", "--format", "jsonl", "--out", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == f"wrote 3 points to {out}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.jsonl"]  # no temporary left
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["mean_rps"] for r in rows] == [10, 20, 30]
    # Poisson 95th percentiles of 10, 20, 30 req/s
    assert [r["peak_rps"] for r in rows] == [15, 28, 39]
    assert list(rows[0]) == [*INPUT_COLUMNS, *RESULT_COLUMNS]
    assert all(r["feasible"] is True for r in rows)


def test_failed_sweep_leaves_out_untouched(tmp_path: Path) -> None:
    out = tmp_path / "keep.csv"
    out.write_text("old\n")
    result = runner.invoke(app, ["sweep", "--vary", "isl=100:10", "--out", str(out)])
    assert result.exit_code == 1
    assert out.read_text() == "old\n"


def test_infeasible_and_invalid_points_are_rows() -> None:
    result = runner.invoke(
        app, ["sweep", "--vary", "ttft_ms=1,500", "--vary", "mode=streaming,sequential"]
    )
    assert result.exit_code == 0, result.stderr
    rows = _rows(result.stdout)
    assert [r["feasible"] for r in rows] == ["false", "false", "true", "false"]
    assert rows[0]["reason"].startswith("best TTFT is") and rows[0]["binding_constraint"] == "ttft"
    assert rows[0]["servers"] == "" and rows[0]["ttft_ms_limit"] == "1"
    for r in (rows[1], rows[3]):  # sequential mode needs e2e_ms
        assert r["reason"] == (
            "invalid scenario: e2e_ms: mode sequential needs e2e_ms (the whole answer is what counts)"
        )


def test_context_overflow_is_an_infeasible_row() -> None:
    result = runner.invoke(app, ["sweep", "--vary", "isl=1000,9000"])
    rows = _rows(result.stdout)
    assert [r["feasible"] for r in rows] == ["true", "false"]
    assert "exceeds the context window 8192" in rows[1]["reason"]


def test_varied_field_without_input_column_comes_after_point() -> None:
    result = runner.invoke(app, ["sweep", "--vary", "system_prompt_tokens=0,1000"])
    assert result.exit_code == 0, result.stderr
    header = result.stdout.splitlines()[0].split(",")
    assert header[:3] == ["point", "system_prompt_tokens", "model"]
    rows = _rows(result.stdout)
    assert [r["isl"] for r in rows] == ["2000", "3000"]  # input tokens include the prompt


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vary", "nosuch=1"], "error: --vary nosuch: not a scenario field; fields: model,"),
        (["--vary", "isl=100:10"], "error: --vary isl=100:10: empty range (start 100 > stop 10)"),
        (
            ["--vary", "hardware=h100-sxn"],
            "error: --vary hardware: unknown hardware (GPU or system) 'h100-sxn'; did you mean h100-sxm",
        ),
        (["--vary", "isl=1,2", "--vary", "isl=3"], "error: --vary isl: given twice"),
        (["--vary", "isl=1", "--format", "xml"], None),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str | None) -> None:
    result = runner.invoke(app, ["sweep", *args])
    if message is None:
        assert result.exit_code == 2
        return
    assert result.exit_code == 1
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1 and result.stdout == ""


@pytest.mark.parametrize(
    ("scenario", "axis", "flag"),
    [
        ("prefix-caching", "", None),  # techniques applied per point (isl axis)
        ("default", "objective=gpus,power", "--objective"),  # ranked by the point's objective
        ("economics-owned", "isl=1000,2000", "--isl"),  # priced by the scenario's economics
    ],
)
def test_configured_options_plan_like_plan(scenario: str, axis: str, flag: str | None) -> None:
    """A point whose scenario sets techniques / objective / economics is what `plan` says."""
    if flag is None:
        axis, flag = "isl=1500,2500", "--isl"
    field, values = axis.split("=")
    sweep = runner.invoke(app, ["sweep", scenario, "--vary", axis])
    pairs = [(field, [flag, v]) for v in values.split(",")]  # grid order = input order
    assert sweep.exit_code == 0, sweep.stderr
    rows = _rows(sweep.stdout)
    assert len(rows) == 2
    for r, (_, extra) in zip(rows, pairs, strict=True):
        planned = runner.invoke(app, ["plan", scenario, *extra, "--format", "json"])
        assert planned.exit_code == 0, planned.stderr
        p = json.loads(planned.stdout)["plan"]
        assert (p["hardware"], p["servers"], p["gpus"]) == (
            r["hardware"],
            int(r["servers"]),
            int(r["gpus"]),
        )
        assert p["per_instance"]["concurrency"] == pytest.approx(float(r["concurrency"]), rel=1e-5)


# --- streaming, shards and workers ---------------------------------------------------------

# 2 × 3 × 5 = 30 points: not a multiple of 4, so the shards differ in size
SHARDED = [
    "sweep",
    "--vary",
    "hardware=h100-sxm,b200",
    "--vary",
    "isl=500,1000,64000",  # 64000 overflows the context: infeasible rows shard too
    "--vary",
    "mean_rps=1:41:10",
]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_shards_concatenated_equal_the_single_run(fmt: str) -> None:
    single = runner.invoke(app, [*SHARDED, "-f", fmt])
    assert single.exit_code == 0, single.stderr
    parts = [runner.invoke(app, [*SHARDED, "-f", fmt, "--shard", f"{k}/4"]) for k in (1, 2, 3, 4)]
    assert all(p.exit_code == 0 for p in parts), [p.stderr for p in parts]
    assert "".join(p.stdout for p in parts) == single.stdout
    lines = [len(p.stdout.splitlines()) for p in parts]
    header = 1 if fmt == "csv" else 0
    # 30 points in 4 contiguous blocks: 7, 8, 7, 8 (only part 1 has the header)
    assert lines == [7 + header, 8, 7, 8]
    assert single.stdout.count("\n") == 30 + header


def test_more_shards_than_points_leaves_empty_parts() -> None:
    single = runner.invoke(app, ["sweep", "--vary", "mean_rps=5,10"])
    parts = [
        runner.invoke(app, ["sweep", "--vary", "mean_rps=5,10", "--shard", f"{k}/3"])
        for k in (1, 2, 3)
    ]
    assert [p.exit_code for p in parts] == [0, 0, 0]
    assert "".join(p.stdout for p in parts) == single.stdout


def test_workers_equal_one_process(tmp_path: Path) -> None:
    single = runner.invoke(app, [*SHARDED, "--shard", "2/3"])
    out = tmp_path / "w.csv"
    pooled = runner.invoke(app, [*SHARDED, "--shard", "2/3", "--workers", "2", "--out", str(out)])
    assert pooled.exit_code == 0, pooled.stderr
    assert out.read_text() == single.stdout
    assert pooled.stderr == f"wrote 10 points to {out}\n"


def test_rows_do_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    from inferencesize import sweep

    whole = runner.invoke(app, SHARDED)
    monkeypatch.setattr(sweep, "CHUNK_POINTS", 4)
    chunked = runner.invoke(app, SHARDED)
    assert chunked.exit_code == whole.exit_code == 0
    assert chunked.stdout == whole.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--shard", "0/4"], "--shard 0/4: expected K/N with 1 <= K <= N"),
        (["--shard", "5/4"], "--shard 5/4: expected K/N"),
        (["--shard", "two"], "--shard two: expected K/N"),
        (["--shard", "1/2", "-f", "json"], "--shard and --workers stream csv or jsonl"),
        (["--workers", "2", "-f", "table"], "--shard and --workers stream csv or jsonl"),
    ],
)
def test_bad_shard_or_workers_is_a_usage_error(extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["sweep", "--vary", "mean_rps=5,10", *extra])
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


# A question stated by flags (no scenario) whose ISL and traffic only the axes state.
AXES_STATE = ["sweep", "--model", "llama-3.1-8b", "--osl", "200", "--ttft-ms", "1000"]
AXES_STATE += ["--hardware", "dgx-h100", "--vary", "isl=500,1000", "--vary", "mean_rps=1,2"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_varied_field_is_stated_by_its_axis(workers: str) -> None:
    """`--vary isl=…` states the ISL and `--vary mean_rps=…` the traffic: no --isl or
    --mean-rps is needed, and each row has its own point's values."""
    result = runner.invoke(app, [*AXES_STATE, "--workers", workers])
    assert result.exit_code == 0, result.stderr
    rows = _rows(result.stdout)
    assert len(rows) == 4  # 2 ISLs x 2 rates, the last axis varying fastest
    points = [(r["point"], r["isl"], r["mean_rps"]) for r in rows]
    assert points == [("0", "500", "1"), ("1", "500", "2"), ("2", "1000", "1"), ("3", "1000", "2")]
    for r in rows:
        assert (r["model"], r["osl"], r["hardware_options"]) == ("llama-3.1-8b", "200", "dgx-h100")
        assert r["ttft_ms_limit"] == "1000" and r["feasible"] == "true", r["reason"]
        # Poisson p95 of 1 and 2 req/s in a second: 3 and 5 requests
        # (P(N <= 2 | 1) = 0.920, P(N <= 3 | 1) = 0.981; P(N <= 4 | 2) = 0.947, P(N <= 5 | 2) = 0.983)
        assert r["peak_rps"] == {"1": "3", "2": "5"}[r["mean_rps"]]
        assert float(r["ttft_ms"]) <= 1000.0
    # a point is what plan answers for the same inputs, stated as flags
    plan = ["plan", *AXES_STATE[1:9], "--isl", "1000", "--mean-rps", "2", "--format", "json"]
    planned = runner.invoke(app, plan)
    assert planned.exit_code == 0, planned.stderr
    p = json.loads(planned.stdout)["plan"]
    assert (p["servers"], p["gpus"], p["instances"]) == (
        int(rows[3]["servers"]),
        int(rows[3]["gpus"]),
        int(rows[3]["instances"]),
    )


def test_a_field_no_axis_states_is_still_required() -> None:
    result = runner.invoke(app, [*AXES_STATE[:3], *AXES_STATE[5:]])  # no --osl
    assert result.exit_code == 1
    assert result.stderr == "error: flags: osl: required: give --osl (or state it in a scenario)\n"
