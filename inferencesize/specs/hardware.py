"""GPU and system (server / rack) catalog schemas."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from inferencesize.specs.common import (
    Bytes,
    BytesPerSecond,
    BytesPerSecondOrZero,
    Degree,
    FlopsPerSecond,
    Id,
    Int,
    PositiveFloat,
    Source,
    Spec,
    Watts,
)

ComputePrecision = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
#: Compute architecture (the vendor's name for the die generation): GPUs of one architecture
#: share tensor units, memory controllers and kernels, so an efficiency set fitted on one of
#: them applies to the others (``specs.efficiency.resolve_values``).
Architecture = Literal[
    "volta",
    "turing",
    "ampere",
    "ada",
    "hopper",
    "blackwell",
    "cdna2",
    "cdna3",
    "cdna4",
    "gaudi",
    "tpu-v5",
    "tpu-v6",
]


class DenseFlops(Spec):
    """Dense (not 2:4-sparse) peak tensor throughput per precision, FLOP/s (OP/s for int8)."""

    fp32: FlopsPerSecond | None = None
    tf32: FlopsPerSecond | None = None
    bf16: FlopsPerSecond | None = None
    fp16: FlopsPerSecond | None = None
    fp8: FlopsPerSecond | None = None
    int8: FlopsPerSecond | None = None
    fp4: FlopsPerSecond | None = None

    def get(self, precision: str) -> float | None:
        value: float | None = getattr(self, precision, None)
        return value


class GpuSpec(Spec):
    """One accelerator SKU. Memory is the capacity software can use (GiB-based), bandwidth decimal."""

    id: Id
    name: str
    vendor: str
    aliases: list[str] = Field(default_factory=list)
    form_factor: str | None = None
    memory_bytes: Bytes = Field(alias="memory", description="capacity usable by software")
    memory_label: str | None = Field(
        default=None, description="the vendor's advertised label, e.g. '80GB' (not a conversion)"
    )
    hbm_bandwidth_bytes_per_s: BytesPerSecond = Field(alias="hbm_bandwidth")
    dense_flops: DenseFlops
    scale_up_bandwidth_bytes_per_s: BytesPerSecondOrZero = Field(
        alias="scale_up_bandwidth",
        description="NVLink / Infinity Fabric / ICI per GPU, bidirectional; 0 = PCIe only",
    )
    pcie_gen: Annotated[Int, Field(ge=3, le=7)] | None = None
    tdp_watts: Watts | None = Field(
        default=None, alias="tdp", description="board power; None = not published"
    )
    price_usd_per_gpu_hour: PositiveFloat | None = None
    price_source: str | None = None
    launch_year: Annotated[Int, Field(ge=2010, le=2035)] | None = None
    architecture: Architecture | None = Field(
        default=None,
        description="compute architecture (the vendor's die generation); a GPU no efficiency"
        " set measured takes its architecture's factors; None: an architecture never measured",
    )
    efficiency_like: Id | None = Field(
        default=None,
        description="GPU whose fitted efficiencies an efficiency set applies when it has none"
        " of this one: the same compute die, SM count and power class (H200 SXM: H100 SXM)",
    )
    source: Source

    def native_precisions(self) -> list[str]:
        """Weight precisions the GPU runs on its own tensor units: 16-bit always (bf16 where
        it has bf16 units, else fp16), then fp8 and fp4 where it has them."""
        out = ["bf16" if self.dense_flops.bf16 is not None else "fp16"]
        return out + [p for p in ("fp8", "fp4") if self.dense_flops.get(p) is not None]

    @model_validator(mode="after")
    def _some_16bit_or_8bit_peak(self) -> GpuSpec:
        if all(self.dense_flops.get(p) is None for p in ("bf16", "fp16", "fp8", "int8")):
            raise ValueError("dense_flops: needs at least one of bf16, fp16, fp8, int8")
        if self.price_usd_per_gpu_hour is not None and not self.price_source:
            raise ValueError(
                "price_source: price_usd_per_gpu_hour needs price_source (where and when)"
            )
        return self


class SystemSpec(Spec):
    """A server or rack: how many GPUs of which kind, and how they are wired."""

    id: Id
    name: str
    aliases: list[str] = Field(default_factory=list)
    gpu: Id
    gpus_per_node: Degree
    nvlink_domain_size: Degree = Field(
        description="GPUs in one scale-up domain (8 for HGX, 72 for NVL72, 1 for PCIe-only)"
    )
    intra_node_bandwidth_bytes_per_s: BytesPerSecondOrZero = Field(
        alias="intra_node_bandwidth", description="scale-up per GPU, bidirectional"
    )
    inter_node_bandwidth_bytes_per_s: BytesPerSecondOrZero = Field(
        alias="inter_node_bandwidth", description="scale-out NIC per GPU, one direction"
    )
    power_watts: Watts | None = Field(default=None, alias="power")
    price_usd: PositiveFloat | None = Field(
        default=None, description="purchase price of one node (server or rack unit)"
    )
    price_usd_per_gpu_hour: PositiveFloat | None = None
    price_source: str | None = None
    source: Source

    @model_validator(mode="after")
    def _consistent(self) -> SystemSpec:
        if (
            self.price_usd is not None or self.price_usd_per_gpu_hour is not None
        ) and not self.price_source:
            raise ValueError("price_source: a price needs price_source (where and when)")
        return self
