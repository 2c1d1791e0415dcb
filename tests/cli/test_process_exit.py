"""The console script as a process: a reader that goes away mid-output (`| head -1`) stops
the command quietly with 141, as SIGPIPE would; Ctrl-C leaves whole rows; and the lazy command table serves every
command and `--help`."""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = shutil.which("infersize")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "inferencesize"]
ENV = {**os.environ, "NO_COLOR": "1"}


def test_closed_pipe_ends_quietly_with_141() -> None:
    # a 2000 x 50-point sweep streams far more than a pipe buffer; read one line, then close
    proc = subprocess.Popen(
        [*COMMAND, "sweep", "--vary", "isl=100:20000:10", "--vary", "peak_rps=1:50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
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
    with target.open("wb") as fh:
        proc = subprocess.Popen(
            [*COMMAND, "sweep", "default", *grid],
            stdout=fh,
            stderr=subprocess.PIPE,
            env=ENV,
        )
        deadline = time.monotonic() + 60
        while target.stat().st_size < 20_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 130
    assert err == "interrupted\n"
    text = target.read_text()
    assert text.endswith("\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) > 2
    assert {len(r) for r in rows} == {len(rows[0])}
    assert [int(r[0]) for r in rows[1:]] == list(range(len(rows) - 1))
