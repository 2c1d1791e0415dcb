"""Speed of the discrete-event simulator: 100,000 requests through in-flight batching.

Seed case (Llama-3-8B FP8, one H100-SXM, ISL 2000, OSL 200), Poisson arrivals at 90 % of the
instance's throughput, KV-limited in-flight batching. Target: under 10 s on the project
machine. Also times chunked prefill and dynamic batching on the same traffic.

Then whole ``infersize simulate`` processes (CPU seconds and peak resident memory from the OS,
os.wait4) with ``--requests-out``: 100,000 requests as the baseline, and 1,000,000 (targets:
under 5 s, peak under 250 MiB; CPU should grow no faster than the requests).

Last measured on the project machine (2 cores, busy with other work; the earlier code in the
same session): in-flight 2.4 µs/request (was 5.0), chunked 8.5 (11.0), dynamic 1.6 (2.2);
processes, 100,000 requests 0.88 s CPU (was 1.23), 1,000,000 requests 4.92 s CPU (8.38), both
peaks unchanged at 97 and 197 MiB. Of the 1,000,000-request run about 2.4 s is the event
loop, 2 s writing the CSV (``--requests-out``) and 0.5 s starting up.

Run: python benchmarks/simulate_speed.py [requests]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from process_stats import infersize, mib, run

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
    for policy, batch in (("inflight", 10**6), ("chunked", 10**6), ("dynamic", 16)):
        budget = 2048 if policy == "chunked" else 8192
        cfg = BatchingConfig(policy, batch, 0.01, budget)  # type: ignore[arg-type]
        start = time.perf_counter()
        sim = simulate_llm(res.deployment, gpu.memory_bytes, wl, cfg)
        took = time.perf_counter() - start
        s = summarize(sim)
        sys.stdout.write(
            f"{policy:9s} {n:,} requests at {rate:.2f} req/s: {took:.2f} s "
            f"({took / n * 1e6:.1f} µs/request) · TTFT p95 {s.ttft_s.p95 * 1e3:,.0f} ms · "
            f"ITL mean {s.itl_s.mean * 1e3:.2f} ms · {s.requests_per_s:.2f} req/s\n"
        )
    processes()


def processes() -> None:
    base = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm"]
    base += ["--isl", "2000", "--osl", "200", "--rate", "10", "--format", "json"]
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "requests.csv")
        small = run([*infersize(), *base, "--requests", "100000", "--requests-out", out])
        large = run([*infersize(), *base, "--requests", "1000000", "--requests-out", out])
    sys.stdout.write(
        f"process, 100,000 requests: {small.cpu_s:.2f} s CPU, peak {mib(small.peak_bytes):.0f} MiB\n"
        f"process, 1,000,000 requests: {large.cpu_s:.2f} s CPU"
        f" ({large.cpu_s / small.cpu_s:.1f}x; target < 5 s),"
        f" peak {mib(large.peak_bytes):.0f} MiB (target < 250 MiB)\n"
    )


if __name__ == "__main__":
    main()
