"""`infersize estimate --points` in blocks, shards and worker processes: the reader yields the
rows of the whole read a block at a time; the parts of a batch, concatenated in order, are the
single run byte for byte; a bad row is named by its line in the original file whichever part
or block computes it; a file that cannot be read stops before any row is written."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize import report
from inferencesize.cli import app, points_batch
from inferencesize.io_measurements import by_column, open_points, read_csv_table, read_points

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
    monkeypatch.setattr(points_batch, "POINTS_BLOCK", 2)
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
    monkeypatch.setattr(points_batch, "POINTS_BLOCK", 3)
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


# --------------------------------------------------------------------------- the reader


def _old_read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The whole read the points reader replaced: every row of the table, by column."""
    _, header, table = read_csv_table(path, "a CSV of operating points")
    return header, [by_column(header, cells) for _, cells in table]


def test_the_reader_yields_the_rows_of_the_whole_read(tmp_path: Path) -> None:
    path = tmp_path / "odd.csv"
    rows = [f"llama-3-8b,h100-sxm,{100 + i},50,{i + 1},x{i}" for i in range(14)]
    rows[3] = 'llama-3-8b,h100-sxm,100,50,1,"two\nlines"'  # one row on lines 5 and 6
    rows[5] = "llama-3-8b,h100-sxm"  # short: the rest blank
    rows[7] = "llama-3-8b,h100-sxm,1,1,1,x,extra,cells"
    text = " model ,hardware,isl,osl,concurrency,label\n" + "\n".join(rows[:9])
    text += "\n\n\n" + "\n".join(rows[9:]) + "\n"  # two blank lines: no rows
    path.write_text("\ufeff" + text)  # a byte-order mark, as a spreadsheet writes it
    assert read_points(path) == _old_read(path)
    points = open_points(path)
    assert points.rows == 14 and points.header[0] == "model"
    # blocks of 4 aligned on the rows: rows 5..9 are in the blocks from 4 and from 8
    blocks = list(points.blocks(4, 5, 10))
    assert [(b.first, len(b.rows)) for b in blocks] == [(4, 4), (8, 4)]
    assert blocks[0].rows[0] == (7, rows[4].split(","))  # row 4 is on line 7 of the file
    assert [b.first for b in points.blocks(4)] == [0, 4, 8, 12]
    assert list(points.blocks(4, 14)) == []
    whole = [cells for b in points.blocks(5) for _, cells in b.rows]
    assert [by_column(points.header, c) for c in whole] == _old_read(path)[1]


def test_an_unreadable_cell_late_in_a_big_file_stops_before_any_row(tmp_path: Path) -> None:
    path = tmp_path / "late.csv"
    body = "".join(f"llama-3-8b,h100-sxm,{100 + i % 50},50,4\n" for i in range(20_000))
    path.write_bytes(b"model,hardware,isl,osl,concurrency\n" + body.encode() + b"\xff\xfe,x\n")
    result = runner.invoke(app, ["estimate", "--points", str(path), "-f", "jsonl"])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == f"error: {path}: is not UTF-8 text"
    path.write_text(
        "model,hardware,isl,osl,concurrency\n" + body + "x" * 200_000 + "\n" + body[:1000]
    )
    result = runner.invoke(app, ["estimate", "--points", str(path), "--shard", "1/4"])
    assert result.exit_code == 1 and result.stdout == ""
    assert f"{path}: line 20002: a field is longer than 128 KiB" in result.stderr


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10,000 rows (three blocks of 4,096), a bad ISL on line 9,001."""
    path = tmp_path_factory.mktemp("points") / "big.csv"
    rows = [
        f"llama-3-8b,h100-sxm,{(1, 2, 4)[i % 3]},{250 * (1 + i % 8)},{100 + i % 7},{1 + i % 64}"
        for i in range(10_000)
    ]
    rows[8_999] = "llama-3-8b,h100-sxm,1,abc,100,4"
    path.write_text("model,hardware,tp,isl,osl,concurrency\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("extra", [[], ["--shard", "4/4"], ["--workers", "2"]])
def test_a_bad_row_deep_in_a_big_file_names_its_line(big: Path, extra: list[str]) -> None:
    out = _run("--points", str(big), "-f", "jsonl", *extra)
    bad = [json.loads(line) for line in out.splitlines() if '"abc"' in line]
    assert [r["reason"] for r in bad] == ["row 9001: isl: not a number ('abc')"]
    assert bad[0]["feasible"] is False


def _mixed_rows(n: int) -> list[str]:
    """``n`` closed-loop rows over several models, GPUs, precisions, splits, lengths, loads
    and both batchings: many deployments, a few rows each in a block."""
    pick = random.Random(5).choice
    models = ("llama-3-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-r1", "phi-3-mini")
    return [
        ",".join(
            [
                pick((*models, "gemma-3-27b")),
                pick(("h100-sxm", "h200-sxm", "b200", "dgx-h100")),
                pick(("fp8", "bf16")),
                pick(("1", "2", "4", "8")),
                pick(("1", "1", "2")),
                pick(("128", "1000", "2000", "4000", "8000")),
                pick(("1", "50", "200", "1000")),
                pick(("1", "4", "16", "64", "256", "2048")),
                pick(("inflight", "inflight", "static")),
            ]
        )
        for _ in range(n)
    ]


def test_parts_equal_the_single_run_to_the_last_digit(tmp_path: Path) -> None:
    # the rows of one deployment in a block are solved together, and the solver's last
    # digits depend on which rows those are: every part computes whole blocks of the file
    # (1,200 rows: one block; parts that computed only their 400 rows differed in JSON)
    path = tmp_path / "mixed.csv"
    header = "model,hardware,precision,tp,pp,isl,osl,concurrency,batching\n"
    path.write_text(header + "\n".join(_mixed_rows(1200)) + "\n")
    whole = _run("--points", str(path), "-f", "jsonl")
    assert whole.count('"feasible": true') > 600
    parts = [_run("--points", str(path), "-f", "jsonl", "--shard", f"{k}/3") for k in (1, 2, 3)]
    assert "".join(parts) == whole
    assert _run("--points", str(path), "-f", "jsonl", "--workers", "2") == whole


def test_json_and_yaml_come_in_blocks_as_one_document(
    many: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(points_batch, "POINTS_BLOCK", 4)
    records = [json.loads(line) for line in _run("--points", str(many), "-f", "jsonl").splitlines()]
    assert _run("--points", str(many), "-f", "json") == report.to_json(records) + "\n"
    assert _run("--points", str(many), "-f", "yaml") == report.to_yaml(records)
    empty = many.with_name("empty.csv")
    empty.write_text("model,hardware,isl,osl,concurrency\n\n")
    assert _run("--points", str(empty), "-f", "json") == "[]\n"
    assert _run("--points", str(empty), "-f", "yaml") == "[]\n"
    assert _run("--points", str(empty), "-f", "csv").count("\n") == 1  # the header
