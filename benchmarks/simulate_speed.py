"""Speed of the discrete-event simulator: 100,000 requests through in-flight batching.

Seed case (Llama-3-8B FP8, one H100-SXM, ISL 2000, OSL 200), Poisson arrivals at 90 % of the
instance's throughput, KV-limited in-flight batching. Target: under 10 s on the project
machine. Also times chunked prefill and dynamic batching on the same traffic, and four
instances behind a random router at four times the rate (run one by one on their own
arrivals).

Then whole ``infersize simulate`` processes (CPU seconds and peak resident memory from the OS,
os.wait4) with ``--requests-out``, each run ``RUNS`` times in turn (min and median): 100,000
requests as the baseline, and 1,000,000 (targets: CPU at most 5 s, peak under 250 MiB; CPU
should grow no faster than the requests).

Last measured on the project machine (2 cores shared with other work, load 3.5-4.6: CPU
seconds vary by a third between runs), 1,000,000 requests, runs of the code before and after
the CSV was written a column at a time in turn: 4.16 s CPU min, 4.63 median of 9 (before:
5.79 and 6.51; at a lighter load 3.33 and 3.79 of 5); the CSV takes about 0.4 s of it (was
2), the event loop about 2.4 s and starting up 0.5 s; peak 189 MiB (was 198).

Run: python benchmarks/simulate_speed.py [requests]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from process_stats import Run, infersize, interleaved, mib

from inferencesize.catalog import load_catalog
from inferencesize.estimate import Candidate, Estimator
from inferencesize.parallelism import Parallelism
from inferencesize.simulate import (
    BatchingConfig,
    Workload,
    lengths,
    poisson_arrivals,
    simulate_llm,
    summarize,
)
from inferencesize.vocabulary import Router, Statistic


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    cat = load_catalog()
    gpu, system = cat.hardware("h100-sxm")
    cand = Candidate(cat.model("llama-3-8b"), gpu, system, "fp8", "fp8", Parallelism(1, 1, 1))
    est = Estimator(cat.efficiency_set(None))
    res = est.resolve(cand, 2200)
    assert res.deployment is not None
    rng = np.random.default_rng(0)
    rate = 0.9 * 12.6  # the simulator's closed-loop throughput at 50 clients is ~12.6 req/s
    wl = Workload(lengths(rng, n, 2000), lengths(rng, n, 200), poisson_arrivals(rng, n, rate))
    wide = Workload(wl.isl, wl.osl, wl.arrival_s / 4)  # four instances' worth
    cases = (("inflight", 10**6, wl, 1), ("chunked", 10**6, wl, 1), ("dynamic", 16, wl, 1))
    for policy, batch, traffic, instances in (*cases, ("inflight", 10**6, wide, 4)):
        budget = 2048 if policy == "chunked" else 8192
        cfg = BatchingConfig(policy, batch, 0.01, budget)  # type: ignore[arg-type]
        start = time.perf_counter()
        sim = simulate_llm(res.deployment, gpu.memory_bytes, traffic, cfg, instances, Router.RANDOM)
        took = time.perf_counter() - start
        s = summarize(sim)
        sys.stdout.write(
            f"{policy:9s} ×{instances} {n:,} requests at {rate * instances:.2f} req/s:"
            f" {took:.2f} s ({took / n * 1e6:.1f} µs/request) · TTFT p95"
            f" {s.ttft_s.at(Statistic.P95) * 1e3:,.0f} ms · ITL mean {s.itl_s.mean * 1e3:.2f} ms ·"
            f" {s.requests_per_s:.2f} req/s\n"
        )
    processes()


#: Runs of each process (in turn, after a warm-up round): CPU seconds on a shared machine vary.
RUNS = 5


def processes() -> None:
    base = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm"]
    base += ["--isl", "2000", "--osl", "200", "--rate", "10", "--format", "json"]
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "requests.csv")
        commands = {
            size: [*infersize(), *base, "--requests", size, "--requests-out", out]
            for size in ("100000", "1000000")
        }
        runs = interleaved(commands, RUNS)
    small, large = runs["100000"], runs["1000000"]

    def cpu(rs: list[Run]) -> str:
        return f"{min(r.cpu_s for r in rs):.2f} s CPU min, {statistics.median(r.cpu_s for r in rs):.2f} median"

    sys.stdout.write(
        f"process, 100,000 requests: {cpu(small)},"
        f" peak {mib(max(r.peak_bytes for r in small)):.0f} MiB\n"
        f"process, 1,000,000 requests: {cpu(large)} (target <= 5 s),"
        f" peak {mib(max(r.peak_bytes for r in large)):.0f} MiB (target < 250 MiB)\n"
    )


if __name__ == "__main__":
    main()
