"""Mixture-of-experts layers of the kernel tier: routing, the grouped expert GEMMs and the
combine of one MoE layer on one GPU, as a few physical parameters per GPU × engine × dtype ×
routing distribution, fitted on measured latencies (NVIDIA aiconfigurator's tables,
Apache-2.0). Numpy only; the fit is in :mod:`inferencesize.kernel_fit`.

One GPU holds ``experts / ep`` experts, each sliced ``inter / tp`` wide (gated: gate and up
``hidden → 2·inter/tp``, down ``inter/tp → hidden``). Of ``tokens`` tokens each routed to
``topk`` experts, ``pairs = tokens · topk / ep`` (token, expert) pairs land on the GPU when
routing is balanced, over the experts it holds that at least one token chose::

    touched = experts/ep · (1 − (1 − topk/experts)^tokens)
    rows    = pairs / touched                         (GEMM rows per expert)
    flops   = 6 · pairs · hidden · inter/tp
    bytes   = touched · 3 · hidden · inter/tp · weight_bytes + pairs · hidden · (act_bytes + 2)
    t = launch_s + route_s · tokens · topk
        + max(flops / (eta_max · rows/(rows + rows_half) · peak), bytes / (eta_mem · hbm_bw))

The compute share rises with the rows each expert's GEMM gets (as ``m_half`` of a GEMM: a
decode step gives each expert a handful of rows, a prefill thousands); ``route_s`` is the
routing, permute and scatter work per (token, expert) choice of the whole batch: every GPU of
an expert-parallel group scans all of them for its own (with a per-GPU share ``/ ep`` instead,
the fit under-predicted EP 64-256 by 20-60 %); ``peak`` the datasheet dense peak of the
math's precision. A skewed routing (the tables' ``power_law_*``) loads some experts more than
others: it is fitted as its own distribution rather than modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inferencesize.kernels import ArrayLike, FloatArray, KernelParams, params_for

#: per MoE dtype of the tables: (datasheet precision of the math, activation bytes/element,
#: weight bytes/element). MXFP4 carries one 8-bit scale per 32 values (4.25 bits), NVFP4 one
#: FP8 scale per 16 (4.5 bits); int4 weight-only one 16-bit scale per 128 values.
MOE_DTYPES: dict[str, tuple[str, float, float]] = {
    "bfloat16": ("bf16", 2.0, 2.0),
    "float16": ("fp16", 2.0, 2.0),
    "fp8": ("fp8", 1.0, 1.0),
    "fp8_block": ("fp8", 1.0, 1.0),
    "nvfp4": ("fp4", 0.5625, 0.5625),
    "w4a8_mxfp4_mxfp8": ("fp8", 1.03125, 0.53125),
    "w4a16_mxfp4": ("bf16", 2.0, 0.53125),
    "int4_wo": ("bf16", 2.0, 0.515625),
}


@dataclass(frozen=True)
class MoeParams(KernelParams):
    """One MoE layer: share of the datasheet peak with many rows per expert, the rows at half
    of it, the share of HBM bandwidth, the launch time (s) and the routing time per
    (token, expert) choice of the batch (s)."""

    eta_max: float
    rows_half: float
    eta_mem: float
    launch_s: float
    route_s: float


def moe_pairs(tokens: ArrayLike, topk: ArrayLike, ep: ArrayLike) -> FloatArray:
    """(token, expert) pairs one GPU of ``ep`` serves under balanced routing."""
    return np.asarray(np.asarray(tokens, dtype=np.float64) * topk / ep, dtype=np.float64)


def moe_touched(
    tokens: ArrayLike, topk: ArrayLike, experts: ArrayLike, ep: ArrayLike
) -> FloatArray:
    """Experts of one GPU that at least one of ``tokens`` chose: ``experts/ep · (1 − (1 −
    topk/experts)^tokens)``."""
    e = np.asarray(experts, dtype=np.float64)
    untouched = (1.0 - np.minimum(np.asarray(topk, dtype=np.float64) / e, 1.0)) ** tokens
    return np.asarray(e / ep * (1.0 - untouched), dtype=np.float64)


def moe_flops(
    tokens: ArrayLike,
    topk: ArrayLike,
    hidden: ArrayLike,
    inter: ArrayLike,
    tp: ArrayLike,
    ep: ArrayLike,
) -> FloatArray:
    """FLOP of the gated expert GEMMs on one GPU: 2 · pairs · 3 · hidden · inter/tp."""
    return np.asarray(6.0 * moe_pairs(tokens, topk, ep) * hidden * inter / tp, dtype=np.float64)


def moe_bytes(
    tokens: ArrayLike,
    topk: ArrayLike,
    experts: ArrayLike,
    hidden: ArrayLike,
    inter: ArrayLike,
    tp: ArrayLike,
    ep: ArrayLike,
    dtype: str,
) -> FloatArray:
    """HBM traffic of one MoE layer on one GPU: the touched experts' weights once, each routed
    pair's activations in (``dtype``) and out (16-bit)."""
    _, act, weight = MOE_DTYPES[dtype]
    touched = moe_touched(tokens, topk, experts, ep)
    weights = touched * 3.0 * hidden * inter / tp * weight
    activations = moe_pairs(tokens, topk, ep) * hidden * (act + 2.0)
    return np.asarray(weights + activations, dtype=np.float64)


def moe_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    routed: ArrayLike,
    rows: ArrayLike,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    p: MoeParams,
) -> FloatArray:
    """Latency (s) of one MoE layer on one GPU; ``routed`` = tokens · topk (the whole batch's
    choices), ``rows`` = the GPU's pairs / its touched experts."""
    eta_c = p.eta_max * rows / (rows + p.rows_half)
    compute_s = flops / (eta_c * peak_flops_per_s)
    memory_s = bytes_moved / (p.eta_mem * hbm_bytes_per_s)
    return np.asarray(p.launch_s + p.route_s * routed + np.maximum(compute_s, memory_s))


def moe_params_for(
    gpu_id: str,
    architecture: str | None,
    engine: str,
    dtype: str,
    distribution: str,
    fits: dict[tuple[str, str, str, str], MoeParams],
    architecture_of: dict[str, str | None],
) -> tuple[MoeParams, str] | None:
    """MoE parameters of any GPU for one engine, MoE dtype and routing distribution (keys: GPU
    id, engine, dtype, distribution), with their origin as in
    :func:`inferencesize.kernels.transferred`; None where no GPU was fitted for that key."""
    return params_for(gpu_id, architecture, (engine, dtype, distribution), fits, architecture_of)
