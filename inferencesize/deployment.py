"""Resolve catalog specs into the numbers the step math needs (a ``Deployment``).

Which link a collective uses: TP and PP inside the scale-up (NVLink) domain use half the
bidirectional scale-up bandwidth per direction; PCIe-only parts use the PCIe host link;
anything spanning domains uses the per-GPU NIC bandwidth (one direction) of the system, a TP
all-reduce across NVLink domains in two levels (``two_level_allreduce_link``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from inferencesize.comm import PCIE_BYTES_PER_S, Link
from inferencesize.latency import Deployment
from inferencesize.parallelism import Parallelism, invalid_reason
from inferencesize.roofline import Efficiency
from inferencesize.specs import EfficiencySet, GpuSpec, SystemSpec
from inferencesize.specs.efficiency import Resolution, measured_points, resolve_values
from inferencesize.techniques import NO_TECHNIQUES, Techniques
from inferencesize.transformer import ModelCosts
from inferencesize.units import COMPUTE_PRECISION, bytes_per_element

#: Latency of one collective across nodes (NIC + switch hops + NCCL protocol), seconds.
NETWORK_LATENCY_S = 25e-6
#: A PCIe collective goes through host bridges: this many times the NVLink alpha.
PCIE_LATENCY_FACTOR = 2.0


def default_kv_precision(precision: str) -> str:
    """FP8 and FP4 engines keep an FP8 KV cache; everything else a 16-bit one."""
    if precision in ("fp8", "fp4"):
        return "fp8"
    return "bf16" if precision in ("bf16", "int4", "int8", "fp32") else precision


def scale_up_domain(gpu: GpuSpec, system: SystemSpec | None) -> int:
    """GPUs that share the scale-up link: the system's, else guessed from the form factor."""
    if system is not None:
        return system.nvlink_domain_size
    if gpu.scale_up_bandwidth_bytes_per_s <= 0:
        return 1
    return 2 if (gpu.form_factor or "").upper().startswith("PCIE") else 8


#: GPUs per server assumed for a bare GPU id (no system given): HGX/DGX-style 8-GPU servers.
BARE_GPU_NODE = 8


def _link_for(gpus: int, domain: int, node: int, nvlink: Link, pcie: Link, network: Link) -> Link:
    """NVLink inside the scale-up domain, PCIe inside the server, the NIC beyond it."""
    if gpus <= domain:
        return nvlink if domain > 1 else pcie
    if gpus <= max(node, domain):
        return pcie
    return network


