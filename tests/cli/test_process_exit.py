"""The console script as a process: a reader that goes away mid-output (`| head -1`) stops
the command quietly with 141, as SIGPIPE would; Ctrl-C leaves whole rows; and the lazy command table serves every
command and `--help`."""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path

import pytest
from console_process import COMMAND, ENV, first_line_then_close, interrupt_when_written


def test_closed_pipe_ends_quietly_with_141() -> None:
    # a 2000 x 50-point sweep streams far more than a pipe buffer; read one line, then close
    first, err, code = first_line_then_close(
        ["sweep", "--vary", "isl=100:20000:10", "--vary", "peak_rps=1:50"]
    )
    assert code == 141
    assert first.startswith(b"point,model,isl")
    assert err == ""  # no traceback, no "internal error"


def test_help_lists_every_command() -> None:
    from inferencesize.cli import COMMANDS

    done = subprocess.run(
        [*COMMAND, "--help"], capture_output=True, text=True, env=ENV, timeout=60, check=False
    )
    assert done.returncode == 0
    for name in COMMANDS:
        assert name in done.stdout
    version = subprocess.run(
        [*COMMAND, "--version"], capture_output=True, text=True, env=ENV, timeout=60, check=False
    )
    assert version.returncode == 0 and version.stdout.startswith("infersize ")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_leaves_complete_rows(tmp_path: Path, workers: str) -> None:
    # a long sweep into a file, interrupted once rows are flowing: 130, "interrupted", and
    # every line written is a whole row (with --workers too: the pool goes with it)
    target = tmp_path / "rows.csv"
    grid = ["--vary", "isl=100:20000:10", "--vary", "peak_rps=1:50", "--workers", workers]
    code, err = interrupt_when_written(["sweep", "default", *grid], target, 20_000)
    assert code == 130
    assert err == "interrupted\n"
    text = target.read_text()
    assert text.endswith("\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) > 2
    assert {len(r) for r in rows} == {len(rows[0])}
    assert [int(r[0]) for r in rows[1:]] == list(range(len(rows) - 1))
