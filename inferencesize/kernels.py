"""The kernel tier: a few physical parameters per GPU × engine × dtype × kernel family, fitted
on measured kernel latencies (NVIDIA aiconfigurator's per-kernel tables, Apache-2.0).

GEMM ``m × n × k`` (activations ``m × k``, weights ``k × n``, output ``m × n``)::

    t = launch_s + max(2·m·n·k / (eta_c · peak), bytes / (eta_mem · hbm_bw))
    eta_c = eta_max · m/(m + m_half) · n/(n + n_half) · k/(k + k_half)

The compute share rises with each dimension: a tile is padded to its height and width and a
short reduction cannot hide its prologue, so a dimension well below its ``*_half`` (elements)
wastes most of the tensor cores. ``eta_max`` is the share of the datasheet peak a large GEMM
reaches, ``eta_mem`` the share of the datasheet HBM bandwidth a memory-bound one reaches (it may
exceed 1 where a small GEMM runs out of L2), ``launch_s`` the fixed cost of one call. A single
half-saturation on the work ``m·n·k`` does not work: ``(w + w_half)/(eta_max·peak)`` is a
constant added to every call, indistinguishable from the launch time.

Collective of ``message_bytes`` over ``n`` GPUs, fitted per GPU count ``n``: latency plus
inverse bandwidth, for each of two protocols, the library running the faster one::

    t = min(alpha_s + w / eta_link,  alpha_s + bulk_extra_s + w / eta_bulk)
    w = traffic(kind, n) · message_bytes / link_bw

with the ring traffic factors 2(n−1)/n (all-reduce) and (n−1)/n (all-gather, reduce-scatter,
all-to-all) and ``link_bw`` the GPU's per-direction scale-up bandwidth (half the bidirectional
NVLink figure of the datasheet; PCIe where the GPU has no NVLink). NCCL switches from a
low-latency protocol (flags travel with the data, so it reaches a smaller share of the link)
to a bulk one (a longer start, the full share) as messages grow; a single latency and
bandwidth under-predicted 1 – 8 MB messages by up to half. The shares are fitted per GPU count
because the algorithm changes with it too: an 8-GPU all-reduce on an NVSwitch reduces in the
switch and moves less than a ring, so its share of the ring figure may exceed 1 (up to 2).

This module evaluates (numpy only, cheap to import on the planning path); the fits, in log
space with scipy's ``least_squares``, a soft-L1 loss and the bounds below, are in
:mod:`inferencesize.kernel_fit`. Every function takes arrays and datasheet numbers; none reads a
file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
ArrayLike = FloatArray | float

CollectiveKind = Literal["all_reduce", "all_gather", "reduce_scatter", "alltoall"]

#: per GEMM dtype of the tables: (datasheet precision of the math, activation bytes/element,
#: weight bytes/element, output bytes/element). NVFP4 carries one FP8 scale per 16 values;
#: weight-only int4/int8 run 16-bit math on dequantised weights; SmoothQuant is int8 × int8.
GEMM_DTYPES: dict[str, tuple[str, float, float, float]] = {
    "bfloat16": ("bf16", 2.0, 2.0, 2.0),
    "float16": ("fp16", 2.0, 2.0, 2.0),
    "fp8": ("fp8", 1.0, 1.0, 2.0),
    "fp8_block": ("fp8", 1.0, 1.0, 2.0),
    "nvfp4": ("fp4", 0.5625, 0.5625, 2.0),
    "int8_wo": ("bf16", 2.0, 1.0, 2.0),
    "int4_wo": ("bf16", 2.0, 0.5, 2.0),
    "sq": ("int8", 1.0, 1.0, 2.0),
}

#: bytes per element of the collectives' dtypes
ELEMENT_BYTES = {"half": 2.0, "float16": 2.0, "bfloat16": 2.0, "int8": 1.0, "float32": 4.0}


@dataclass(frozen=True)
class KernelParams:
    """Base of every family's fitted parameters: positive floats, in field order the fits'
    vector."""


@dataclass(frozen=True)
class GemmParams(KernelParams):
    """Fitted GEMM parameters (shares of the datasheet, elements, seconds)."""

    eta_max: float
    m_half: float
    n_half: float
    k_half: float
    eta_mem: float
    launch_s: float


@dataclass(frozen=True)
class CollectiveParams(KernelParams):
    """Fitted parameters of one collective at one GPU count: the low-latency protocol's
    latency (s) and share of the ring's link bandwidth (above 1 where the algorithm moves less
    than a ring); the bulk protocol's extra latency (s) and share."""

    alpha_s: float
    eta_link: float
    bulk_extra_s: float
    eta_bulk: float


P = TypeVar("P", bound=KernelParams)
K = TypeVar("K", bound=tuple[object, ...])


def as_vector(p: KernelParams) -> FloatArray:
    """The parameters in field order (the fits' vector)."""
    return np.array([getattr(p, f.name) for f in fields(p)], dtype=np.float64)


def gemm_bytes(m: ArrayLike, n: ArrayLike, k: ArrayLike, dtype: str) -> FloatArray:
    """HBM traffic of one GEMM read and written once: activations, weights, output (bytes)."""
    _, act, weight, out = GEMM_DTYPES[dtype]
    return np.asarray(m * k * act + k * n * weight + m * n * out, dtype=np.float64)


