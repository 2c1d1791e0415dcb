"""Disaggregated rows: a stated xPyD split under closed-loop clients, per-GPU rates as the
sources define them (output per decode GPU, input per prefill GPU, total per all GPUs)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from measurement_row import row

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.disagg import closed_loop, kv_streams, prefill_ttft_s
from inferencesize.disagg_point import predict_disaggregated
from inferencesize.io_measurements import Measurement
from inferencesize.measured_map import map_measurements
from inferencesize.parallelism import Parallelism
from inferencesize.validation import estimator_chooser, per_gpu_rates


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_per_gpu_rates_by_hand() -> None:
    # 2 req/s of 1000 / 100 tokens on 8 prefill + 32 decode GPUs
    got = per_gpu_rates(2.0, 1000.0, 100.0, 8, 32, 40)
    assert got["output_tok_s_per_gpu"] == pytest.approx(2 * 100 / 32)  # 6.25
    assert got["input_tok_s_per_gpu"] == pytest.approx(2 * 1000 / 8)  # 250
    assert got["throughput_tok_s_per_gpu"] == pytest.approx(2 * 1100 / 40)  # 55


def test_prefill_pool_idle_and_busy() -> None:
    # a 0.1 s prompt step: at 1 prompt/s the instance is busy 10 % of the time
    ttft, p = prefill_ttft_s(lambda n: 0.1 * n, 1.0, 100.0, 0.02)
    assert p == 1.0
    assert ttft == pytest.approx((1 + 0.5 * 0.1) * 0.1 + 0.02)
    # T(p) = 0.5 + 0.05 p at 10 prompts/s: p = 10 (0.5 + 0.05 p) -> p = 10, T = 1 s, busy
    ttft, p = prefill_ttft_s(lambda n: 0.5 + 0.05 * n, 10.0, 100.0, 0.0)
    assert p == pytest.approx(10.0, rel=1e-6)
    assert ttft == pytest.approx(1.5 * 1.0, rel=1e-6)
    # 30 prompts/s need p = 30 (0.5 + 0.05 p): no fixed point, the pool is saturated
    assert prefill_ttft_s(lambda n: 0.5 + 0.05 * n, 30.0, 100.0, 0.0)[0] == math.inf


def test_closed_loop_by_hand() -> None:
    """1 prefill instance (T(p) = 0.1 p s), 2 decode instances (ITL 10 ms), OSL 101, 10
    clients: X = 2 b / (100 · 0.01) = 2b, p = 1 while 0.2 b < 1, TTFT = (1 + 0.1 b) · 0.1;
    10 = X · TTFT + 2b = 2.2 b + 0.02 b² -> b = 4.3717, X = 8.7434 req/s, TTFT = 0.14372 s."""
    b = (-2.2 + math.sqrt(2.2**2 + 4 * 0.02 * 10)) / (2 * 0.02)
    loop = closed_loop(lambda p: 0.1 * p, 1, 64, lambda _b: 0.01, 2, 256, 0.0, 101.0, 10.0)
    assert loop.decode_batch == pytest.approx(b, rel=1e-6)
    assert loop.requests_per_s == pytest.approx(2 * b, rel=1e-6)
    assert loop.ttft_s == pytest.approx(0.1 + 0.01 * b, rel=1e-6)
    assert loop.itl_s == 0.01


def test_closed_loop_with_full_decode_slots_waits_for_the_first_token() -> None:
    # 2 slots per decode instance: b = 2, X = 4 req/s, 10 − 4 clients wait: TTFT = 6 / 4 s
    loop = closed_loop(lambda p: 0.1 * p, 1, 64, lambda _b: 0.01, 2, 2, 0.0, 101.0, 10.0)
    assert loop.decode_batch == 2
    assert loop.requests_per_s == pytest.approx(4.0)
    assert loop.ttft_s == pytest.approx(1.5)


DISAGG_NOTES = (
    "disaggregated prefill/decode, 1 prefill worker(s) x 8 GPU + 4 decode worker(s) x 8 GPU;"
    " attention_dp P:1 D:1; moe_tp P:8 D:8"
)


def disagg_row(metric: str) -> Measurement:
    return row(
        metric,
        model="DeepSeek-V3",
        gpu="H200-SXM-141GB",
        num_gpus=40,
        tp=None,
        ep=None,
        tp_cell="P:tp8x1 D:tp8x4",
        ep_cell="P:1 D:1",
        isl=1024.0,
        osl=1024.0,
        concurrency="64",
        engine="Dynamo+TensorRT-LLM (disagg)",
        engine_version="0.8.1",
        notes=DISAGG_NOTES,
    )


def test_disaggregated_row_per_gpu_conversion(catalog: Catalog) -> None:
    metrics = (
        "req_per_s",
        "output_tok_s_per_gpu",
        "input_tok_s_per_gpu",
        "throughput_tok_s_per_gpu",
        "ttft_ms_avg",
        "tpot_ms_avg",
        "e2e_ms_avg",
    )
    mapped, skipped = map_measurements(catalog, [disagg_row(m) for m in metrics])
    assert not skipped
    pre, dec = mapped[0].pools or ()
    assert (pre.instances, pre.gpus, dec.instances, dec.gpus) == (1, 8, 4, 32)
    preds, problems = predict_disaggregated(estimator_chooser(catalog), mapped)
    assert not problems
    rps, out_gpu, in_gpu, total_gpu, ttft, tpot, e2e = (p.predicted for p in preds)
    assert out_gpu == pytest.approx(rps * 1024 / 32)  # per decode GPU
    assert in_gpu == pytest.approx(rps * 1024 / 8)  # per prefill GPU
    assert total_gpu == pytest.approx(rps * 2048 / 40)  # per GPU of the deployment
    assert e2e == pytest.approx(ttft + 1023 * tpot)
    # Little's law on the 64 closed-loop clients
    assert rps * e2e / 1000 == pytest.approx(64, rel=1e-6)


def test_disaggregated_row_without_worker_counts_is_listed(catalog: Catalog) -> None:
    blank = replace(disagg_row("ttft_ms_avg"), tp_cell="P:tp8 D:tp8", num_gpus=None)
    mapped, skipped = map_measurements(catalog, [blank])
    assert mapped == []
    assert [why for _, why in skipped] == [
        "disaggregated: worker counts not stated (num_gpus blank)"
    ]


def test_kv_streams_are_one_attention_group() -> None:
    # attention DP: a sequence lives on one TP1 group, whatever the instance's 8 GPUs
    assert kv_streams(Parallelism(tp=1, ep=8, dp=8), Parallelism(tp=8)) == 1
    assert kv_streams(Parallelism(tp=8), Parallelism(tp=4, pp=2)) == 8
    # context parallelism: cp groups of TP GPUs each send their chunk
    assert kv_streams(Parallelism(tp=2), Parallelism(tp=8), cp=2) == 4
