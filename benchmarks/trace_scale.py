"""Memory and time of ``infersize plan --trace`` on long traces: whole processes (wall and CPU
seconds, peak resident memory from the OS, os.wait4) on generated traces of ``--rows``
requests (gamma gaps of cv 0.71 at 50 req/s, ISL 200-1800, OSL 50-350), each peak against the
smallest trace's, so a memory that grows with the rows shows. The trace's figures are read in
one pass in flat memory (inferencesize.io_trace.read_trace_traffic); ``--verify`` adds the
simulated replay of the trace's first requests (at most
inferencesize.trace_traffic.REPLAY_MAX_REQUESTS). Not a timed test: figures for a person.

Run: python benchmarks/trace_scale.py [--rows 100000,1000000,10000000] [--verify]
Exit 0 when every command succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from process_stats import Run, infersize, mib, run

QUESTION = ["--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8"]
QUESTION += ["--tp", "1", "--pp", "1", "--ttft-ms", "500", "--itl-ms", "30"]
#: Rows generated and written at a time (the generator's memory stays small too).
CHUNK = 1_000_000


def write_trace(path: Path, rows: int, seed: int = 0) -> float:
    """A trace of ``rows`` requests; seconds it took to write."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    last = 0.0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("arrival_s,isl,osl\n")
        for first in range(0, rows, CHUNK):
            n = min(CHUNK, rows - first)
            t = last + np.cumsum(rng.gamma(2.0, 1 / 100.0, n))  # mean 1/50 s, cv 1/sqrt(2)
            last = float(t[-1])
            isl = rng.integers(200, 1801, n)
            osl = rng.integers(50, 351, n)
            fh.writelines(f"{a:.6f},{b},{c}\n" for a, b, c in zip(t, isl, osl, strict=True))
    return time.perf_counter() - start


def line(rows: int, res: Run, first: Run) -> str:
    return (
        f"{rows:>11,} requests: {res.wall_s:7.2f} s wall, {res.cpu_s:7.2f} s CPU,"
        f" {rows / res.cpu_s:10,.0f} requests/s, peak {mib(res.peak_bytes):6.0f} MiB"
        f" ({res.peak_bytes / first.peak_bytes:.2f} x the smallest trace's), exit {res.code}\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100000,1000000,10000000", help="trace sizes")
    parser.add_argument("--verify", action="store_true", help="plan --verify (replay)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.rows.split(",")]
    extra = ["--verify"] if args.verify else []
    ok = True
    first: Run | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            path = Path(tmp) / f"trace-{rows}.csv"
            wrote = write_trace(path, rows)
            sys.stdout.write(
                f"  (wrote {rows:,} requests, {mib(path.stat().st_size):,.0f} MiB,"
                f" in {wrote:.1f} s)\n"
            )
            res = run([*infersize(), "plan", *QUESTION, "--trace", str(path), *extra])
            ok &= res.code == 0
            first = first or res
            sys.stdout.write(line(rows, res, first))
            sys.stdout.flush()
            path.unlink()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
