"""Model concurrency: several instances of one model on one GPU, as MIG slices or as processes
sharing the whole GPU, and what each instance gets of it.

**MIG** (Multi-Instance GPU; A100, H100, H200): the GPU is cut into GPU instances, each with
its own streaming multiprocessors, memory controllers, L2 and HBM. NVIDIA's MIG user guide
("Supported MIG Profiles", https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
supported-mig-profiles.html) gives each profile's fraction of SMs (``g`` compute slices of 7)
and fraction of memory (memory slices of 8), and how many of it one GPU holds: on an H100
80GB a 2g.20gb slice has 2/7 of the SMs and 2/8 of the HBM, three to a GPU. A slice therefore
sees ``g / 7`` of the dense tensor peak and ``m / 8`` of the HBM capacity and bandwidth (each
memory slice is a share of the memory controllers); it has no NVLink (an instance on a slice
runs at TP 1, PP 1). The profiles are catalog facts (``GpuSpec.mig_profiles``).

**Shared GPU** (no MIG: k engine processes under CUDA MPS, each capped to 1/k of the SMs with
``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``): each process holds its own weights, runtime reserve
and KV cache in 1/k of the memory; compute and HBM bandwidth are shared, and a planner sizing
for the peak, when every instance is busy, gives each 1/k of both.

What sharing buys, and what it does not. k slices of 1/k of a GPU carry k copies of the
weights and read them k times per decode step, where one instance with k times the batch reads
them once: in the bandwidth-bound regime the aggregate throughput is *below* one whole-GPU
instance's, and a MIG GPU also loses the SMs and memory no profile covers (7 × 1g.10gb use
7/8 of an H100's HBM). Two effects go the other way and are the only ones modelled:

* small GEMMs fill a small slice: a GEMM reaches half its large-M efficiency at
  ``gemm_m_half`` rows because a few tiles cannot occupy every SM; with ``g / 7`` of the SMs
  the same tiles fill the slice, so the half-efficiency row count scales with the SM share;
* the fixed costs of a step (scheduling, kernel launches, per-sequence host work) are paid by
  each instance's own host process in parallel, not serially by one.

The step overheads themselves are kept (each instance pays them in full); nothing else is
credited. Isolation (one tenant's burst does not slow another's slice) is the operational
reason to use MIG and is not a throughput gain. The planner searches these only where the model
is small for the slice (:func:`shares_for`), and counts GPUs whole: N instances at k per GPU
take ceil(N / k) GPUs (:func:`whole_gpus`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from inferencesize.roofline import Efficiency
from inferencesize.specs import GpuSpec

#: Instances per GPU tried for a shared (non-MIG) GPU.
SHARED_INSTANCES = (2, 3, 4)
#: A model is small for a slice when its weights take at most this share of the slice's memory
#: (the rest holds the runtime reserve, activations and a useful KV cache); larger models are
#: not searched on slices.
SMALL_MODEL_SHARE = 0.5


@dataclass(frozen=True)
class Share:
    """What one instance gets of a GPU it shares with ``per_gpu - 1`` others."""

    kind: Literal["mig", "shared"]
    #: the MIG profile ("2g.20gb"), or "1/k" for a shared GPU
    name: str
    per_gpu: int
    #: fraction of the GPU's SMs (its dense tensor peak)
    compute: float
    #: fraction of the GPU's HBM capacity and bandwidth
    memory: float

    def label(self) -> str:
        """How a plan names it: "mig 2g.20gb ×3/GPU" or "3 per GPU"."""
        if self.kind == "mig":
            return f"mig {self.name} ×{self.per_gpu}/GPU"
        return f"{self.per_gpu} per GPU"


def mig_share(gpu: GpuSpec, profile: str) -> Share:
    """The share of ``gpu`` one MIG ``profile`` slice gets (``KeyError``: no such profile)."""
    if gpu.mig_profiles is None:
        raise KeyError(f"{gpu.id} has no MIG profiles")
    table = gpu.mig_profiles
    p = table.profiles[profile]
    return Share(
        "mig",
        profile,
        p.instances,
        p.compute_slices / table.compute_slices,
        p.memory_slices / table.memory_slices,
    )


def gpu_share(k: int) -> Share:
    """One of ``k`` processes sharing a whole GPU: 1/k of its SMs, bandwidth and memory."""
    if k < 1:
        raise ValueError(f"instances per GPU must be >= 1 (got {k})")
    return Share("shared", f"1/{k}", k, 1.0 / k, 1.0 / k)


def shared_gpu(gpu: GpuSpec, share: Share) -> GpuSpec:
    """The GPU one instance sees: ``share.compute`` of each dense peak, ``share.memory`` of
    the HBM capacity and bandwidth, no scale-up link. Same id (it runs the same kernels, so
    the same fitted efficiencies apply)."""
    peaks = gpu.dense_flops.model_dump()
    flops = gpu.dense_flops.model_copy(
        update={k: v * share.compute for k, v in peaks.items() if v is not None}
    )
    return gpu.model_copy(
        update={
            "memory_bytes": gpu.memory_bytes * share.memory,
            "hbm_bandwidth_bytes_per_s": gpu.hbm_bandwidth_bytes_per_s * share.memory,
            "dense_flops": flops,
            "scale_up_bandwidth_bytes_per_s": 0.0,
            "mig_profiles": None,
        }
    )


def shared_efficiency(eff: Efficiency, share: Share) -> Efficiency:
    """The efficiencies on a share: a GEMM reaches half its large-M efficiency at
    ``share.compute`` of the rows (the same tiles fill fewer SMs); every other factor and
    overhead unchanged."""
    return replace(eff, gemm_m_half=eff.gemm_m_half * share.compute)


def shares_for(gpu: GpuSpec, weights_bytes: float) -> list[Share]:
    """The shares a model with ``weights_bytes`` of weights per instance is searched on: MIG
    profiles that put more than one slice on a GPU, and 2-4 processes on a whole GPU, where
    the weights take at most :data:`SMALL_MODEL_SHARE` of the instance's memory. A big model
    gets none."""
    out = []
    if gpu.mig_profiles is not None:
        for name, p in gpu.mig_profiles.profiles.items():
            if p.instances > 1:
                out.append(mig_share(gpu, name))
    out += [gpu_share(k) for k in SHARED_INSTANCES]
    return [s for s in out if weights_bytes <= SMALL_MODEL_SHARE * s.memory * gpu.memory_bytes]


def whole_gpus(instances: int, share: Share | None, gpus_per_instance: int = 1) -> int:
    """GPUs ``instances`` occupy: ``instances × gpus_per_instance`` without a share, else
    ceil(instances / per_gpu) (a GPU holding fewer slices than it could is still a GPU)."""
    if share is None:
        return instances * gpus_per_instance
    return math.ceil(instances / share.per_gpu)
