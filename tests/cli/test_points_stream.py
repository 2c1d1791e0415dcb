"""`infersize estimate --points` in blocks, shards and worker processes: the parts of a
batch, concatenated in order, are the single run byte for byte, and a bad row is named by
its line in the original file whichever part or block computes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize.cli import app, perf_cmd

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "tests" / "fixtures" / "perf" / "points.csv"
runner = CliRunner()


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """The 7 fixture rows three times over: 21 rows, not a multiple of 4 (the shards differ
    in size); the not-a-number rows sit at lines 7, 14 and 21."""
    header, *rows = POINTS.read_text().splitlines()
    path = tmp_path / "many.csv"
    path.write_text("\n".join([header, *(rows * 3)]) + "\n")
    return path


def _run(*args: str) -> str:
    result = runner.invoke(app, ["estimate", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_shards_concatenated_equal_the_single_run(many: Path, fmt: str) -> None:
    whole = _run("--points", str(many), "-f", fmt)
    parts = [_run("--points", str(many), "-f", fmt, "--shard", f"{k}/4") for k in (1, 2, 3, 4)]
    assert "".join(parts) == whole
    assert all(part for part in parts)  # 21 rows: 5 or 6 in each part
    header_lines = 1 if fmt == "csv" else 0
    assert len(whole.splitlines()) == 21 + header_lines


def test_workers_and_blocks_equal_one_process(many: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _run("--points", str(many), "-f", "csv")
    monkeypatch.setattr(perf_cmd, "POINTS_BLOCK", 2)
    assert _run("--points", str(many), "-f", "csv") == whole
    assert _run("--points", str(many), "-f", "csv", "--workers", "2") == whole
    sharded = [
        _run("--points", str(many), "-f", "csv", "--shard", f"{k}/3", "--workers", "2")
        for k in (1, 2, 3)
    ]
    assert "".join(sharded) == whole


def test_a_bad_row_is_named_by_its_line_in_the_file(
    many: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perf_cmd, "POINTS_BLOCK", 3)
    last = _run("--points", str(many), "-f", "jsonl", "--shard", "4/4")
    reasons = [json.loads(line)["reason"] or "" for line in last.splitlines()]
    assert any(r.startswith("row 21: isl") for r in reasons), reasons


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--shard", "0/4"], "--shard 0/4: expected K/N with 1 <= K <= N"),
        (["--shard", "1/2", "-f", "json"], "--shard and --workers stream csv or jsonl"),
        (["--workers", "2", "-f", "yaml"], "--shard and --workers stream csv or jsonl"),
    ],
)
def test_bad_shard_or_format_is_one_line(extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["estimate", "--points", str(POINTS), *extra])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output
