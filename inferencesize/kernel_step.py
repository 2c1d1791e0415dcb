"""The GEMMs and tensor-parallel all-reduces of a step from the kernel tier (measured kernels).

A set that names the kernel tables of its engine (``EfficiencySet.kernels``) lets the kernel
tier carry the hardware: each GEMM call of a layer takes its time from the GPU's fitted GEMM
parameters (``kernels.gemm_time_s``: a launch plus the larger of its math at the share of the
peak its shape reaches and its bytes at the measured share of the HBM bandwidth), and an
all-reduce inside one NVLink domain from the fitted collective of the engine's own kernel or
NCCL, whichever is faster (engines switch between them by message size). A GPU never measured
takes its architecture's parameters applied to its own datasheet (``kernels.transferred``).

The calls of one layer, per GPU (shapes from the parameter counts, column-parallel inputs split
on ``n`` and row-parallel outputs on ``k`` by TP):

* dense weights (attention projections, dense MLP or shared experts, router): four calls of a
  quarter of the layer's dense weights each, two reading the hidden state (``k`` = hidden) and
  two writing it (``n`` = hidden), at the step's tokens as rows;
* routed experts (MoE layers): two grouped calls over the experts the step touches, at the
  rows one expert receives;
* the output head once per step: the step's sequences as rows, 16-bit.

Pure math: a :class:`KernelHardware` is built from a fit the caller read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from inferencesize.kernels import (
    CollectiveParams,
    GemmParams,
    collective_params_for,
    collective_time_s,
    gemm_params_for,
    gemm_time_s,
)
from inferencesize.kernels_attention import (
    ContextAttentionParams,
    GenerationAttentionParams,
    context_attention_params_for,
    context_attention_time_s,
    generation_attention_params_for,
    generation_attention_time_s,
)

#: Kernel-table GEMM dtype a precision's linear layers run (weight-only int4 / int8: the
#: TensorRT-LLM weight-only kernels; where an engine has no table for it, its 16-bit one).
GEMM_DTYPE = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "bfloat16",
    "fp8": "fp8",
    "fp4": "nvfp4",
    "int8": "int8_wo",
    "int4": "int4_wo",
}
#: An engine's all-reduce kernels in the tables (besides NCCL): CUDA-graph variants, as the
#: engines run decode steps in graphs.
ALLREDUCE = {
    "TRTLLM": ("TRTLLM", "NCCL"),
    "VLLM": ("vLLM_custom_graph", "NCCL"),
    "SGLang": ("SGLang_CustomAllReduce_graph", "NCCL"),
}
#: Bytes per element of the activations entering a GEMM of each kernel dtype (FP8 and NVFP4
#: GEMMs quantise their input; NVFP4 carries one FP8 scale per 16 values).
ACTIVATION_BYTES = {"fp8": 1.0, "nvfp4": 0.5625}
#: 16-bit activations and the output head's weights.
HALF = 2.0
#: Calls of the dense weights per layer and of the routed experts per MoE layer.
DENSE_CALLS = 4
EXPERT_CALLS = 2
#: A memory-bound stream of the KV cache reaches at most this share of the HBM bandwidth
#: (a GEMM fit's share may exceed 1 where small calls hit L2; a KV cache does not fit there).
STREAM_SHARE_MAX = 0.95


@dataclass(frozen=True)
class KernelHardware:
    """The kernel-tier parameters of one deployment's GPU, engine and precision."""

    gemm: GemmParams  # the linear layers' dtype
    gemm_dtype: str
    head: GemmParams  # 16-bit (output head)
    allreduce: tuple[CollectiveParams, ...]  # at the TP size inside one NVLink domain
    origin: str  # where the GEMM parameters come from (measured, same architecture, ...)
    context: ContextAttentionParams | None = None  # prefill attention (None: the set's share)
    generation: GenerationAttentionParams | None = None  # decode attention (None: roofline)

    def launched(self, share: float) -> KernelHardware:
        """The same kernels with ``share`` of each measured launch cost (CUDA graphs)."""
        if share == 1.0:
            return self

        def cut(p: Any) -> Any:
            return None if p is None else replace(p, launch_s=p.launch_s * share)

        return replace(
            self,
            gemm=cut(self.gemm),
            head=cut(self.head),
            context=cut(self.context),
            generation=cut(self.generation),
        )

    @property
    def stream_share(self) -> float:
        """Share of the HBM bandwidth a long memory stream (KV cache) reaches."""
        return min(self.head.eta_mem, STREAM_SHARE_MAX)


