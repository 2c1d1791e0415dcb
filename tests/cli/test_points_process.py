"""`infersize estimate --points` as a process on a file of 200,000 rows: a reader that goes
away mid-output stops it quietly with 141, and Ctrl-C stops it with 130, leaving complete
rows only (the rows are written a block at a time, Ctrl-C held until a block is out)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from console_process import first_line_then_close, interrupt_when_written

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


@pytest.fixture(scope="module")
def points(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("points") / "points.csv"
    rows = (
        f"llama-3-8b,h100-sxm,{1 + i % 2},{500 + i % 997},200,{1 + i % 32}" for i in range(200_000)
    )
    path.write_text("model,hardware,tp,isl,osl,concurrency\n" + "\n".join(rows) + "\n")
    return path


@POSIX
def test_closed_pipe_ends_quietly_with_141(points: Path) -> None:
    first, err, code = first_line_then_close(["estimate", "--points", str(points)])
    assert code == 141
    assert first.startswith(b"model,hardware,tp,isl,osl,concurrency,precision")
    assert err == ""


@POSIX
@pytest.mark.parametrize(("fmt", "workers"), [("csv", "1"), ("jsonl", "2")])
def test_ctrl_c_leaves_complete_rows(points: Path, tmp_path: Path, fmt: str, workers: str) -> None:
    target = tmp_path / f"rows.{fmt}"
    args = ["estimate", "--points", str(points), "-f", fmt, "--workers", workers]
    code, err = interrupt_when_written(args, target, 100_000)
    assert (code, err) == (130, "interrupted\n")
    text = target.read_text()
    assert text.endswith("\n")
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert len(rows) > 2 and {len(r) for r in rows} == {len(rows[0])}
    else:
        records = [json.loads(line) for line in text.splitlines()]
        assert records and all(r["feasible"] for r in records)
    assert len(text.splitlines()) < 200_000  # stopped early
