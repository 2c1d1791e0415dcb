"""Whole-process figures for the benchmarks: CPU seconds, wall seconds and peak resident
memory of one command, from the operating system's accounting of that finished child
(``os.wait4``), and interleaved runs of several commands (A B C A B C …) so a machine whose
speed drifts moves every figure alike.

Used by benchmarks/startup.py, sweep_speed.py and simulate_speed.py (run them as
``python benchmarks/NAME.py``: this folder is then first on the import path).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: ru_maxrss unit: KiB on Linux, bytes on macOS.
_RSS_UNIT = 1 if sys.platform == "darwin" else 1024


@dataclass(frozen=True)
class Run:
    """One finished process."""

    cpu_s: float  # user + system
    wall_s: float
    peak_bytes: int  # its largest resident set
    code: int


def infersize() -> list[str]:
    """The installed console script, or ``python -m inferencesize`` where there is none."""
    script = shutil.which("infersize")
    return [script] if script else [sys.executable, "-m", "inferencesize"]


def run(command: Sequence[str], env: Mapping[str, str] | None = None) -> Run:
    """Run ``command`` (output discarded) and account for it alone."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Run(cpu, wall, usage.ru_maxrss * _RSS_UNIT, code)


def interleaved(
    commands: Mapping[str, Sequence[str]], runs: int, env: Mapping[str, str] | None = None
) -> dict[str, list[Run]]:
    """Each command ``runs`` times, in turn (after one unrecorded warm-up round)."""
    for command in commands.values():
        run(command, env)
    out: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            out[name].append(run(command, env))
    return out


def median_cpu(runs: Sequence[Run]) -> float:
    return statistics.median(r.cpu_s for r in runs)


def paired_ratio(a: Sequence[Run], b: Sequence[Run]) -> float:
    """Median of the run-by-run CPU ratios a/b (runs paired in the order they ran)."""
    return statistics.median(x.cpu_s / y.cpu_s for x, y in zip(a, b, strict=True))


def mib(n: int) -> float:
    return n / 2**20