def _gemm_fits(
    fits: dict[tuple[str, str, str], GemmParams],
    gpu_id: str,
    architecture: str | None,
    engine: str,
    dtypes: tuple[str, ...],
    architecture_of: dict[str, str | None],
) -> tuple[GemmParams, str, str] | None:
    for dtype in dtypes:
        found = gemm_params_for(gpu_id, architecture, engine, dtype, fits, architecture_of)
        if found is not None:
            return found[0], dtype, found[1]
    return None


@dataclass(frozen=True, eq=False)
class KernelTier:
    """Fitted kernel parameters (``io_kernels.KernelFit``'s tables, keyed by catalog GPU id
    first) and the architecture of every fitted GPU (what a GPU without kernels borrows)."""

    gemm: dict[tuple[str, str, str], GemmParams]
    collectives: dict[tuple[str, str, str, int], CollectiveParams]
    context_attention: dict[tuple[str, str, str, str], ContextAttentionParams]
    generation_attention: dict[tuple[str, str, str, str], GenerationAttentionParams]
    architecture_of: dict[str, str | None]


def kernel_hardware(
    fit: KernelTier,
    gpu_id: str,
    architecture: str | None,
    engine: str,
    precision: str,
    kv_precision: str,
    tp: int,
) -> KernelHardware | None:
    """The kernel tier of a GPU under ``engine`` (kernel-table name: TRTLLM, VLLM, SGLang) at
    ``precision`` (KV cache at ``kv_precision``) and TP size ``tp``; None where no GPU was
    fitted for the engine."""
    gemm_fits, allreduce_fits, architecture_of = fit.gemm, fit.collectives, fit.architecture_of
    wanted = GEMM_DTYPE.get(precision, "bfloat16")
    linear = _gemm_fits(
        gemm_fits, gpu_id, architecture, engine, (wanted, "bfloat16"), architecture_of
    )
    head = _gemm_fits(gemm_fits, gpu_id, architecture, engine, ("bfloat16",), architecture_of)
    if linear is None or head is None:
        return None
    reduce: list[CollectiveParams] = []
    if tp > 1:
        for impl in ALLREDUCE.get(engine, ("NCCL",)):
            found = collective_params_for(
                gpu_id, architecture, impl, "all_reduce", tp, allreduce_fits, architecture_of
            )
            if found is not None:
                reduce.append(found[0])
    params, dtype, origin = linear
    kv = "fp8" if kv_precision == "fp8" else "bfloat16"
    math_dtypes = ("fp8", "bfloat16") if precision == "fp8" and kv == "fp8" else ("bfloat16",)
    context = None
    for d in math_dtypes:
        found_c = context_attention_params_for(
            gpu_id, architecture, engine, d, kv, fit.context_attention, architecture_of
        )
        if found_c is not None:
            context = found_c[0]
            break
    found_g = generation_attention_params_for(
        gpu_id, architecture, engine, "bfloat16", kv, fit.generation_attention, architecture_of
    )
    return KernelHardware(
        params,
        dtype,
        head[0],
        tuple(reduce),
        f"{engine} {dtype}: {origin}",
        context,
        found_g[0] if found_g is not None else None,
    )


def _call_s(
    p: GemmParams,
    dtype: str,
    m: Any,
    n: Any,
    k: Any,
    weight_bytes_per_param: float,
    peak_flops: float,
    hbm_bytes_per_s: float,
) -> Any:
    """One GEMM call: ``m`` rows, ``n`` outputs, ``k`` inputs (weights in the deployment's
    stored bytes, activations in the kernel's input dtype, 16-bit output)."""
    act = ACTIVATION_BYTES.get(dtype, HALF)
    moved = m * k * act + k * n * weight_bytes_per_param + m * n * HALF
    return gemm_time_s(m, n, k, moved, peak_flops, hbm_bytes_per_s, p)


@dataclass(frozen=True)
class GemmWork:
    """The linear work of one pipeline stage's step on its busiest GPU."""

    tokens: Any  # rows of the dense GEMMs
    dense_params_per_layer: float  # per GPU
    layers: float
    expert_rows: Any  # rows one routed expert receives
    expert_params_per_layer: Any  # touched routed-expert weights per GPU per MoE layer
    moe_layers: float
    head_rows: Any  # sequences the output head runs on
    head_params: float  # per GPU
    hidden: int


