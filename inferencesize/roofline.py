"""Hardware math: roofline time of an operator with efficiency parameters.

An operator that does ``flops`` of math and moves ``bytes`` through HBM takes
max(flops / (peak · compute_eff(M)), bytes / (bandwidth · memory_eff)). GEMM efficiency
rises with the number of rows M (tokens) as M / (M + m_half): small-M GEMMs cannot fill the
tensor cores. Works elementwise on floats or numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

Num = TypeVar("Num", float, npt.NDArray[np.float64])


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of peak and fixed overheads; fitted data, never constants in code."""

    compute: float  # large-GEMM fraction of dense peak (precision's tensor units)
    memory: float  # fraction of HBM bandwidth streaming weights / KV
    attention: float  # prefill attention fraction of 16-bit dense peak
    comm: float  # fraction of link bandwidth reached by collectives
    gemm_m_half: float  # tokens at which a GEMM reaches half its large-M efficiency
    step_overhead_s: float  # fixed cost per forward step (scheduling, launches)
    layer_overhead_s: float  # per layer per step (kernel launches and syncs not hidden)
    comm_latency_s: float  # alpha of one collective on NVLink / PCIe
    # Closed-loop clients of one length come back as a cohort (serving.py): the in-step share
    # of arrivals, at most 1 in effect (above 1 it also scales the cohort's wait: its prompt
    # steps carry more than the bare batched prefill), ...
    prefill_sync: float = 0.5
    # ... the prompt tokens over which a cohort thins out: (B − 1) others come back as
    # (B − 1) / (1 + (B − 1) ISL / cohort_tokens) in step ...
    cohort_tokens: float = 65536.0
    # ... and the spread of their re-sends: only t / (t + this) of them are in step with a
    # prompt step of length t (a short prompt step misses most of them). 0 = all in step.
    arrival_spread_s: float = 0.0
    # Decode attention streams the KV cache at no fewer than this many bytes per element's worth
    # of time: kernels that dequantise an 8-bit cache to 16-bit run at the 16-bit element rate
    # (the 8-bit cache then halves the memory held, not the attention time). 0 = stored bytes.
    kv_read_min_bytes: float = 0.0
    # Decode attention reaches the memory efficiency only with enough parallel work: a KV read
    # of n (sequence, KV head) pairs per GPU streams at memory · n / (n + this). 0 = always.
    kv_items_half: float = 0.0
    # Host-side cost per sequence in a step (sampling, detokenising, streaming the token out),
    # paid by every decode and every prompt the step holds. 0 = none.
    seq_overhead_s: float = 0.0
    # Request hand-off of a multi-GPU instance: the engine's orchestrator passes each new
    # request to the worker ranks and its first token back (MPI between processes), once per
    # request on instances of more than one GPU (``Deployment.handoff_s``). Added to TTFT; it
    # holds no engine time, so it costs a closed-loop client throughput only through its
    # longer cycle. 0 = none.
    handoff_s: float = 0.0
    # Share of a measured kernel's launch cost the steps pay (kernel tier only): CUDA graphs
    # replay a step's kernels without launching each from the host. 1 = as measured.
    launch_share: float = 1.0


def gemm_efficiency(eff: Efficiency, tokens: Num) -> Num:
    """Compute efficiency of a GEMM with ``tokens`` rows."""
    return eff.compute * tokens / (tokens + eff.gemm_m_half)


def op_time(
    flops: Num,
    bytes_moved: Num,
    peak_flops: float,
    bandwidth: float,
    compute_eff: Num | float,
    memory_eff: Num | float,
) -> Num:
    """Roofline time of one operator class."""
    return np.maximum(  # type: ignore[no-any-return]
        flops / (peak_flops * compute_eff), bytes_moved / (bandwidth * memory_eff)
    )
