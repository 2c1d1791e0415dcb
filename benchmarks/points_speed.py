"""Speed and memory of ``infersize estimate --points``, each figure against a baseline in
the same run: whole processes (CPU seconds and peak resident memory from the OS, os.wait4)
on a file of ``--rows`` operating points (a mix of closed-loop rows on Llama-3-8B and
Llama-3.1-70B, H100 and H200, TP 1-8, ISL 250-4000) against one ``--scale`` times smaller:
rows/s on one core and whether memory stays flat (the ratio of the two peaks).

Run: python benchmarks/points_speed.py [--rows 100000] [--scale 10]
Exit 0 when every command succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

from process_stats import infersize, mib, run

HEADER = "model,hardware,precision,tp,isl,osl,concurrency\n"
GRID = list(
    itertools.product(
        ["llama-3-8b", "llama-3.1-70b"],
        ["h100-sxm", "h200-sxm"],
        ["fp8"],
        [1, 2, 4, 8],
        [250, 500, 1000, 2000, 4000],
        [100, 200, 400],
        [1, 4, 16, 64],
    )
)


def write_points(path: Path, rows: int) -> None:
    with path.open("w") as fh:
        fh.write(HEADER)
        for i in range(rows):
            fh.write(",".join(str(v) for v in GRID[i % len(GRID)]) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the large file")
    parser.add_argument("--scale", type=int, default=10, help="large file / baseline file")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        figures = []
        for rows in (args.rows // args.scale, args.rows):
            path = Path(tmp) / f"points-{rows}.csv"
            write_points(path, rows)
            res = run([*infersize(), "estimate", "--points", str(path), "-f", "csv"])
            ok &= res.code == 0
            figures.append((rows, res))
            sys.stdout.write(
                f"{rows:>9,} rows: {res.cpu_s:6.2f} s CPU, {res.wall_s:6.2f} s wall,"
                f" {rows / res.cpu_s:8,.0f} rows/s (CPU), peak {mib(res.peak_bytes):6.0f} MiB\n"
            )
        (small, a), (large, b) = figures
        sys.stdout.write(
            f"peak ratio {large:,} / {small:,} rows: {b.peak_bytes / a.peak_bytes:.2f}\n"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
