"""Speed and memory of ``infersize sweep``, each figure against a baseline in the same run.

1. In process: a 10,000-point grid, 5 hardware × 5 ISL × 4 OSL × 100 mean request rates on
   the shipped default scenario (Llama-3-8B FP8, TTFT ≤ 500 ms) with TP chosen automatically
   (1, 2, 4, 8; PP 1). Target: under 10 s on a 2-core machine.
2. Whole processes (CPU seconds and peak resident memory from the OS, os.wait4): the same grid
   streamed to a file, then a grid ``--scale`` times larger (more request rates): memory must
   stay flat (peak at most 250 MiB; ratio to the 10,000-point run near 1), CPU per point
   about the same.
3. The 10,000-point grid with ``--workers 2`` against one process: the same bytes, the wall
   time ratio.

Run: python benchmarks/sweep_speed.py [--scale 10]   (--scale 100: 1,000,000 points, minutes)
Exit 0 when the targets are met, 2 when one is not, 1 when a command fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from process_stats import infersize, mib, run
from typer.testing import CliRunner

from inferencesize.cli import app

ARGS = [
    "sweep",
    "default",
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
]
PEAK_TARGET_BYTES = 250 * 2**20


def grid(rates: int) -> list[str]:
    return [*ARGS, "--vary", f"mean_rps=1:{rates}:1"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=10, help="large grid / 10,000 points")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep.csv"
        start = time.perf_counter()
        result = CliRunner().invoke(app, [*grid(100), "--out", str(out)])
        elapsed = time.perf_counter() - start
        if result.exit_code != 0:
            sys.stderr.write(result.stderr)
            return 1
        lines = out.read_text().splitlines()
        points = len(lines) - 1
        feasible = sum(1 for line in lines[1:] if ",true," in line)
        ok &= elapsed < 10.0
        sys.stdout.write(
            f"in process: {points:,} points ({feasible:,} feasible) in {elapsed:.2f} s"
            f" = {points / elapsed:,.0f} points/s on {os.cpu_count()} CPUs (target < 10 s)\n"
        )
        cli = infersize()
        small = run([*cli, *grid(100), "--out", str(Path(tmp) / "small.csv")])
        large = run([*cli, *grid(100 * args.scale), "--out", str(Path(tmp) / "large.csv")])
        if small.code or large.code:
            return 1
        big = 10_000 * args.scale
        ok &= large.peak_bytes <= PEAK_TARGET_BYTES
        sys.stdout.write(
            f"process, 10,000 points: {small.cpu_s:.2f} s CPU, peak {mib(small.peak_bytes):.0f} MiB\n"
            f"process, {big:,} points: {large.cpu_s:.2f} s CPU"
            f" ({large.cpu_s / small.cpu_s:.1f}x for {args.scale}x the points),"
            f" peak {mib(large.peak_bytes):.0f} MiB"
            f" ({large.peak_bytes / small.peak_bytes:.2f}x; target <= 250 MiB)\n"
        )
        one = Path(tmp) / "one.csv"
        two = Path(tmp) / "two.csv"
        single = run([*cli, *grid(100), "--out", str(one)])
        pooled = run([*cli, *grid(100), "--workers", "2", "--out", str(two)])
        same = one.read_bytes() == two.read_bytes()
        ok &= same
        sys.stdout.write(
            f"--workers 2 against 1: wall {pooled.wall_s:.2f} s vs {single.wall_s:.2f} s"
            f" ({pooled.wall_s / single.wall_s:.2f}x), output identical: {same}\n"
        )
    return 0 if ok else 2


if __name__ == "__main__":
    raise SystemExit(main())
