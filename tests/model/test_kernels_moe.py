"""MoE family of the kernel tier: routed pairs, touched experts, FLOP and bytes by hand, the
time formula's limits, a fit that recovers known parameters and transfers by datasheet, and
the shipped fit's lookup."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from inferencesize.kernel_fit import fit_moe
from inferencesize.kernels_moe import (
    MoeParams,
    moe_bytes,
    moe_flops,
    moe_pairs,
    moe_params_for,
    moe_time_s,
    moe_touched,
)

H100 = (989.5e12, 3.35e12)  # dense BF16 FLOP/s, HBM bytes/s (hardware/gpus/h100-sxm.yaml)
B200 = (2250e12, 8.0e12)
TRUE = MoeParams(eta_max=0.55, rows_half=48.0, eta_mem=0.75, launch_s=2e-5, route_s=2e-9)


def test_routing_by_hand() -> None:
    # 64 tokens, top-8 of 256 experts over EP 8: 64·8/8 = 64 pairs on each GPU
    assert float(moe_pairs(64, 8, 8)) == 64
    # one token touches exactly topk experts (spread over the EP group)
    assert float(moe_touched(1, 8, 256, 1)) == pytest.approx(8)
    assert float(moe_touched(1, 8, 256, 8)) == pytest.approx(1)
    # many tokens touch every expert a GPU holds
    assert float(moe_touched(1e5, 8, 256, 8)) == pytest.approx(32)
    # 2 tokens, top-2 of 8: 8·(1 − (6/8)²) = 3.5 expected experts
    assert float(moe_touched(2, 2, 8, 1)) == pytest.approx(3.5)


def test_flops_and_bytes_by_hand() -> None:
    # 16 tokens, top-2 of 8 experts, hidden 4096, inter 14336, TP 2, EP 1: 32 pairs,
    # 2·32·3·4096·7168 FLOP
    assert float(moe_flops(16, 2, 4096, 14336, 2, 1)) == 2 * 32 * 3 * 4096 * 7168
    # bf16 with one token: 2 experts' weights (3·4096·7168·2 bytes each) + 2 pairs' 4096 in
    # and out at 2 bytes
    moved = float(moe_bytes(1, 2, 8, 4096, 14336, 2, 1, "bfloat16"))
    assert moved == pytest.approx(2 * 3 * 4096 * 7168 * 2 + 2 * 4096 * 4)
    # an 4-bit MXFP4 weight costs 4.25 bits
    w4 = float(moe_bytes(1, 1, 1, 1024, 1024, 1, 1, "w4a16_mxfp4"))
    assert w4 == pytest.approx(3 * 1024 * 1024 * 0.53125 + 1024 * 4)


def test_time_limits_by_hand() -> None:
    p = MoeParams(0.5, 10.0, 0.8, 1e-5, 1e-9)
    # rows = rows_half: half of eta_max; compute-bound
    t = float(moe_time_s(1e12, 1.0, 1000.0, 10.0, 1e15, 1e12, p))
    assert t == pytest.approx(1e-5 + 1e-9 * 1000 + 1e12 / (0.25 * 1e15))  # 0.5 · 10/(10 + 10)
    # no compute: weights at eta_mem of the bandwidth
    t = float(moe_time_s(0.0, 8e9, 0.0, 1.0, 1e15, 1e12, p))
    assert t == pytest.approx(1e-5 + 8e9 / (0.8 * 1e12))


def _grid(peak: float, bw: float, p: MoeParams) -> tuple[np.ndarray, ...]:
    tokens, experts, ep = (
        a.ravel()
        for a in np.meshgrid(
            [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0], [8.0, 128.0], [1.0, 4.0, 8.0]
        )
    )
    topk = np.where(experts > 8, 8.0, 2.0)
    hidden, inter, tp = 4096.0, 2048.0, 1.0
    pairs = moe_pairs(tokens, topk, ep)
    rows = pairs / moe_touched(tokens, topk, experts, ep)
    flops = moe_flops(tokens, topk, hidden, inter, tp, ep)
    moved = moe_bytes(tokens, topk, experts, hidden, inter, tp, ep, "bfloat16")
    shape = (flops, moved, tokens * topk, rows)
    return (*shape, moe_time_s(*shape, peak, bw, p))


def test_fit_recovers_known_parameters_and_transfers_by_datasheet() -> None:
    *shape, latency = _grid(*H100, TRUE)
    fit = fit_moe(*shape, *H100, latency)
    for f in fields(MoeParams):
        assert getattr(fit, f.name) == pytest.approx(getattr(TRUE, f.name), rel=0.03), f.name
    *b200_shape, b200_latency = _grid(*B200, TRUE)
    assert np.all(np.abs(moe_time_s(*b200_shape, *B200, fit) / b200_latency - 1) < 0.02)


def test_shipped_fit_gives_any_gpu_moe_parameters() -> None:
    from shipped import catalog

    from inferencesize.io_kernels import load_kernel_fit

    fit = load_kernel_fit()
    gpus = catalog().gpus
    arch = {gpu_id: spec.architecture for gpu_id, spec in gpus.items()}
    key = ("SGLang", "fp8_block", "balanced")
    own = moe_params_for("h200-sxm", "hopper", *key, fit.moe, arch)
    assert own is not None and own[1] == "measured"
    got = moe_params_for("h20", gpus["h20"].architecture, *key, fit.moe, arch)
    assert got is not None and got[1] == "same architecture"
    assert moe_params_for("h20", "hopper", "SGLang", "no-such", "balanced", fit.moe, arch) is None