def gemm_time_s(
    m: ArrayLike,
    n: ArrayLike,
    k: ArrayLike,
    bytes_moved: ArrayLike,
    peak_flops_per_s: ArrayLike,
    hbm_bytes_per_s: ArrayLike,
    p: GemmParams,
) -> FloatArray:
    """Latency of one GEMM call (s) under :class:`GemmParams` ``p``."""
    eta_c = p.eta_max * (m / (m + p.m_half)) * (n / (n + p.n_half)) * (k / (k + p.k_half))
    compute_s = 2.0 * m * n * k / (eta_c * peak_flops_per_s)
    memory_s = bytes_moved / (p.eta_mem * hbm_bytes_per_s)
    return np.asarray(p.launch_s + np.maximum(compute_s, memory_s), dtype=np.float64)


def traffic_factor(kind: CollectiveKind, n_gpus: ArrayLike) -> FloatArray:
    """Bytes each GPU sends per byte of message in a ring: 2(n−1)/n for all-reduce,
    (n−1)/n for all-gather, reduce-scatter and all-to-all."""
    share = (np.asarray(n_gpus, dtype=np.float64) - 1.0) / np.asarray(n_gpus, dtype=np.float64)
    return 2.0 * share if kind == "all_reduce" else share


def collective_time_s(
    kind: CollectiveKind,
    n_gpus: ArrayLike,
    message_bytes: ArrayLike,
    link_bytes_per_s: ArrayLike,
    p: CollectiveParams,
) -> FloatArray:
    """Latency of one collective (s) under :class:`CollectiveParams` ``p``."""
    ideal_s = traffic_factor(kind, n_gpus) * message_bytes / link_bytes_per_s
    low_latency_s = p.alpha_s + ideal_s / p.eta_link
    bulk_s = p.alpha_s + p.bulk_extra_s + ideal_s / p.eta_bulk
    return np.asarray(np.minimum(low_latency_s, bulk_s), dtype=np.float64)


def relative_errors(predicted: FloatArray, measured: FloatArray) -> FloatArray:
    """|predicted / measured − 1| per row."""
    return np.asarray(np.abs(predicted / measured - 1.0), dtype=np.float64)


def error_summary(errors: FloatArray) -> tuple[float, float]:
    """Median and 90th percentile of |relative error|."""
    return float(np.median(errors)), float(np.percentile(errors, 90))


def average(params: Sequence[P]) -> P:
    """Average of several fits of one kind, taken in log space (shares, sizes and latencies
    are positive ratios); a parameter at zero in any fit stays near zero."""
    values = np.array([as_vector(p) for p in params])
    mean = np.exp(np.mean(np.log(np.maximum(values, 1e-15)), axis=0))
    return type(params[0])(*(float(v) for v in mean))


def transferred(
    gpu_id: str,
    architecture: str | None,
    fits: dict[str, P],
    architecture_of: dict[str, str | None],
) -> tuple[P, str]:
    """The parameters a GPU runs with, and where they come from.

    Its own fit where it has one (``"measured"``); else the log-space average of the fits of
    the GPUs of its architecture (``"same architecture"``); else of all fits (``"all GPUs"``).
    The parameters are shares of the datasheet, sizes and latencies, so a GPU that takes
    another's fit is scaled by its own datasheet peak and bandwidth when they are applied.
    """
    if gpu_id in fits:
        return fits[gpu_id], "measured"
    same = [p for g, p in fits.items() if architecture and architecture_of.get(g) == architecture]
    if same:
        return average(same), "same architecture"
    if not fits:
        raise ValueError("no fitted GPU to take parameters from")
    return average(list(fits.values())), "all GPUs"


def params_for(
    gpu_id: str,
    architecture: str | None,
    key: tuple[object, ...],
    fits: Mapping[K, P],
    architecture_of: dict[str, str | None],
) -> tuple[P, str] | None:
    """Parameters of any GPU for one kernel key (``fits`` keyed by GPU id followed by ``key``),
    with their origin as in :func:`transferred`; None where no GPU was fitted for ``key``."""
    same = {str(g): p for (g, *rest), p in fits.items() if tuple(rest) == key}
    return transferred(gpu_id, architecture, same, architecture_of) if same else None


def gemm_params_for(
    gpu_id: str,
    architecture: str | None,
    engine: str,
    dtype: str,
    fits: dict[tuple[str, str, str], GemmParams],
    architecture_of: dict[str, str | None],
) -> tuple[GemmParams, str] | None:
    """GEMM parameters of any GPU for one engine and dtype (keys: GPU id, engine, dtype), with
    their origin as in :func:`transferred`; None where no GPU was fitted for that pair."""
    return params_for(gpu_id, architecture, (engine, dtype), fits, architecture_of)


def collective_params_for(
    gpu_id: str,
    architecture: str | None,
    implementation: str,
    kind: str,
    n_gpus: int,
    fits: dict[tuple[str, str, str, int], CollectiveParams],
    architecture_of: dict[str, str | None],
) -> tuple[CollectiveParams, str] | None:
    """Collective parameters of any GPU (keys: GPU id, implementation, kind, GPU count), with
    their origin as in :func:`transferred`; None where nothing was fitted for that key. The
    caller applies them to the GPU's own link bandwidth."""
    return params_for(gpu_id, architecture, (implementation, kind, n_gpus), fits, architecture_of)
