"""`infersize frontier` and `plan --plot` in-process: PNG/SVG files, JSON, table, bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app

runner = CliRunner()

ARGS = [
    "frontier",
    "--model",
    "llama-3-70b",
    "--hardware",
    "h100-sxm",
    "--isl",
    "2000",
    "--osl",
    "200",
    "--ttft-ms",
    "1000",
    "--itl-ms",
    "40",
    "--max-concurrency",
    "200",
    "--arrivals",
    "closed-loop",
]


def _check_image(path: Path, min_bytes: int) -> None:
    import matplotlib.image

    assert path.is_file() and path.stat().st_size > min_bytes
    image = matplotlib.image.imread(path)
    height, width = image.shape[:2]
    assert height >= 400 and width >= 600 and image.shape[2] in (3, 4)
    assert image.std() > 0.05  # not a blank canvas


def test_frontier_png(tmp_path: Path) -> None:
    png = tmp_path / "frontier.png"
    result = runner.invoke(app, [*ARGS, "--plot", str(png), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {png}\n"
    _check_image(png, 20_000)


def test_frontier_svg(tmp_path: Path) -> None:
    svg = tmp_path / "frontier.svg"
    result = runner.invoke(app, [*ARGS, "--plot", str(svg), "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "Pareto frontier" in text


def test_frontier_json() -> None:
    result = runner.invoke(app, [*ARGS, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["limits"] == {
        "ttft_ms": 1000.0,
        "itl_ms": 40.0,
        "e2e_ms": None,
        "mode": "streaming",
    }
    pts = data["points"]
    assert pts and all(p["on_frontier"] for p in pts)
    # most interactive first: tokens/s per user falls, tokens/s per GPU rises along the frontier
    users = [p["output_tokens_per_s_per_user"] for p in pts]
    gpus = [p["output_tokens_per_s_per_gpu"] for p in pts]
    assert users == sorted(users, reverse=True) and gpus == sorted(gpus)
    assert data["latency_optimal"] == pts[0] and data["throughput_optimal"] == pts[-1]
    assert data["latency_optimal"]["mark"] == "latency-optimal"
    best = data["best_within_limits"]
    assert best["meets_limits"] and best["ttft_ms"] <= 1000 and best["itl_ms"] <= 40
    for p in pts:  # every number carries its operating point
        assert {"hardware", "precision", "tp", "pp", "ep", "concurrency"} <= set(p)
    assert {"candidate": "h100-sxm bf16 tp1", "reason": data["rejected"][0]["reason"]} in data[
        "rejected"
    ]


def test_frontier_all_points_csv() -> None:
    frontier_only = runner.invoke(app, [*ARGS, "--format", "csv"])
    every = runner.invoke(app, [*ARGS, "--format", "csv", "--all"])
    assert frontier_only.exit_code == every.exit_code == 0
    n_frontier = len(frontier_only.stdout.splitlines()) - 1
    n_all = len(every.stdout.splitlines()) - 1
    assert 0 < n_frontier < n_all
    assert every.stdout.count(",false,") > 0


def test_frontier_table_and_terminal_plot() -> None:
    result = runner.invoke(app, [*ARGS, "--rows", "5"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "tok/s/GPU" in out and "L latency-optimal" in out
    assert "output tokens/s per user (1 / ITL)" in out  # the terminal plot's axis
    quiet = runner.invoke(app, [*ARGS, "--no-terminal-plot"])
    assert "output tokens/s per user (1 / ITL)" not in quiet.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["frontier", "--model", "llama-3-8b"], "error: flags: isl: required: give --isl"),
        ([*ARGS, "--plot", "out.jpg"], "error: --plot out.jpg: expected a .png or .svg file name"),
        ([*ARGS, "--precision", "fp9"], "error: --precision: unknown 'fp9'"),
        (
            [*ARGS, "--hardware", "nope"],
            "error: flags: hardware[1]: unknown hardware (GPU or system) 'nope'",
        ),
    ],
)
def test_frontier_bad_input(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1


def test_missing_matplotlib_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    result = runner.invoke(app, [*ARGS, "--plot", str(tmp_path / "f.png")])
    assert result.exit_code == 1
    assert result.stderr == "error: plotting needs matplotlib: pip install 'infersize[plot]'\n"


def test_plan_plot(tmp_path: Path) -> None:
    png = tmp_path / "plan.png"
    result = runner.invoke(
        app, ["plan", "default", "--tp", "auto", "--top", "0", "--plot", str(png)]
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {png}\n"
    _check_image(png, 20_000)


def test_plan_plot_infeasible_writes_nothing(tmp_path: Path) -> None:
    png = tmp_path / "plan.png"
    result = runner.invoke(app, ["plan", "default", "--ttft-ms", "1", "--plot", str(png)])
    assert result.exit_code == 3
    assert not png.exists() and "no plot: no feasible plan" in result.stderr


OPEN = [
    "frontier",
    "--model",
    "llama-3-8b",
    "--hardware",
    "h100-sxm",
    "--precision",
    "fp8",
    "--tp",
    "1",
    "--pp",
    "1",
    "--isl",
    "1000",
    "--osl",
    "200",
    "--ttft-ms",
    "300",
    "--itl-ms",
    "25",
    "--latency-stat",
    "p95",
]  # fmt: skip  (arrivals unstated: poisson is the default)


def test_open_loop_frontier_is_over_request_rates() -> None:
    result = runner.invoke(app, [*OPEN, "--format", "json", "--all"])
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    assert rec["arrivals"] == "poisson" and rec["cv"] == 1.0
    assert rec["statistics"] == {"ttft": "p95", "itl": "p95", "e2e": "p95"}
    rates = [p["rate_rps_per_instance"] for p in rec["points"]]
    assert len(rates) > 5 and all(r > 0 for r in rates)
    for p in rec["points"]:
        assert p["output_tokens_per_s_per_gpu"] == pytest.approx(p["rate_rps_per_instance"] * 200)
        assert p["meets_limits"] == (p["ttft_ms"] <= 300 and p["itl_ms"] <= 25)
    table = runner.invoke(app, OPEN)
    assert table.exit_code == 0, table.stderr
    assert "req/s/inst" in table.stdout and "TTFT p95 ms" in table.stdout


def test_open_loop_frontier_refuses_max_concurrency() -> None:
    result = runner.invoke(app, [*OPEN, "--max-concurrency", "10"])
    assert result.exit_code == 2
    assert (
        result.stderr.startswith("error: --max-concurrency")
        and len(result.stderr.splitlines()) == 1
    )


def test_closed_loop_frontier_record_says_so() -> None:
    result = runner.invoke(app, [*ARGS, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    assert rec["arrivals"] == "closed-loop" and rec["cv"] is None
    assert all(isinstance(p["concurrency"], int) for p in rec["points"])