def gemm_s(
    kh: KernelHardware,
    work: GemmWork,
    weight_bytes_per_param: float,
    peak_flops: float,
    peak16_flops: float,
    hbm_bytes_per_s: float,
) -> tuple[Any, Any]:
    """Seconds of every GEMM call of the step, and whether the dense calls are math-bound."""
    h = float(work.hidden)
    m = np.maximum(np.asarray(work.tokens, dtype=float), 1.0)
    quarter = work.dense_params_per_layer / DENSE_CALLS
    width = max(quarter / h, 1.0)
    args = (weight_bytes_per_param, peak_flops, hbm_bytes_per_s)
    into = _call_s(kh.gemm, kh.gemm_dtype, m, width, h, *args)
    out = _call_s(kh.gemm, kh.gemm_dtype, m, h, width, *args)
    total = work.layers * DENSE_CALLS / 2 * (into + out)
    flops = 2.0 * m * width * h
    bound = flops / (peak_flops * kh.gemm.eta_max) >= width * h * weight_bytes_per_param / (
        hbm_bytes_per_s * kh.gemm.eta_mem
    )
    if work.moe_layers:
        rows = np.maximum(np.asarray(work.expert_rows, dtype=float), 1.0)
        half = np.asarray(work.expert_params_per_layer, dtype=float) / EXPERT_CALLS
        wide = np.maximum(half / h, 1.0)
        into = _call_s(kh.gemm, kh.gemm_dtype, rows, wide, h, *args)
        out = _call_s(kh.gemm, kh.gemm_dtype, rows, h, wide, *args)
        total = total + work.moe_layers * (into + out)
    vocab = max(work.head_params / h, 1.0)
    head_rows = np.maximum(np.asarray(work.head_rows, dtype=float), 1.0)
    total = total + _call_s(
        kh.head, "bfloat16", head_rows, vocab, h, HALF, peak16_flops, hbm_bytes_per_s
    )
    return total, bound


def allreduce_s(kh: KernelHardware, message_bytes: Any, tp: int, link_bytes_per_s: float) -> Any:
    """One all-reduce of ``message_bytes`` over ``tp`` GPUs of one NVLink domain: the faster
    of the engine's kernel and NCCL (0 bytes: no call)."""
    message = np.asarray(message_bytes, dtype=float)
    times = [
        collective_time_s("all_reduce", tp, message, link_bytes_per_s, p) for p in kh.allreduce
    ]
    best = np.minimum.reduce(times) if len(times) > 1 else times[0]
    return np.where(message > 0, best, 0.0)


def decode_attention_s(
    kh: KernelHardware,
    flops: Any,
    cache_bytes: Any,
    layers: float,
    attended_per_layer: Any,
    items: Any,
    peak16_flops: float,
    hbm_bytes_per_s: float,
) -> Any:
    """Decode attention of a step: ``layers`` calls, each over ``attended_per_layer`` cached
    tokens a sequence and ``items`` (sequence, KV head) pairs per GPU; ``flops`` and
    ``cache_bytes`` for all of them (0 sequences: no call)."""
    p = kh.generation
    assert p is not None
    n = max(layers, 1e-9)
    kv_len = np.maximum(np.asarray(attended_per_layer, dtype=float), 1.0)
    items = np.maximum(np.asarray(items, dtype=float), 1e-9)
    one = generation_attention_time_s(
        flops / n, cache_bytes / n, kv_len, items, peak16_flops, hbm_bytes_per_s, p
    )
    return np.where(np.asarray(cache_bytes) > 0, layers * one, 0.0)


def prefill_attention_s(
    kh: KernelHardware,
    prompts: Any,
    seq: Any,
    heads_per_gpu: float,
    head_dim: float,
    layers: float,
    window_layers: float,
    window: int,
    computed_share: Any,
    peak_flops: float,
    hbm_bytes_per_s: float,
) -> Any:
    """Prefill attention of a step on one GPU: ``prompts`` prompts of ``seq`` tokens, one
    call per attention layer (``window_layers`` of them over a sliding ``window``);
    ``computed_share`` of each call's math runs (a cached prefix is not recomputed)."""
    p = kh.context
    assert p is not None
    n = np.maximum(np.asarray(prompts, dtype=float), 0.0)
    s = np.maximum(np.asarray(seq, dtype=float), 1.0)
    # the query, key, value and output rows of every new token, 16-bit
    moved = n * s * 4.0 * heads_per_gpu * head_dim * HALF

    def calls(w: float) -> Any:
        full = context_attention_time_s(
            np.maximum(n, 1e-9),
            s,
            heads_per_gpu,
            head_dim,
            w,
            moved,
            peak_flops,
            hbm_bytes_per_s,
            p,
        )
        return p.launch_s + (full - p.launch_s) * computed_share

    total = (layers - window_layers) * calls(0.0)
    if window_layers:
        total = total + window_layers * calls(float(window))
    return np.where(n > 0, total, 0.0)
