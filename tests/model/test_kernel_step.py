"""The step's GEMMs and all-reduces from the kernel tier: hand-computed calls, the fallbacks."""

from __future__ import annotations

import math

import pytest

from inferencesize.kernel_step import (
    DENSE_CALLS,
    GemmWork,
    KernelHardware,
    KernelTier,
    allreduce_s,
    gemm_s,
    kernel_hardware,
)
from inferencesize.kernels import CollectiveParams, GemmParams

#: A GEMM without shape losses: every call reaches eta_max of the peak or eta_mem of the HBM.
FLAT = GemmParams(eta_max=0.5, m_half=0.0, n_half=0.0, k_half=0.0, eta_mem=0.8, launch_s=5e-6)
PEAK = 1e15
HBM = 2e12


def _hw(gemm: GemmParams = FLAT, reduce: tuple[CollectiveParams, ...] = ()) -> KernelHardware:
    return KernelHardware(gemm, "bfloat16", gemm, reduce, "test")


def _dense(tokens: float, params: float, layers: float = 2.0, hidden: int = 1000) -> GemmWork:
    return GemmWork(
        tokens=tokens,
        dense_params_per_layer=params,
        layers=layers,
        expert_rows=0.0,
        expert_params_per_layer=0.0,
        moe_layers=0.0,
        head_rows=1.0,
        head_params=0.0,
        hidden=hidden,
    )


def _head_s(rows: float, hidden: int) -> float:
    """The output head of the tests: no vocabulary, one column of ``hidden`` inputs."""
    moved = rows * hidden * 2 + hidden * 2 + rows * 2
    return FLAT.launch_s + max(2 * rows * hidden / (0.5 * PEAK), moved / (0.8 * HBM))


def test_decode_streams_the_weights_once_plus_a_launch_per_call() -> None:
    # one token, 8e6 weights per layer, 16-bit: memory-bound, 4 calls of 2e6 weights a layer
    params, hidden, layers = 8e6, 1000, 2.0
    total, bound = gemm_s(_hw(), _dense(1.0, params, layers, hidden), 2.0, PEAK, PEAK, HBM)
    width = params / DENSE_CALLS / hidden
    per_call = FLAT.launch_s + (hidden * 2 + hidden * width * 2 + width * 2) / (0.8 * HBM)
    expected = layers * DENSE_CALLS * per_call + _head_s(1.0, hidden)
    assert total == pytest.approx(expected, rel=1e-9)
    assert not bool(bound)


def test_a_long_prefill_is_math_at_the_share_of_the_peak() -> None:
    params, hidden, layers, tokens = 8e6, 1000, 2.0, 1e5
    total, bound = gemm_s(_hw(), _dense(tokens, params, layers, hidden), 2.0, PEAK, PEAK, HBM)
    math_s = 2 * tokens * params * layers / (0.5 * PEAK)
    launches = layers * DENSE_CALLS * FLAT.launch_s
    assert total - _head_s(1.0, hidden) == pytest.approx(math_s + launches, rel=1e-9)
    assert bool(bound)


def test_small_dimensions_lose_share_of_the_peak() -> None:
    shaped = GemmParams(0.5, 100.0, 0.0, 0.0, 0.8, 0.0)
    work = _dense(100.0, 4e8, 1.0, 10000)
    slow, _ = gemm_s(_hw(shaped), work, 2.0, PEAK, PEAK, HBM * 1e6)
    fast, _ = gemm_s(
        _hw(GemmParams(0.5, 0.0, 0.0, 0.0, 0.8, 0.0)), work, 2.0, PEAK, PEAK, HBM * 1e6
    )
    # m = 100 rows at m_half = 100: half the share, twice the math time (the head is tiny)
    assert slow / fast == pytest.approx(2.0, rel=1e-3)


def test_routed_experts_are_two_calls_at_the_rows_one_expert_receives() -> None:
    work = GemmWork(
        tokens=1.0,
        dense_params_per_layer=0.0,
        layers=0.0,
        expert_rows=3.0,
        expert_params_per_layer=6e6,
        moe_layers=5.0,
        head_rows=1.0,
        head_params=0.0,
        hidden=1000,
    )
    total, _ = gemm_s(_hw(), work, 1.0, PEAK, PEAK, HBM)
    wide = 6e6 / 2 / 1000
    per_call = FLAT.launch_s + (3 * 1000 * 2 + 1000 * wide * 1.0 + 3 * wide * 2) / (0.8 * HBM)
    assert total - _head_s(1.0, 1000) == pytest.approx(5 * 2 * per_call, rel=1e-9)


def test_allreduce_takes_the_faster_kernel_and_nothing_for_no_bytes() -> None:
    slow_start = CollectiveParams(alpha_s=20e-6, eta_link=1.0, bulk_extra_s=0.0, eta_bulk=1.0)
    quick = CollectiveParams(alpha_s=5e-6, eta_link=0.25, bulk_extra_s=1e-3, eta_bulk=0.25)
    hw = _hw(reduce=(slow_start, quick))
    link = 1e11
    small, large, none = allreduce_s(hw, [1e3, 1e8, 0.0], 8, link)
    ring = 2 * 7 / 8
    assert small == pytest.approx(5e-6 + ring * 1e3 / link / 0.25)
    assert large == pytest.approx(20e-6 + ring * 1e8 / link)
    assert none == 0.0


def test_a_gpu_without_kernels_takes_its_architecture_and_a_missing_dtype_16_bit() -> None:
    a = GemmParams(0.8, 100.0, 100.0, 100.0, 0.8, 4e-6)
    b = GemmParams(0.2, 100.0, 100.0, 100.0, 0.2, 4e-6)
    fits = {("g1", "VLLM", "bfloat16"): a, ("g2", "VLLM", "bfloat16"): b}
    archs: dict[str, str | None] = {"g1": "x", "g2": "x"}
    fit = KernelTier(fits, {}, {}, {}, archs)
    hw = kernel_hardware(fit, "new", "x", "VLLM", "fp8", "fp8", 1)
    assert hw is not None
    assert hw.gemm_dtype == "bfloat16"  # no fp8 table for the engine: its 16-bit one
    assert hw.gemm.eta_max == pytest.approx(math.sqrt(0.8 * 0.2))  # log-space mean
    assert "same architecture" in hw.origin
    assert hw.context is None and hw.generation is None  # no attention tables: the roofline
    assert kernel_hardware(fit, "new", "x", "TRTLLM", "bf16", "bf16", 1) is None


def test_launch_share_scales_every_kernels_fixed_cost() -> None:
    hw = _hw()
    graphs = hw.launched(0.25)
    assert graphs.gemm.launch_s == pytest.approx(0.25 * FLAT.launch_s)
    assert graphs.head.launch_s == pytest.approx(0.25 * FLAT.launch_s)
    assert graphs.gemm.eta_max == FLAT.eta_max
    assert hw.launched(1.0) is hw
