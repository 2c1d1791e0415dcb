"""Check the serving-technique options against the measurements that exercise them.

Usage: python benchmarks/techniques_check.py

* Quantization (fp8 weights + activations + fp8 KV vs 16-bit): the TensorRT-LLM 0.9 static
  sweep measured both precisions at the same model, GPU, TP, lengths and batch. The speed-up
  fp16 / fp8 of the prefill (compute) and of the decode step (bandwidth) is compared with the
  model's (efficiency set trtllm-0.9-static), pair by pair.
* 2:4 sparsity: no measurement in the calibration data; the seed's Llama-2-70B numbers
  (model size −37 %, 1.3× at large batch, 1.6× at batch 32) against the model with the user's
  factors 0.63 / 1.3 on one H100 in FP8.
* Prefix caching, chunked prefill, speculative decoding: nothing in the calibration data
  exercises them (no row mentions them); their tests pin hand-computed effects instead.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from inferencesize.catalog import load_catalog
from inferencesize.estimate import Candidate, Estimator
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.latency import decode_step
from inferencesize.measured_map import map_measurements
from inferencesize.parallelism import Parallelism
from inferencesize.techniques import Techniques

ROOT = Path(__file__).resolve().parent.parent


def quantization() -> None:
    catalog = load_catalog()
    est = Estimator(catalog.efficiency_set("trtllm-0.9-static"))
    rows = dedupe(read_measurements(ROOT / "data/calibration/static_batching_sweep.csv"))
    mapped, _ = map_measurements(catalog, rows)
    pairs: dict[tuple[object, ...], dict[str, float]] = defaultdict(dict)
    for mp in mapped:
        m = mp.m
        if m.metric not in ("prefill_ms", "itl_ms_avg"):
            continue
        cand = mp.candidate
        res = est.resolve(cand, (m.isl or 0) + (m.osl or 0))
        op = est.point(res, m.isl or 0, m.osl or 1, int(mp.concurrency), "static")
        if op is None:
            continue
        predicted = op.ttft_s if m.metric == "prefill_ms" else op.itl_s
        key = (m.model, m.gpu, cand.par.tp, m.isl, m.osl, mp.concurrency, m.metric)
        pairs[key][cand.precision] = m.value / 1e3
        pairs[key][cand.precision + "_pred"] = predicted
    for metric in ("prefill_ms", "itl_ms_avg"):
        errors = []
        for key, v in pairs.items():
            if key[-1] != metric or not {"fp8", "fp16", "fp8_pred", "fp16_pred"} <= set(v):
                continue
            measured = v["fp16"] / v["fp8"]
            predicted = v["fp16_pred"] / v["fp8_pred"]
            errors.append((predicted - measured) / measured)
        if errors:
            print(
                f"fp16/fp8 speed-up, {metric}: {len(errors)} pairs, median error "
                f"{statistics.median(errors):+.1%}, median |error| "
                f"{statistics.median(abs(e) for e in errors):.1%}"
            )


def sparsity() -> None:
    catalog = load_catalog()
    gpu, system = catalog.hardware("h100-sxm")
    cand = Candidate(catalog.model("llama-2-70b"), gpu, system, "fp8", "fp8", Parallelism(1))
    eset = catalog.efficiency_set("nim-2024")
    dense = Estimator(eset).resolve(cand, 4000)
    sparse = Estimator(
        eset, techniques=Techniques(sparse_weight_factor=0.63, sparse_compute_speedup=1.3)
    )
    sp = sparse.resolve(cand, 4000)
    assert dense.deployment and sp.deployment and dense.memory and sp.memory
    size = sp.memory.weights_bytes / dense.memory.weights_bytes - 1
    print(f"2:4 sparsity, Llama-2-70B FP8 on H100: model size {size:+.1%} (seed −37 %)")
    for batch, seed in ((32, 1.6), (1024, 1.3)):
        a = decode_step(dense.deployment, batch, 1500).total_s
        b = decode_step(sp.deployment, batch, 1500).total_s
        print(
            f"  decode speed-up at batch {batch}: {a / b:.2f}× (seed {seed}×, "
            f"error {(a / b - seed) / seed:+.0%})"
        )


if __name__ == "__main__":
    quantization()
    sparsity()
