"""Accuracy table on the calibration data and batch-mode speed of `infersize estimate`.

Usage: python benchmarks/accuracy.py [--rows 10000]

Prints `infersize validate` on data/calibration (both fitted files), then on the held-out
NIM 1.8 rows (data/calibration/nim_perf_docs.csv, in no fit) with each engine generation's set,
and times `infersize estimate --points` on a generated CSV of N operating points (whole process).
"""

from __future__ import annotations

import argparse
import csv
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ["data/calibration/measurements.csv", "data/calibration/static_batching_sweep.csv"]
HELD_OUT = "data/calibration/nim_perf_docs.csv"
HELD_OUT_SETS = ["trtllm-0.17", "trtllm-0.14", "nim-2024"]


def points_csv(path: Path, n: int) -> None:
    rng = random.Random(0)
    combos = [
        ("llama-3-8b", "h100-sxm", "fp8", 1),
        ("llama-3.1-70b", "dgx-h100", "fp8", 4),
        ("llama-3.1-70b", "h200-sxm", "bf16", 2),
        ("mixtral-8x7b", "a100-sxm-80gb", "bf16", 2),
        ("qwen3-32b", "b200", "fp4", 1),
        ("deepseek-v3", "dgx-h200", "fp8", 8),
    ]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["model", "hardware", "precision", "tp", "isl", "osl", "concurrency", "batching"]
        )
        for _ in range(n):
            m, h, p, tp = rng.choice(combos)
            w.writerow(
                [
                    m,
                    h,
                    p,
                    tp,
                    rng.choice([128, 512, 2000, 7000]),
                    rng.choice([128, 500, 2000]),
                    rng.randint(1, 256),
                    rng.choice(["inflight", "static"]),
                ]
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    exe = [sys.executable, "-m", "inferencesize"]
    cmd = [*exe, "validate", *[a for d in DATA for a in ("--data", str(ROOT / d))]]
    subprocess.run(cmd, check=True)
    for set_id in HELD_OUT_SETS:
        print(f"\nheld out, {HELD_OUT} with --engine {set_id}:")
        held = [*exe, "validate", "--data", str(ROOT / HELD_OUT), "--engine", set_id]
        subprocess.run(held, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        pts = Path(tmp) / "points.csv"
        points_csv(pts, args.rows)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = subprocess.run(
                [*exe, "estimate", "--points", str(pts), "--format", "csv"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            times.append(time.perf_counter() - t0)
        lines = out.count("\n") - 1
        times.sort()
        print(
            f"estimate --points: {lines} rows, median {times[len(times) // 2]:.2f} s wall "
            f"(runs: {', '.join(f'{t:.2f}' for t in times)})"
        )


if __name__ == "__main__":
    main()
