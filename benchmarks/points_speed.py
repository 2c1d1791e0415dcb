"""Speed and memory of ``infersize estimate --points``, each figure against a baseline in
the same run: whole processes (CPU seconds and peak resident memory from the OS, os.wait4)
on files of operating points (a mix of closed-loop rows on Llama-3-8B and Llama-3.1-70B, H100
and H200, TP 1-8, ISL 250-4000) of ``--rows`` sizes: rows/s on one core, and whether memory
stays flat (each peak against the smallest file's). ``--against REV`` also runs the same
files with the code of git revision REV (its package exported to a temporary folder), so
old and new code are timed on the same machine in the same call.

Run: python benchmarks/points_speed.py [--rows 10000,100000,1000000] [--against REV]
Exit 0 when every command succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from process_stats import Run, infersize, mib, run

ROOT = Path(__file__).resolve().parents[1]
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


def exported(rev: str, into: Path) -> list[str]:
    """The command line of ``python -m inferencesize`` at git revision ``rev``."""
    files = ["inferencesize", "hardware", "models", "scenarios"]
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, *files], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return [sys.executable, "-m", "inferencesize"]


def line(label: str, rows: int, res: Run, first: Run) -> str:
    return (
        f"{label:>10} {rows:>9,} rows: {res.cpu_s:7.2f} s CPU, {rows / res.cpu_s:8,.0f} rows/s,"
        f" peak {mib(res.peak_bytes):6.0f} MiB ({res.peak_bytes / first.peak_bytes:.2f} x the"
        f" smallest file's)\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000", help="file sizes, rows")
    parser.add_argument("--against", metavar="REV", help="also run git revision REV")
    args = parser.parse_args()
    sizes = [int(n) for n in args.rows.split(",")]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"this tree": (infersize(), None)}
        if args.against:
            old = Path(tmp) / "old"
            old.mkdir()
            env = {**os.environ, "PYTHONPATH": str(old)}
            commands[args.against] = (exported(args.against, old), env)
        firsts: dict[str, Run] = {}
        for rows in sizes:
            path = Path(tmp) / f"points-{rows}.csv"
            write_points(path, rows)
            for label, (command, env) in commands.items():
                res = run([*command, "estimate", "--points", str(path), "-f", "csv"], env)
                ok &= res.code == 0
                first = firsts.setdefault(label, res)
                sys.stdout.write(line(label, rows, res, first))
                sys.stdout.flush()
            path.unlink()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
