"""Attention kernels of the kernel tier: prefill (context) and decode (generation) attention,
and DeepSeek's multi-head latent attention (MLA) in both phases, as a few physical parameters
per GPU × engine × dtype fitted on measured kernel latencies (NVIDIA aiconfigurator's tables,
Apache-2.0). Numpy only; the fits are in :mod:`inferencesize.kernel_fit`.

**Context (prefill)** attention of ``batch`` sequences of ``seq`` tokens, ``heads`` query heads of
``head_dim``, causal, over a sliding ``window`` (0 = full)::

    flops = 4 · batch · heads · head_dim · computed_pairs(seq, window, tile_tokens)
    bytes = batch · seq · (2 · heads · head_dim · q_bytes + 2 · kv_heads · head_dim · kv_bytes)
    t = launch_s + max(flops / (eta_c · peak), bytes / (eta_mem · hbm_bw))
    eta_c = eta_max · seq/(seq + seq_half) · items/(items + items_half)
            · head_dim/(head_dim + dim_half),  items = batch · heads

``causal_pairs`` counts the (query, key) pairs under the causal mask, at most ``window`` keys a
query (QKᵀ and PV, 2 FLOP each per pair and dimension). The kernels compute whole tiles: the
tiles on the mask's ragged edge (the diagonal; and the window's far edge) are computed in full,
about ``(tile_tokens − 1)/2`` wasted keys a query per edge (:func:`computed_pairs`; a fitted
``tile_tokens`` of 1 is the exact count). The compute share rises with the sequence (a short one
leaves the softmax pipeline unfilled), with the independent (sequence, head) items that spread
over the streaming multiprocessors, and with the head dimension (the reduction of QKᵀ: a short
one cannot hide its loads, as ``k_half`` for a GEMM). ``peak`` is the datasheet dense peak of
the math's precision (16-bit, or FP8 where the attention runs in FP8).

**Generation (decode)** attention, one new token per sequence over ``kv_len`` cached tokens::

    bytes = batch · kv_len · 2 · kv_heads · head_dim · kv_bytes + batch · heads · head_dim · 4
    flops = 4 · batch · heads · head_dim · kv_len
    t = launch_s + max(flops / (eta_c · peak16),
                       bytes / (eta_mem · hbm_bw · items/(items + items_half)
                                · kv_len/(kv_len + len_half)))
    items = batch · kv_heads

Reading the cache is the work; the bandwidth share rises with the parallel items (one
(sequence, KV head) per thread block before split-K), and a sequence costs a fixed prologue
worth ``len_half`` tokens of reading (load the query, reduce the partial softmaxes).

**MLA** (DeepSeek V3/R1 shapes: ``heads`` per GPU after TP; queries and keys of 128 + 64 rope
dimensions, values of 128; a latent cache of 512 + 64 per token): the context phase is the
context formula with head dimension ``MLA_CONTEXT_HEAD_DIM`` = (192 + 128)/2 = 160, one query head
per KV head after up-projection; the generation phase (weights absorbed) reads the latent cache
once per sequence and computes ``2 · heads · (576 + 512)`` FLOP per cached token, which is the
generation formula with ``kv_heads = 1``, ``head_dim = 576`` read once (not as K and V) and the
compute of :func:`mla_generation_flops`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inferencesize.kernels import ArrayLike, FloatArray, KernelParams, params_for

#: bytes per element of the attention tables' dtypes (math and KV cache)
ATTENTION_BYTES = {"bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "int8": 1.0}
#: datasheet precision of the attention math per dtype of the tables
ATTENTION_PRECISION = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8", "int8": "int8"}

#: DeepSeek MLA: latent KV (kv_lora_rank 512 + rope 64) and head dimensions
MLA_LATENT_DIM = 512.0
MLA_ROPE_DIM = 64.0
MLA_QK_NOPE_DIM = 128.0
MLA_V_DIM = 128.0
#: the context-phase FLOP per (query, key) pair and head, 2·(192 + 128), as 4 · this
MLA_CONTEXT_HEAD_DIM = (MLA_QK_NOPE_DIM + MLA_ROPE_DIM + MLA_V_DIM) / 2.0


@dataclass(frozen=True)
class ContextAttentionParams(KernelParams):
    """Prefill attention: share of the datasheet peak at long sequences, many items and wide
    heads; the sequence (tokens), items (sequences × heads) and head dimension at half of it;
    the share of HBM bandwidth; the launch time (s); the tile width (tokens) of the mask's
    edge computed in full."""

    eta_max: float
    seq_half: float
    items_half: float
    eta_mem: float
    launch_s: float
    dim_half: float
    tile_tokens: float


@dataclass(frozen=True)
class GenerationAttentionParams(KernelParams):
    """Decode attention: share of HBM bandwidth with many items, the items (sequences × KV
    heads) at half of it, the per-sequence prologue in tokens of reading, the share of the 16-bit
    peak of the math, and the launch time (s)."""

    eta_mem: float
    items_half: float
    len_half: float
    eta_c: float
    launch_s: float


def causal_pairs(seq: ArrayLike, window: ArrayLike) -> FloatArray:
    """(query, key) pairs under a causal mask over ``seq`` tokens, each query seeing at most
    ``window`` keys (itself included; ``window`` 0 = unlimited)."""
    s = np.asarray(seq, dtype=np.float64)
    w_in = np.asarray(window, dtype=np.float64)
    w = np.where((w_in > 0) & (w_in < s), w_in, s)
    return np.asarray(w * (w + 1.0) / 2.0 + (s - w) * w, dtype=np.float64)


def computed_pairs(seq: ArrayLike, window: ArrayLike, tile_tokens: ArrayLike) -> FloatArray:
    """(query, key) pairs a tiled kernel computes: the causal pairs plus ``(tile_tokens − 1)/2``
    keys a query on each ragged edge of the mask (one edge: the diagonal; two under a sliding
    window shorter than the sequence), at most ``seq²``."""
    s = np.asarray(seq, dtype=np.float64)
    w = np.asarray(window, dtype=np.float64)
    edges = np.where((w > 0) & (w < s), 2.0, 1.0)
    padded = causal_pairs(s, w) + edges * s * (np.asarray(tile_tokens) - 1.0) / 2.0
    return np.asarray(np.minimum(padded, s * s), dtype=np.float64)


def attended(kv_len: ArrayLike, window: ArrayLike) -> FloatArray:
    """Cached tokens a decode query reads: ``kv_len``, at most ``window`` (0 = unlimited)."""
    n = np.asarray(kv_len, dtype=np.float64)
    w = np.asarray(window, dtype=np.float64)
    return np.asarray(np.where((w > 0) & (w < n), w, n), dtype=np.float64)


def context_attention_flops(
    batch: ArrayLike, seq: ArrayLike, heads: ArrayLike, head_dim: ArrayLike, window: ArrayLike
) -> FloatArray:
    """FLOP of one prefill attention call: 4 · batch · heads · head_dim · causal pairs."""
    return np.asarray(4.0 * batch * heads * head_dim * causal_pairs(seq, window))


def context_attention_bytes(
    batch: ArrayLike,
    seq: ArrayLike,
    heads: ArrayLike,
    kv_heads: ArrayLike,
    head_dim: ArrayLike,
    q_bytes: ArrayLike,
    kv_bytes: ArrayLike,
) -> FloatArray:
    """HBM traffic of one prefill attention call: Q read and O written, K and V read once."""
    per_token = 2.0 * heads * head_dim * q_bytes + 2.0 * kv_heads * head_dim * kv_bytes
    return np.asarray(batch * seq * per_token, dtype=np.float64)


def context_attention_time_s(
    batch: ArrayLike,
    seq: ArrayLike,
    heads: ArrayLike,
    head_dim: ArrayLike,
    window: ArrayLike,
    bytes_moved: ArrayLike,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    p: ContextAttentionParams,
) -> FloatArray:
    """Latency (s) of one prefill attention call of ``batch`` sequences of ``seq`` tokens,
    ``heads`` query heads of ``head_dim`` over a causal ``window`` (0 = full), moving
    ``bytes_moved`` (:func:`context_attention_bytes`)."""
    items = batch * heads
    eta_c = (
        p.eta_max
        * (seq / (seq + p.seq_half))
        * (items / (items + p.items_half))
        * (head_dim / (head_dim + p.dim_half))
    )
    flops = 4.0 * batch * heads * head_dim * computed_pairs(seq, window, p.tile_tokens)
    compute_s = flops / (eta_c * peak_flops_per_s)
    memory_s = bytes_moved / (p.eta_mem * hbm_bytes_per_s)
    return np.asarray(p.launch_s + np.maximum(compute_s, memory_s), dtype=np.float64)


def generation_attention_flops(
    batch: ArrayLike, kv_len: ArrayLike, heads: ArrayLike, head_dim: ArrayLike
) -> FloatArray:
    """FLOP of one decode attention call: 4 · batch · heads · head_dim · attended tokens."""
    return np.asarray(4.0 * batch * heads * head_dim * kv_len, dtype=np.float64)


def generation_attention_bytes(
    batch: ArrayLike,
    kv_len: ArrayLike,
    heads: ArrayLike,
    kv_heads: ArrayLike,
    head_dim: ArrayLike,
    kv_bytes: ArrayLike,
) -> FloatArray:
    """HBM traffic of one decode attention call: the K and V cache of every attended token,
    plus the 16-bit query read and output written."""
    cache = batch * kv_len * 2.0 * kv_heads * head_dim * kv_bytes
    return np.asarray(cache + batch * heads * head_dim * 4.0, dtype=np.float64)


def generation_attention_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    kv_len: ArrayLike,
    items: ArrayLike,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    p: GenerationAttentionParams,
) -> FloatArray:
    """Latency (s) of one decode attention call; ``items`` = batch · KV heads, ``kv_len`` the
    attended tokens per sequence, ``peak`` the 16-bit dense peak."""
    share = p.eta_mem * (items / (items + p.items_half)) * (kv_len / (kv_len + p.len_half))
    memory_s = bytes_moved / (share * hbm_bytes_per_s)
    compute_s = flops / (p.eta_c * peak_flops_per_s)
    return np.asarray(p.launch_s + np.maximum(compute_s, memory_s), dtype=np.float64)


def mla_generation_flops(batch: ArrayLike, kv_len: ArrayLike, heads: ArrayLike) -> FloatArray:
    """FLOP of one absorbed MLA decode call: per cached token and head, scores over the
    latent and rope dimensions (576) and the weighted sum over the latent (512), 2 FLOP each."""
    per_pair = 2.0 * (MLA_LATENT_DIM + MLA_ROPE_DIM + MLA_LATENT_DIM)
    return np.asarray(batch * heads * kv_len * per_pair, dtype=np.float64)


def mla_generation_bytes(
    batch: ArrayLike, kv_len: ArrayLike, heads: ArrayLike, kv_bytes: ArrayLike
) -> FloatArray:
    """HBM traffic of one absorbed MLA decode call: the latent cache (576 a token) read once,
    the 16-bit query (576 a head) read and output (512 a head) written."""
    cache = batch * kv_len * (MLA_LATENT_DIM + MLA_ROPE_DIM) * kv_bytes
    io = batch * heads * (2.0 * MLA_LATENT_DIM + MLA_ROPE_DIM) * 2.0
    return np.asarray(cache + io, dtype=np.float64)


def context_attention_params_for(
    gpu_id: str,
    architecture: str | None,
    engine: str,
    dtype: str,
    kv_dtype: str,
    fits: dict[tuple[str, str, str, str], ContextAttentionParams],
    architecture_of: dict[str, str | None],
) -> tuple[ContextAttentionParams, str] | None:
    """Prefill attention parameters of any GPU for one engine, math dtype and KV dtype (keys:
    GPU id, engine, dtype, KV dtype), with their origin as in
    :func:`inferencesize.kernels.transferred`; None where no GPU was fitted for that key."""
    return params_for(gpu_id, architecture, (engine, dtype, kv_dtype), fits, architecture_of)


def generation_attention_params_for(
    gpu_id: str,
    architecture: str | None,
    engine: str,
    dtype: str,
    kv_dtype: str,
    fits: dict[tuple[str, str, str, str], GenerationAttentionParams],
    architecture_of: dict[str, str | None],
) -> tuple[GenerationAttentionParams, str] | None:
    """Decode attention parameters of any GPU, as :func:`context_attention_params_for`."""
    return params_for(gpu_id, architecture, (engine, dtype, kv_dtype), fits, architecture_of)
