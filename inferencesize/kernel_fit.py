"""Fitting the kernel tier: the parameters of :mod:`inferencesize.kernels` from measured
latencies, in log space (relative error) with scipy's ``least_squares``, a soft-L1 loss, several
starting points and bounds of physical ranges. Pure math: arrays in, parameters out; no file is
read. Kept apart from :mod:`inferencesize.kernels` so that evaluating a fit never imports scipy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import least_squares

from inferencesize.kernels import (
    ArrayLike,
    CollectiveKind,
    CollectiveParams,
    FloatArray,
    GemmParams,
    as_vector,
    collective_time_s,
    gemm_time_s,
)
from inferencesize.kernels_attention import (
    ContextAttentionParams,
    GenerationAttentionParams,
    context_attention_time_s,
    generation_attention_time_s,
)
from inferencesize.kernels_moe import MoeParams, moe_time_s

#: physical ranges of the fitted parameters
GEMM_LOWER = GemmParams(0.01, 0.0, 0.0, 0.0, 0.01, 0.0)
GEMM_UPPER = GemmParams(1.0, 4096.0, 4096.0, 4096.0, 2.0, 1e-3)
COLLECTIVE_LOWER = CollectiveParams(0.0, 0.01, 0.0, 0.01)
COLLECTIVE_UPPER = CollectiveParams(1e-3, 2.0, 1e-3, 2.0)


def fit_gemm(
    m: FloatArray,
    n: FloatArray,
    k: FloatArray,
    bytes_moved: FloatArray,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    latency_s: FloatArray,
) -> GemmParams:
    """Fit :class:`GemmParams` to measured latencies; peak and bandwidth may differ per row
    (several GPUs fitted together share their shares, not their datasheets)."""
    lower, upper = as_vector(GEMM_LOWER), as_vector(GEMM_UPPER)
    log_t = np.log(latency_s)

    def residual(x: FloatArray) -> FloatArray:
        pred = gemm_time_s(m, n, k, bytes_moved, peak_flops_per_s, hbm_bytes_per_s, GemmParams(*x))
        return np.log(pred) - log_t

    floor_s = float(np.percentile(latency_s, 1))
    starts = (
        [0.7, 32.0, 32.0, 64.0, 0.8, 0.5 * floor_s],
        [0.5, 128.0, 256.0, 256.0, 0.6, 0.2 * floor_s],
    )
    best = _best_fit(residual, starts, lower, upper, [0.1, 100.0, 100.0, 100.0, 0.1, 1e-6], 1e-9)
    return GemmParams(*(float(v) for v in best))


def _best_fit(
    residual: Callable[[FloatArray], FloatArray],
    starts: Sequence[Sequence[float]],
    lower: FloatArray,
    upper: FloatArray,
    x_scale: Sequence[float],
    eps: float,
) -> FloatArray:
    """The least-cost robust fit (soft-L1 on log residuals, within the bounds) over the
    starting points ``starts`` (each moved ``eps`` inside the bounds)."""
    best: tuple[float, FloatArray] | None = None
    for start in starts:
        x0 = np.clip(np.array(start), lower + eps, upper - eps)
        fit = least_squares(
            residual, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.1,
            x_scale=np.array(x_scale),
        )  # fmt: skip
        if best is None or fit.cost < best[0]:
            best = (float(fit.cost), fit.x)
    assert best is not None
    return best[1]


def fit_collective(
    kind: CollectiveKind,
    n_gpus: float,
    message_bytes: FloatArray,
    link_bytes_per_s: ArrayLike,
    latency_s: FloatArray,
) -> CollectiveParams:
    """Fit :class:`CollectiveParams` to measured latencies of one kind of collective at one
    GPU count."""
    lower, upper = as_vector(COLLECTIVE_LOWER), as_vector(COLLECTIVE_UPPER)
    log_t = np.log(latency_s)

    def residual(x: FloatArray) -> FloatArray:
        pred = collective_time_s(
            kind, n_gpus, message_bytes, link_bytes_per_s, CollectiveParams(*x)
        )
        return np.log(pred) - log_t

    floor_s = float(np.min(latency_s))
    starts = ([0.8 * floor_s, 0.3, floor_s, 0.8], [0.5 * floor_s, 0.1, 4 * floor_s, 0.6])
    best = _best_fit(residual, starts, lower, upper, [1e-6, 0.1, 1e-6, 0.1], 1e-12)
    return CollectiveParams(*(float(v) for v in best))


CONTEXT_ATTENTION_LOWER = ContextAttentionParams(0.01, 0.0, 0.0, 0.01, 0.0, 0.0, 1.0)
CONTEXT_ATTENTION_UPPER = ContextAttentionParams(1.0, 65536.0, 65536.0, 2.0, 1e-3, 4096.0, 512.0)
GENERATION_ATTENTION_LOWER = GenerationAttentionParams(0.01, 0.0, 0.0, 0.001, 0.0)
GENERATION_ATTENTION_UPPER = GenerationAttentionParams(2.0, 65536.0, 65536.0, 1.0, 1e-3)


def fit_context_attention(
    batch: FloatArray,
    seq: FloatArray,
    heads: FloatArray,
    head_dim: FloatArray,
    window: FloatArray,
    bytes_moved: FloatArray,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    latency_s: FloatArray,
    *,
    fit_dim_half: bool = True,
) -> ContextAttentionParams:
    """Fit :class:`ContextAttentionParams` to measured prefill attention latencies;
    ``fit_dim_half=False`` holds ``dim_half`` at ~0 where every row has one head dimension
    (MLA), which would leave it and ``eta_max`` indistinguishable."""
    log_t = np.log(latency_s)
    upper = as_vector(CONTEXT_ATTENTION_UPPER)
    if not fit_dim_half:
        upper[5] = 1e-6

    def residual(x: FloatArray) -> FloatArray:
        pred = context_attention_time_s(
            batch, seq, heads, head_dim, window, bytes_moved, peak_flops_per_s,
            hbm_bytes_per_s, ContextAttentionParams(*x),
        )  # fmt: skip
        return np.log(pred) - log_t

    floor_s = float(np.percentile(latency_s, 1))
    starts = (
        [0.5, 256.0, 64.0, 0.8, 0.5 * floor_s, 32.0, 64.0],
        [0.3, 1024.0, 512.0, 0.5, 0.2 * floor_s, 64.0, 16.0],
    )
    best = _best_fit(
        residual, starts, as_vector(CONTEXT_ATTENTION_LOWER), upper,
        [0.1, 100.0, 100.0, 0.1, 1e-6, 10.0, 10.0], 1e-9,
    )  # fmt: skip
    return ContextAttentionParams(*(float(v) for v in best))


def fit_generation_attention(
    flops: FloatArray,
    bytes_moved: FloatArray,
    kv_len: FloatArray,
    items: FloatArray,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    latency_s: FloatArray,
) -> GenerationAttentionParams:
    """Fit :class:`GenerationAttentionParams` to measured decode attention latencies."""
    log_t = np.log(latency_s)

    def residual(x: FloatArray) -> FloatArray:
        pred = generation_attention_time_s(
            flops, bytes_moved, kv_len, items, peak_flops_per_s, hbm_bytes_per_s,
            GenerationAttentionParams(*x),
        )  # fmt: skip
        return np.log(pred) - log_t

    floor_s = float(np.percentile(latency_s, 1))
    starts = ([0.8, 64.0, 64.0, 0.3, 0.5 * floor_s], [0.5, 512.0, 256.0, 0.1, 0.2 * floor_s])
    best = _best_fit(
        residual, starts, as_vector(GENERATION_ATTENTION_LOWER),
        as_vector(GENERATION_ATTENTION_UPPER), [0.1, 100.0, 100.0, 0.1, 1e-6], 1e-9,
    )  # fmt: skip
    return GenerationAttentionParams(*(float(v) for v in best))


MOE_LOWER = MoeParams(0.01, 0.0, 0.01, 0.0, 0.0)
MOE_UPPER = MoeParams(1.0, 4096.0, 2.0, 1e-3, 1e-6)


def fit_moe(
    flops: FloatArray,
    bytes_moved: FloatArray,
    routed: FloatArray,
    rows: FloatArray,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    latency_s: FloatArray,
) -> MoeParams:
    """Fit :class:`MoeParams` to measured MoE layer latencies."""
    log_t = np.log(latency_s)

    def residual(x: FloatArray) -> FloatArray:
        pred = moe_time_s(
            flops, bytes_moved, routed, rows, peak_flops_per_s, hbm_bytes_per_s, MoeParams(*x)
        )
        return np.log(pred) - log_t

    floor_s = float(np.percentile(latency_s, 1))
    starts = ([0.6, 64.0, 0.7, 0.5 * floor_s, 1e-9], [0.4, 256.0, 0.5, 0.2 * floor_s, 1e-8])
    best = _best_fit(
        residual, starts, as_vector(MOE_LOWER), as_vector(MOE_UPPER),
        [0.1, 100.0, 0.1, 1e-6, 1e-9], 1e-12,
    )  # fmt: skip
    return MoeParams(*(float(v) for v in best))
