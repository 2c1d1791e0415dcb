"""A long trace is read in flat memory: `plan --trace` on a million requests takes about the
resident memory of a thousand (its first REPLAY_MAX_REQUESTS requests are held for --verify,
4.8 MB; the rest is gathered in one pass). Whole processes, their peak resident memory from
the OS (os.wait4); benchmarks/trace_scale.py measures 10^7 requests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from console_process import COMMAND, ENV

pytestmark = pytest.mark.skipif(not hasattr(os, "wait4"), reason="os.wait4 (POSIX)")

QUESTION = ["plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8"]
QUESTION += ["--tp", "1", "--pp", "1", "--ttft-ms", "500", "--itl-ms", "30", "-f", "json"]
#: ru_maxrss unit: KiB on Linux, bytes on macOS.
RSS_UNIT = 1 if sys.platform == "darwin" else 1024
#: What a million requests may add to the peak: the replayed head (200,000 x 24 bytes) and a
#: block being parsed, with room to spare; holding the file's text alone would take 20 MiB,
#: and its rows as Python lists several hundred.
MARGIN_BYTES = 40 * 2**20


def _trace(path: Path, rows: int) -> Path:
    rng = np.random.default_rng(5)
    times = np.cumsum(rng.gamma(2.0, 1 / 100.0, rows))  # 50 req/s, gaps' cv 0.71
    with path.open("w", encoding="utf-8") as fh:
        fh.write("arrival_s,isl,osl\n")
        for start in range(0, rows, 100_000):
            part = times[start : start + 100_000]
            fh.writelines(f"{t:.6f},{1000 + i % 7},{200 + i % 3}\n" for i, t in enumerate(part))
    return path


def _peak_bytes(trace: Path) -> int:
    proc = subprocess.Popen(
        [*COMMAND, *QUESTION, "--trace", str(trace)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    assert proc.returncode == 0, proc.stderr.read()
    return int(usage.ru_maxrss * RSS_UNIT)


def test_a_million_requests_take_the_memory_of_a_thousand(tmp_path: Path) -> None:
    small = _peak_bytes(_trace(tmp_path / "small.csv", 1_000))
    large = _peak_bytes(_trace(tmp_path / "large.csv", 1_000_000))
    assert large < small + MARGIN_BYTES, (small / 2**20, large / 2**20)
