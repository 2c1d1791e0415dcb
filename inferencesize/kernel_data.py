"""The shipped kernel tier (``data/kernels/fit.json``) and the architectures of its GPUs."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from inferencesize.catalog import builtin_root, load_catalog
from inferencesize.io_kernels import KernelFit, read_kernel_fit
from inferencesize.kernel_step import KernelHardware, kernel_hardware


@dataclass(frozen=True)
class ShippedKernels:
    fit: KernelFit
    architecture_of: dict[str, str | None]


@functools.cache
def shipped_kernels() -> ShippedKernels:
    fit = read_kernel_fit(builtin_root() / "data" / "kernels" / "fit.json")
    gpus = load_catalog().gpus
    ids = {g for g, *_ in fit.gemm} | {g for g, *_ in fit.collectives}
    return ShippedKernels(fit, {g: gpus[g].architecture if g in gpus else None for g in ids})


def hardware_for(
    gpu_id: str, architecture: str | None, engine: str, precision: str, tp: int
) -> KernelHardware | None:
    k = shipped_kernels()
    return kernel_hardware(
        k.fit.gemm, k.fit.collectives, k.architecture_of, gpu_id, architecture, engine,
        precision, tp,
    )
