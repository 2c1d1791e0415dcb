"""Attention families of the kernel tier: the FLOP and byte counts by hand, the time formulas'
limits, fits that recover known parameters, a fit that transfers to another GPU by its
datasheet, and the shipped fit's lookup with the architecture fallback."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from inferencesize.kernel_fit import (
    CONTEXT_ATTENTION_LOWER,
    CONTEXT_ATTENTION_UPPER,
    GENERATION_ATTENTION_LOWER,
    GENERATION_ATTENTION_UPPER,
    fit_context_attention,
    fit_generation_attention,
)
from inferencesize.kernels_attention import (
    ContextAttentionParams,
    GenerationAttentionParams,
    attended,
    causal_pairs,
    computed_pairs,
    context_attention_bytes,
    context_attention_flops,
    context_attention_params_for,
    context_attention_time_s,
    generation_attention_bytes,
    generation_attention_flops,
    generation_attention_params_for,
    generation_attention_time_s,
    mla_generation_bytes,
    mla_generation_flops,
)

ROOT = Path(__file__).resolve().parents[2]
H100 = (989.5e12, 3.35e12)  # dense BF16 FLOP/s, HBM bytes/s (hardware/gpus/h100-sxm.yaml)
B200 = (2250e12, 8.0e12)  # hardware/gpus/b200.yaml
TRUE_CONTEXT = ContextAttentionParams(0.6, 64.0, 16.0, 0.3, 8e-6, 48.0, 16.0)
TRUE_GENERATION = GenerationAttentionParams(0.85, 96.0, 48.0, 0.2, 6e-6)


def test_causal_pairs_by_hand() -> None:
    # 4 tokens, full: queries see 1, 2, 3, 4 keys
    assert float(causal_pairs(4, 0)) == 10
    # window 2: 1, 2, 2, 2 keys
    assert float(causal_pairs(4, 2)) == 7
    # a window as long as the sequence changes nothing
    assert float(causal_pairs(4, 4)) == 10 == float(causal_pairs(4, 9))
    assert float(attended(100, 0)) == 100 and float(attended(100, 32)) == 32


def test_computed_pairs_by_hand() -> None:
    # a tile of 1 token computes exactly the causal pairs
    assert float(computed_pairs(300, 0, 1.0)) == float(causal_pairs(300, 0))
    # 256 tokens in 64-token tiles: 4·(4+1)/2 = 10 tiles of 64² = 40,960 pairs; the formula
    # says 256·257/2 + 256·63/2 = 40,960
    assert float(computed_pairs(256, 0, 64.0)) == 10 * 64 * 64
    # window 64 over 256 tokens: two ragged edges; never more than the full square
    assert float(computed_pairs(256, 64, 64.0)) == float(causal_pairs(256, 64)) + 2 * 256 * 63 / 2
    assert float(computed_pairs(4, 0, 512.0)) == 16


def test_context_counts_by_hand() -> None:
    # 2 sequences of 4 tokens, 8 heads of 128, full causal: 4·2·8·128·10 FLOP
    assert float(context_attention_flops(2, 4, 8, 128, 0)) == 4 * 2 * 8 * 128 * 10
    # Q and O at 2 bytes, K and V of 2 KV heads at 1 byte (fp8), every token once
    moved = float(context_attention_bytes(2, 4, 8, 2, 128, 2.0, 1.0))
    assert moved == 2 * 4 * (2 * 8 * 128 * 2 + 2 * 2 * 128 * 1)


def test_generation_counts_by_hand() -> None:
    # 3 sequences at 1000 cached tokens, 32 heads / 8 KV heads of 128, bf16 cache
    assert float(generation_attention_flops(3, 1000, 32, 128)) == 4 * 3 * 32 * 128 * 1000
    moved = float(generation_attention_bytes(3, 1000, 32, 8, 128, 2.0))
    assert moved == 3 * 1000 * 2 * 8 * 128 * 2 + 3 * 32 * 128 * 4
    # MLA decode: a 576-wide latent row per token once, 2·(576 + 512) FLOP per token and head
    assert float(mla_generation_flops(2, 100, 16)) == 2 * 16 * 100 * 2 * (576 + 512)
    assert float(mla_generation_bytes(2, 100, 16, 1.0)) == 2 * 100 * 576 + 2 * 16 * 1088 * 2


def test_context_time_limits_by_hand() -> None:
    p = ContextAttentionParams(0.5, 1.0, 1.0, 0.8, 5e-6, 1.0, 1.0)
    # long, wide and deep: compute-bound at eta_max of the peak, plus the launch
    big = 1e5
    t = float(context_attention_time_s(big, big, big, big, 0, 1.0, 1e15, 1e12, p))
    flops = 4 * big**3 * big * (big + 1) / 2
    assert t == pytest.approx(5e-6 + flops / (0.5 * 1e15), rel=1e-4)
    # at seq = seq_half, items = items_half and head_dim = dim_half: an eighth of eta_max
    q = ContextAttentionParams(0.8, 100.0, 10.0, 0.8, 0.0, 128.0, 1.0)
    t = float(context_attention_time_s(2, 100, 5, 128, 0, 1.0, 1e15, 1e12, q))
    assert t == pytest.approx(4 * 2 * 5 * 128 * 5050 / (0.1 * 1e15))
    # one token: the memory roofline
    t = float(context_attention_time_s(1, 1, 1, 1, 0, 8e9, 1e15, 1e12, q))
    assert t == pytest.approx(8e9 / (0.8 * 1e12))


def test_generation_time_limits_by_hand() -> None:
    p = GenerationAttentionParams(0.9, 10.0, 20.0, 0.3, 4e-6)
    # many items, long contexts: the cache at eta_mem of the bandwidth
    t = float(generation_attention_time_s(0.0, 9e9, 1e12, 1e12, 1e15, 1e12, p))
    assert t == pytest.approx(4e-6 + 9e9 / (0.9 * 1e12), rel=1e-6)
    # items = items_half and kv_len = len_half: a quarter of that share
    t = float(generation_attention_time_s(0.0, 9e9, 20.0, 10.0, 1e15, 1e12, p))
    assert t == pytest.approx(4e-6 + 9e9 / (0.225 * 1e12))
    # compute-bound: flops / (eta_c · peak)
    t = float(generation_attention_time_s(3e14, 1.0, 1e12, 1e12, 1e15, 1e12, p))
    assert t == pytest.approx(4e-6 + 1.0)


def _context_grid(peak: float, bw: float, p: ContextAttentionParams) -> tuple[np.ndarray, ...]:
    batch, seq, heads, head_dim, window = (
        a.ravel()
        for a in np.meshgrid(
            [1.0, 4.0, 32.0, 512.0],
            [1.0, 4.0, 16.0, 128.0, 512.0, 2048.0, 8192.0],
            [2.0, 8.0, 32.0, 64.0],
            [64.0, 128.0, 256.0],
            [0.0, 256.0],
        )
    )
    moved = context_attention_bytes(batch, seq, heads, heads / 4, head_dim, 2.0, 2.0)
    shape = (batch, seq, heads, head_dim, window, moved)
    return (*shape, context_attention_time_s(*shape, peak, bw, p))


def _generation_grid(
    peak: float, bw: float, p: GenerationAttentionParams
) -> tuple[np.ndarray, ...]:
    batch, kv_len, kv_heads = np.meshgrid(
        [1.0, 8.0, 64.0, 512.0], [1.0, 16.0, 256.0, 4096.0, 32768.0], [1.0, 8.0]
    )
    batch, kv_len, kv_heads = batch.ravel(), kv_len.ravel(), kv_heads.ravel()
    heads = 128.0 * kv_heads  # grouped 128 to 1: compute-bound where the cache is long
    flops = generation_attention_flops(batch, kv_len, heads, 128.0)
    moved = generation_attention_bytes(batch, kv_len, heads, kv_heads, 128.0, 2.0)
    items = batch * kv_heads
    latency = generation_attention_time_s(flops, moved, kv_len, items, peak, bw, p)
    return flops, moved, kv_len, items, latency


def test_context_fit_recovers_known_parameters() -> None:
    *shape, latency = _context_grid(*H100, TRUE_CONTEXT)
    fit = fit_context_attention(*shape, *H100, latency)
    for f in fields(ContextAttentionParams):
        assert getattr(fit, f.name) == pytest.approx(getattr(TRUE_CONTEXT, f.name), rel=0.02)


def test_generation_fit_recovers_known_parameters() -> None:
    *shape, latency = _generation_grid(*H100, TRUE_GENERATION)
    fit = fit_generation_attention(*shape, *H100, latency)
    for f in fields(GenerationAttentionParams):
        assert getattr(fit, f.name) == pytest.approx(getattr(TRUE_GENERATION, f.name), rel=0.02)


def test_a_fit_on_one_gpu_predicts_another_by_its_datasheet() -> None:
    # leave one GPU out: fitted on H100 rows, applied to B200's peak and bandwidth
    *shape, latency = _context_grid(*H100, TRUE_CONTEXT)
    fit = fit_context_attention(*shape, *H100, latency)
    *b200_shape, b200_latency = _context_grid(*B200, TRUE_CONTEXT)
    pred = context_attention_time_s(*b200_shape, *B200, fit)
    assert np.all(np.abs(pred / b200_latency - 1) < 0.01)
    # the same shapes run faster on the faster datasheet, never slower
    assert np.all(b200_latency <= latency)


def test_fits_stay_within_their_bounds_on_noisy_data() -> None:
    rng = np.random.default_rng(0)
    *shape, latency = _generation_grid(*H100, TRUE_GENERATION)
    noisy = latency * np.exp(rng.normal(0, 0.15, latency.shape))
    fit = fit_generation_attention(*shape, *H100, noisy)
    for f in fields(GenerationAttentionParams):
        lo, hi = (
            getattr(GENERATION_ATTENTION_LOWER, f.name),
            getattr(GENERATION_ATTENTION_UPPER, f.name),
        )
        assert lo <= getattr(fit, f.name) <= hi
    *shape, latency = _context_grid(*H100, TRUE_CONTEXT)
    fit_c = fit_context_attention(
        *shape, *H100, latency * np.exp(rng.normal(0, 0.15, latency.shape))
    )
    for f in fields(ContextAttentionParams):
        lo, hi = getattr(CONTEXT_ATTENTION_LOWER, f.name), getattr(CONTEXT_ATTENTION_UPPER, f.name)
        assert lo <= getattr(fit_c, f.name) <= hi


def test_any_catalog_gpu_gets_attention_parameters_from_the_shipped_fit() -> None:
    from shipped import catalog

    from inferencesize.io_kernels import load_kernel_fit

    fit = load_kernel_fit()
    gpus = catalog().gpus
    arch = {gpu_id: spec.architecture for gpu_id, spec in gpus.items()}
    key = ("TRTLLM", "bfloat16", "bfloat16")
    own = context_attention_params_for("h100-sxm", "hopper", *key, fit.context_attention, arch)
    assert own == (fit.context_attention[("h100-sxm", *key)], "measured")
    got = generation_attention_params_for("h20", "hopper", *key, fit.generation_attention, arch)
    assert got is not None and got[1] == "same architecture"
    h100 = fit.generation_attention[("h100-sxm", *key)]
    h200 = fit.generation_attention[("h200-sxm", *key)]
    assert got[0].eta_mem == pytest.approx((h100.eta_mem * h200.eta_mem) ** 0.5)
    none = context_attention_params_for(
        "h20", "hopper", "TRTLLM", "fp4", "fp4", fit.context_attention, arch
    )
    assert none is None
    # a long 16-bit decode on H100 reads its cache within the physical range of the bandwidth
    p = own[0]
    assert CONTEXT_ATTENTION_LOWER.eta_mem <= p.eta_mem <= CONTEXT_ATTENTION_UPPER.eta_mem


def test_mla_context_fit_holds_the_head_dimension_share() -> None:
    # every MLA row has one head dimension: dim_half is held at ~0, eta_max carries the share
    from inferencesize.kernels_attention import MLA_CONTEXT_HEAD_DIM

    assert MLA_CONTEXT_HEAD_DIM == (128 + 64 + 128) / 2
    true = ContextAttentionParams(0.45, 128.0, 8.0, 0.5, 1e-5, 0.0, 32.0)
    batch, seq, heads = (
        a.ravel()
        for a in np.meshgrid([1.0, 8.0, 64.0], [16.0, 256.0, 2048.0, 8192.0], [2.0, 16.0, 128.0])
    )
    dim = np.full(batch.shape, MLA_CONTEXT_HEAD_DIM)
    moved = context_attention_bytes(batch, seq, heads, heads, dim, 2.0, 2.0)
    shape = (batch, seq, heads, dim, np.zeros(batch.shape), moved)
    latency = context_attention_time_s(*shape, *H100, true)
    fit = fit_context_attention(*shape, *H100, latency, fit_dim_half=False)
    assert fit.dim_half < 1e-5
    assert fit.eta_max == pytest.approx(0.45, rel=0.02)
    assert np.all(np.abs(context_attention_time_s(*shape, *H100, fit) / latency - 1) < 0.01)


def test_shipped_fit_has_mla_for_hopper() -> None:
    from inferencesize.io_kernels import load_kernel_fit

    fit = load_kernel_fit()
    key = ("h100-sxm", "TRTLLM", "bfloat16", "fp8")
    assert key in fit.context_mla and key in fit.generation_mla
    # a 128-head, 8k-context decode of 64 sequences reads 64·8192·576 bytes of fp8 latent
    # cache: no faster than the datasheet bandwidth allows
    p = fit.generation_mla[key]
    flops = mla_generation_flops(64, 8192, 128)
    moved = mla_generation_bytes(64, 8192, 128, 1.0)
    t = float(generation_attention_time_s(flops, moved, 8192, 64, *H100, p))
    assert t > 64 * 8192 * 576 / H100[1]
