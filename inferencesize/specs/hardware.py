"""GPU and system (server / rack) catalog schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, get_args

from inferencesize.specs.common import Field, Spec, model_validator

if TYPE_CHECKING:  # annotation types: read by the schema (specs.schema), never imported here
    from inferencesize.specs.types import (
        Bytes,
        BytesPerSecond,
        BytesPerSecondOrZero,
        Degree,
        FlopsPerSecond,
        Id,
        Int,
        MigProfileName,
        PositiveFloat,
        PriceDate,
        Source,
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

#: Floors of the figures (SI units), a thousandth of the slowest real part or less: a figure
#: far below them (``hbm_bandwidth: 1e-300 TB/s``) would make step times overflow.
MIN_HBM_BYTES_PER_S = 1e9  # 1 GB/s: a tenth of one DDR4 channel
MIN_LINK_BYTES_PER_S = 1e8  # 0.1 GB/s: 1 Gb/s Ethernet (a link may also be 0: none)
MIN_FLOP_PER_S = 1e9  # 1 GFLOPS


def _in_range(name: str, value: float | None, kind: str) -> None:
    """ValueError naming ``name`` and its plausible range when ``value`` is below its floor
    (``kind``: "hbm", "link" or "flops"; the ceilings are checked with the field)."""
    floor, scale, unit, top = {
        "hbm": (MIN_HBM_BYTES_PER_S, 1e9, "GB/s", "1 PB/s"),
        "link": (MIN_LINK_BYTES_PER_S, 1e9, "GB/s", "1 PB/s"),
        "flops": (MIN_FLOP_PER_S, 1e9, "GFLOPS", "1e21 FLOPS"),
    }[kind]
    if value is not None and 0 < value < floor:
        none = "0 (no such link) or " if kind == "link" else ""
        raise ValueError(
            f"{name}: must be {none}from {floor / scale:g} {unit} to {top}"
            f" (got {value / scale:.3g} {unit})"
        )


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

    @model_validator(mode="after")
    def _plausible(self) -> DenseFlops:
        for precision in get_args(ComputePrecision):
            _in_range(precision, self.get(precision), "flops")
        return self


class MigProfile(Spec):
    """One MIG GPU-instance profile: its compute slices (GPCs, ``g`` in "2g.20gb"), memory
    slices (each a share of the HBM capacity, bandwidth and L2) and how many fit on one GPU."""

    compute_slices: Degree
    memory_slices: Degree
    instances: Degree = Field(description="the most of this profile one GPU holds")


class MigProfiles(Spec):
    """Multi-Instance GPU partitions of a GPU: the vendor's profile table, by profile name."""

    compute_slices: Degree = Field(description="compute slices of the whole GPU (7 on GA100/GH100)")
    memory_slices: Degree = Field(description="memory slices of the whole GPU (8 on GA100/GH100)")
    profiles: dict[MigProfileName, MigProfile] = Field(min_length=1)
    source: Source

    @model_validator(mode="after")
    def _fit(self) -> MigProfiles:
        for name, p in self.profiles.items():
            if (
                p.compute_slices * p.instances > self.compute_slices
                or p.memory_slices * p.instances > self.memory_slices
            ):
                raise ValueError(
                    f"profiles: {p.instances} x {name} need more slices than the GPU has"
                    f" ({self.compute_slices} compute, {self.memory_slices} memory)"
                )
        return self


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
    mig_profiles: MigProfiles | None = Field(
        default=None, description="MIG partitions (None: the GPU has no MIG)"
    )
    source: Source

    def native_precisions(self) -> list[str]:
        """Weight precisions the GPU runs on its own tensor units: 16-bit always (bf16 where
        it has bf16 units, else fp16), then fp8 and fp4 where it has them."""
        out = ["bf16" if self.dense_flops.bf16 is not None else "fp16"]
        return out + [p for p in ("fp8", "fp4") if self.dense_flops.get(p) is not None]

    @model_validator(mode="after")
    def _plausible(self) -> GpuSpec:
        _in_range("hbm_bandwidth", self.hbm_bandwidth_bytes_per_s, "hbm")
        _in_range("scale_up_bandwidth", self.scale_up_bandwidth_bytes_per_s, "link")
        return self

    @model_validator(mode="after")
    def _some_16bit_or_8bit_peak(self) -> GpuSpec:
        if all(self.dense_flops.get(p) is None for p in ("bf16", "fp16", "fp8", "int8")):
            raise ValueError("dense_flops: needs at least one of bf16, fp16, fp8, int8")
        if self.price_usd_per_gpu_hour is not None and not self.price_source:
            raise ValueError(
                "price_source: price_usd_per_gpu_hour needs price_source (where and when)"
            )
        return self


#: What a buyer pays for: a server, a cloud instance, a rack, one tray of a rack, a pod slice.
UnitKind = Literal["server", "instance", "rack", "tray", "pod"]


class SystemSpec(Spec):
    """A server or rack: how many GPUs of which kind, how they are wired, and how it is sold.

    A *node* (``gpus_per_node``) is what one instance is packed onto; a *unit*
    (``unit``, ``gpus_per_unit``) is what is bought or rented: an 8-GPU server is both, a GB200
    NVL72 is bought as one 72-GPU rack of 18 4-GPU trays. ``power`` is the wall power of one
    node at its maximum (GPUs, CPUs, NICs, fans; a tray's share of a rack's switches and power
    shelves); ``price_usd`` the purchase price of one unit; ``price_usd_per_gpu_hour`` the rent
    of one GPU of a unit (a unit rents as ``gpus_per_unit`` of them). A price missing from the
    catalog is stated in ``not_published``."""

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
    power_watts: Watts | None = Field(
        default=None, alias="power", description="maximum wall power of one node"
    )
    unit: UnitKind = Field(default="server", description="what is bought or rented")
    gpus_per_unit: Degree | None = Field(
        default=None, description="GPUs in one unit bought or rented (None: gpus_per_node)"
    )
    price_usd: PositiveFloat | None = Field(
        default=None, description="purchase price of one unit (server, rack)"
    )
    price_usd_per_gpu_hour: PositiveFloat | None = Field(
        default=None, description="rent per GPU-hour; a unit rents whole"
    )
    price_date: PriceDate | None = None
    price_source: str | None = None
    not_published: str | None = Field(
        default=None,
        description="which figures (purchase price, rent, power) no source publishes, and why",
    )
    source: Source

    @property
    def unit_gpus(self) -> int:
        """GPUs in one unit bought or rented."""
        return self.gpus_per_unit if self.gpus_per_unit is not None else self.gpus_per_node

    @model_validator(mode="after")
    def _consistent(self) -> SystemSpec:
        _in_range("intra_node_bandwidth", self.intra_node_bandwidth_bytes_per_s, "link")
        _in_range("inter_node_bandwidth", self.inter_node_bandwidth_bytes_per_s, "link")
        priced = self.price_usd is not None or self.price_usd_per_gpu_hour is not None
        if priced and not self.price_source:
            raise ValueError("price_source: a price needs price_source (where and when)")
        if self.unit_gpus % self.gpus_per_node:
            raise ValueError(
                f"gpus_per_unit: must be a whole number of nodes of {self.gpus_per_node} GPUs"
                f" (got {self.unit_gpus})"
            )
        return self
