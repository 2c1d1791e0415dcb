"""The console script run as a process, for tests of how it ends: a reader that goes away
after the first line, and Ctrl-C once the output has grown."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = shutil.which("infersize")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "inferencesize"]
ENV = {**os.environ, "NO_COLOR": "1"}


def first_line_then_close(args: list[str]) -> tuple[bytes, str, int]:
    """Run ``infersize ARGS``, read the first line of its output, close the pipe: (that line,
    its stderr, its exit status)."""
    proc = subprocess.Popen(
        [*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return first, err, proc.wait(timeout=120)


def interrupt_when_written(args: list[str], target: Path, size: int) -> tuple[int, str]:
    """Run ``infersize ARGS`` with its output in ``target``, send Ctrl-C once ``target`` holds
    ``size`` bytes (or after 60 s): (its exit status, its stderr)."""
    with target.open("wb") as fh:
        proc = subprocess.Popen([*COMMAND, *args], stdout=fh, stderr=subprocess.PIPE, env=ENV)
        deadline = time.monotonic() + 60
        while target.stat().st_size < size and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        return proc.wait(timeout=60), err