def two_level_allreduce_link(n: int, domain: int, nvlink: Link, network: Link) -> Link:
    """The route of an all-reduce over ``n`` GPUs that spans NVLink domains of ``domain``
    GPUs: in two levels (NCCL's multi-rail hierarchy), a reduce-scatter inside each domain
    over NVLink, an all-reduce between the m domains of each GPU's 1/g slice over its own NIC
    (all g NICs of a domain at once), an all-gather inside. Time per byte of message:
    2(m − 1)/m / (g · B_nic) + 2(g − 1)/g / B_nvlink, written as the per-GPU bandwidth of the
    flat ring that takes as long (``comm.allreduce_time``: 2(n − 1)/n / B); the alpha stays
    the network's."""
    g = max(min(domain, n), 1)
    m = -(-n // g)
    if m <= 1 or g <= 1:
        return network
    per_byte = 2.0 * (m - 1) / m / (g * network.bytes_per_s)
    per_byte += 2.0 * (g - 1) / g / nvlink.bytes_per_s
    return Link("network", 2.0 * (n - 1) / n / per_byte, network.latency_s)


@dataclass(frozen=True)
class Links:
    tp: Link
    pp: Link
    ep: Link | None = None  # attention DP: the expert all-to-all spans dp · tp GPUs


def links(gpu: GpuSpec, system: SystemSpec | None, par: Parallelism, alpha_s: float) -> Links:
    domain = scale_up_domain(gpu, system)
    pcie = Link(
        "pcie", PCIE_BYTES_PER_S.get(gpu.pcie_gen or 4, 25.6e9), alpha_s * PCIE_LATENCY_FACTOR
    )
    scale_up_bw = (
        system.intra_node_bandwidth_bytes_per_s if system else gpu.scale_up_bandwidth_bytes_per_s
    )
    nvlink = Link("nvlink", scale_up_bw / 2, alpha_s) if scale_up_bw > 0 else pcie
    network_bw = system.inter_node_bandwidth_bytes_per_s if system else 0.0
    network = Link("network", network_bw or 12.5e9, NETWORK_LATENCY_S)
    node = system.gpus_per_node if system else BARE_GPU_NODE
    tp_link = _link_for(par.tp, domain, node, nvlink, pcie, network)
    if tp_link is network and nvlink.name == "nvlink":
        tp_link = two_level_allreduce_link(par.tp, domain, nvlink, network)
    pp_link = _link_for(par.gpus, domain, node, nvlink, pcie, network)
    if par.dp > 1:
        ep_link = _link_for(par.tp * par.dp, domain, node, nvlink, pcie, network)
        return Links(tp_link, pp_link, ep_link)
    return Links(tp_link, pp_link)


def resolve_efficiency(eset: EfficiencySet, gpu: GpuSpec, precision: str) -> tuple[Efficiency, str]:
    """Efficiency for a GPU × precision and where it came from (``resolve_values``: the GPU's
    entries, its ``efficiency_like`` GPU's, its architecture's, else the set's defaults)."""
    r = efficiency_resolution(eset, gpu, precision)
    return Efficiency(**{k: v for k, v in r.values.items() if v is not None}), r.origin


def choose_efficiency(
    eset: EfficiencySet, others: Sequence[EfficiencySet], gpu: GpuSpec, precision: str
) -> tuple[EfficiencySet, Resolution]:
    """The set a GPU × precision is predicted with, and its resolution: ``eset`` where it is
    calibrated there or none of ``others`` is; else the one of ``others`` calibrated there on
    the most measurements (a tie: the first). ``others`` empty: always ``eset``."""
    own = efficiency_resolution(eset, gpu, precision)
    if own.trust == "calibrated" or not others:
        return eset, own
    names = {gpu.id, *gpu.aliases}
    best: tuple[int, EfficiencySet, Resolution] | None = None
    for s in others:
        r = efficiency_resolution(s, gpu, precision)
        points = measured_points(s, names, precision)
        if r.trust == "calibrated" and (best is None or points > best[0]):
            best = (points, s, r)
    return (eset, own) if best is None else (best[1], best[2])


def efficiency_resolution(eset: EfficiencySet, gpu: GpuSpec, precision: str) -> Resolution:
    """The values, origin and trust label of a GPU × precision in ``eset``."""
    return resolve_values(
        eset, {gpu.id, *gpu.aliases}, gpu.id, precision, gpu.efficiency_like, gpu.architecture
    )


def peak_flops(gpu: GpuSpec, precision: str) -> float | None:
    """Dense peak of the tensor units a precision computes on (weight-only int4 -> fp16)."""
    unit = COMPUTE_PRECISION[precision]
    value = gpu.dense_flops.get(unit)
    if value is None and unit in ("bf16", "fp16"):
        value = gpu.dense_flops.get("fp16" if unit == "bf16" else "bf16")
    return value


def build_deployment(
    costs: ModelCosts,
    gpu: GpuSpec,
    system: SystemSpec | None,
    precision: str,
    kv_precision: str,
    par: Parallelism,
    eff: Efficiency,
    techniques: Techniques = NO_TECHNIQUES,
) -> Deployment | str:
    """A Deployment, or the reason this candidate cannot run. Weight-only quantization
    computes on 16-bit units (its small-batch fixed cost scales with the stored bytes); 2:4
    sparsity scales weight bytes and GEMM peak as stated."""
    reason = invalid_reason(costs, par)
    if reason:
        return reason
    compute = "bf16" if techniques.weight_only else precision
    peak = peak_flops(gpu, compute)
    if peak is None:
        return f"{gpu.id} has no {COMPUTE_PRECISION[compute]} tensor units for {precision}"
    peak16 = peak_flops(gpu, "bf16") or peak
    if (
        system is not None
        and par.gpus > system.gpus_per_node
        and system.inter_node_bandwidth_bytes_per_s <= 0
    ):
        return f"{par.gpus} GPUs exceed one {system.id} node and it has no inter-node network"
    link = links(gpu, system, par, eff.comm_latency_s)
    if techniques.weight_only and bytes_per_element(precision) < 2.0:
        # Small-M GEMMs pay a fixed cost of m_half tokens of math; for a weight-only kernel it
        # is the narrower weights' loading, so it shrinks with the stored bytes (int8 weight-only
        # then costs what W8A8 int8 does on half the peak: 2P · m_half / 2 / (peak / 2)).
        eff = replace(eff, gemm_m_half=eff.gemm_m_half * bytes_per_element(precision) / 2.0)
    return Deployment(
        costs=costs,
        par=par,
        weight_bytes_per_param=bytes_per_element(precision) * techniques.sparse_weight_factor,
        kv_bytes_per_element=bytes_per_element(kv_precision),
        peak_flops=peak * techniques.sparse_compute_speedup,
        peak_flops_attention=peak16,
        hbm_bytes_per_s=gpu.hbm_bandwidth_bytes_per_s,
        tp_link=link.tp,
        pp_link=link.pp,
        eff=eff,
        ep_link=link.ep,
        techniques=techniques,
    )
