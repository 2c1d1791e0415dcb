"""Published measurements mapped onto the model: each row's catalog candidate (its model, GPU
or server, precision and split, read from its cells and notes) and operating point, or why it
has none. The rows come from :mod:`inferencesize.io_measurements`; the predictions of the
mapped rows are :mod:`inferencesize.validation`'s.
"""

from __future__ import annotations

import re
from dataclasses import replace

from inferencesize.catalog import Catalog
from inferencesize.deployment import BARE_GPU_NODE, default_kv_precision
from inferencesize.errors import UnknownIdError
from inferencesize.estimate import Candidate
from inferencesize.io_measurements import Measurement, stated_precision
from inferencesize.measured_shape import DRAFT_HEADS, row_shape, speculative_method
from inferencesize.parallelism import Parallelism
from inferencesize.specs import SystemSpec
from inferencesize.units import PRECISIONS
from inferencesize.validation import METRICS, Mapped, PoolPoint, mode_of


def map_measurements(
    catalog: Catalog,
    rows: list[Measurement],
    hardware: str | None = None,
    precision: str | None = None,
) -> tuple[list[Mapped], list[tuple[Measurement, str]]]:
    """Rows the model can predict (with their operating point) and the others with why not.

    The deployment of a row is read by ``measured_shape.row_shape`` (attention DP and MoE TP
    from the notes, disaggregated pools from ``P:… D:…`` cells)."""
    mapped: list[Mapped] = []
    skipped: list[tuple[Measurement, str]] = []
    memo: dict[tuple[object, ...], Candidate | str] = {}
    for m in rows:
        shape = row_shape(m.tp_cell, m.tp, m.pp, m.ep_cell, m.ep, m.num_gpus, m.notes)
        if shape.problem is not None:
            skipped.append((m, shape.problem))
            continue
        method = speculative_method(m.notes)
        if method is not None and method not in DRAFT_HEADS:
            skipped.append((m, f"speculative decoding {method!r}: the draft model is not stated"))
            continue
        pools = [shape.aggregated] if shape.aggregated else []
        pools += [p.par for p in (shape.prefill, shape.decode) if p is not None]
        cands: list[Candidate] = []
        servers = shape.disaggregated  # the pools' instances sit on different servers
        for par in pools:
            key = (m.model, m.gpu, m.precision, m.kv_precision, par, servers)
            if key not in memo:
                memo[key] = _candidate(catalog, m, par, hardware, precision, servers)
            found = memo[key]
            if isinstance(found, str):
                skipped.append((m, found))
                break
            cands.append(found)
        else:
            result = _operating_point(cands[-1], m)
            if isinstance(result, str):
                skipped.append((m, result))
            elif shape.prefill is not None and shape.decode is not None:
                pre, dec = cands
                points = (
                    PoolPoint(pre, shape.prefill.workers),
                    PoolPoint(dec, shape.decode.workers),
                )
                mapped.append(replace(result, pools=points))
            else:
                mapped.append(result)
    return mapped, skipped


def _operating_point(cand: Candidate, m: Measurement) -> Mapped | str:
    """The row's operating point on its candidate, or why it cannot be predicted."""
    if m.metric not in METRICS:
        return f"metric {m.metric!r} is not a per-instance latency or throughput"
    if m.value <= 0:
        return "value is 0 (rounded in the source)"
    mode = mode_of(m)
    match = re.match(r"^\s*(\d+(?:\.\d+)?)", m.concurrency)
    if mode != "offline" and match is None:
        return f"operating point {m.concurrency!r} is not a concurrency or batch size"
    if m.isl is None:
        return "isl not stated"
    scale = _instances_covered(m.unit, m.num_gpus, cand.par.gpus)
    if m.osl is None:
        m = replace(m, osl=1.0)
    share = MEAN_LENGTH_SHARE.get(m.source.lower())
    if share is not None and m.isl is not None and m.osl is not None:
        m = replace(m, isl=m.isl * share, osl=max(m.osl * share, 1.0))
    return Mapped(m, cand, mode, float(match.group(1)) if match else 0.0, scale)


#: Sources whose requests are shorter than the nominal ISL / OSL on average: the share of
#: the nominal length a request has on average. InferenceMAX's client (``bench_serving
#: --random-range-ratio 0.8``) draws each length uniformly between 80 % and 100 % of the
#: nominal one: 0.9 on average. A mapped row is predicted at these mean lengths.
MEAN_LENGTH_SHARE: dict[str, float] = {"inferencemax": 0.9}


#: Units of a rate that covers a whole server: its ``num_gpus`` GPUs, whatever the instance size.
_PER_SERVER = re.compile(r"\bper\s+(dgx|hgx|server|node)\b")
_PER_GPU = re.compile(r"(\bper\s+gpu\b|/\s*gpu\b)")


def _instances_covered(unit: str, num_gpus: int | None, instance_gpus: int) -> float:
    """How many instances a measured rate covers, from its unit: 1 (per instance, the TP
    group), ``num_gpus / instance_gpus`` per DGX / server / node, ``1 / instance_gpus`` per GPU."""
    text = unit.lower()
    if _PER_GPU.search(text):
        return 1.0 / instance_gpus
    if _PER_SERVER.search(text) and num_gpus:
        return num_gpus / instance_gpus
    return 1.0


def _candidate(
    catalog: Catalog,
    m: Measurement,
    par: Parallelism,
    hardware: str | None,
    precision: str | None,
    servers: bool = False,
) -> Candidate | str:
    """The catalog candidate a row was measured on (its split ``par``), or why it has none.
    A bare GPU id on an instance wider than a server, or in a deployment across servers
    (``servers``), runs on its reference server (:func:`reference_server`)."""
    try:
        model = catalog.model(m.model)
    except UnknownIdError:
        return f"unknown model {m.model!r}"
    gpu_name = hardware or m.gpu
    try:
        gpu, system = catalog.hardware(gpu_name)
    except UnknownIdError:
        return f"unknown GPU {gpu_name!r}"
    prec = precision or stated_precision(m.precision)
    if prec not in PRECISIONS:
        return f"precision {m.precision!r} not stated or unknown"
    kv = m.kv_precision if m.kv_precision in PRECISIONS else default_kv_precision(prec)
    return on_servers(catalog, Candidate(model, gpu, system, prec, kv, par), servers)


def on_servers(catalog: Catalog, cand: Candidate, spans: bool = False) -> Candidate:
    """``cand`` on its GPU's reference server (:func:`reference_server`) when it names a bare
    GPU and its instance is wider than a server, or its deployment spans servers (``spans``:
    disaggregated pools); otherwise as it is."""
    if cand.system is None and (spans or cand.par.gpus > BARE_GPU_NODE):
        system = reference_server(catalog, cand.gpu.id)
        if system is not None:
            return replace(cand, system=system)
    return cand


#: Prefixes of the vendor's reference 8-GPU servers, in the order they are preferred.
REFERENCE_SERVERS = ("dgx-", "hgx-")


def reference_server(catalog: Catalog, gpu_id: str) -> SystemSpec | None:
    """The server a row that names only a GPU ran on when its instance spans servers: the
    vendor's reference baseboard server of that GPU (DGX, else HGX: NVLink inside, one NIC per
    GPU between them), whose network a bare GPU id does not state. None if the catalog has
    none."""
    for prefix in REFERENCE_SERVERS:
        for ident in sorted(catalog.systems):
            system: SystemSpec = catalog.systems[ident]
            if ident.startswith(prefix) and system.gpu == gpu_id:
                return system
    return None
