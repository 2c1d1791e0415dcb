"""Speed of ``infersize sweep``: a 10,000-point grid, timed end to end, points per second.

5 hardware × 5 ISL × 4 OSL × 100 mean request rates = 10,000 points on the shipped default
scenario (Llama-3-8B FP8, TTFT ≤ 500 ms) with TP chosen automatically (1, 2, 4, 8; PP 1).
Target: under 10 s on a 2-core machine. Run: python benchmarks/sweep_speed.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from inferencesize.cli import app

ARGS = [
    "sweep",
    "--tp",
    "auto",
    "--pp",
    "1",
    "--vary",
    "hardware=h100-sxm,h200-sxm,b200,a100-sxm-80gb,mi300x",
    "--vary",
    "isl=250,500,1000,2000,4000",
    "--vary",
    "osl=100,200,400,800",
    "--vary",
    "mean_rps=1:100:1",
]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep.csv"
        start = time.perf_counter()
        result = CliRunner().invoke(app, [*ARGS, "--out", str(out)])
        elapsed = time.perf_counter() - start
        if result.exit_code != 0:
            sys.stderr.write(result.stderr)
            return 1
        lines = out.read_text().splitlines()
    points = len(lines) - 1
    feasible = sum(1 for line in lines[1:] if ",true," in line)
    sys.stdout.write(
        f"sweep: {points:,} points ({feasible:,} feasible) in {elapsed:.2f} s"
        f" = {points / elapsed:,.0f} points/s on {os.cpu_count()} CPUs (target < 10 s)\n"
    )
    return 0 if elapsed < 10.0 else 2


if __name__ == "__main__":
    raise SystemExit(main())
