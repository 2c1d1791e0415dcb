"""Fit the kernel tier on the measured kernel tables and print its accuracy.

Usage:
    python benchmarks/kernel_fit.py [--kernels DIR] [--write data/kernels/fit.json]

Reads gemm_perf, nccl_perf and custom_allreduce_perf from DIR (default
../shared/calibration/kernels: NVIDIA aiconfigurator's per-kernel tables, Apache-2.0), fits per
GPU × engine × dtype (GEMM) and per GPU × implementation × kind (collectives) the parameters of
:mod:`inferencesize.kernels`, and prints per GPU × kernel family the median and 90th percentile
of |relative error| in-sample and leave-one-GPU-out: the left-out GPU's rows predicted from the
parameters fitted jointly on the other GPUs of its architecture (all other GPUs where none is
of its architecture), applied to its own datasheet. ``--write`` saves the fitted parameters.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

from inferencesize.catalog import load_catalog
from inferencesize.comm import PCIE_BYTES_PER_S
from inferencesize.io_kernels import (
    CUSTOM_ALLREDUCE_COLUMNS,
    GEMM_COLUMNS,
    NCCL_COLUMNS,
    KernelTable,
    read_kernel_table,
)
from inferencesize.kernel_fit import fit_collective, fit_gemm
from inferencesize.kernels import (
    ELEMENT_BYTES,
    GEMM_DTYPES,
    CollectiveKind,
    collective_time_s,
    error_summary,
    gemm_bytes,
    gemm_time_s,
    relative_errors,
)
from inferencesize.specs.hardware import GpuSpec

FloatArray = npt.NDArray[np.float64]
Rows = npt.NDArray[np.intp]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_KERNELS = ROOT.parent / "shared" / "calibration" / "kernels"

#: GEMM calls of at least this long are also reported apart: a step's time is mostly theirs
LONG_S = 10e-6
LONG_GEMM = "gemm_from_10us"

#: the kernel tables' gpu names -> catalog ids (every one has a catalog entry); rows whose
#: device is a GB300 (filed under b300_sxm) are fitted as the GB300 they were measured on
DEVICE_GPU = {"NVIDIA GB300": "gb300"}
CATALOG_ID = {
    "gb300": "gb300",
    "a100_sxm": "a100-sxm-80gb",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "l40s": "l40s",
}


def link_bytes_per_s(gpu: GpuSpec) -> float:
    """Per-direction scale-up bandwidth: half the bidirectional NVLink figure, else PCIe."""
    if gpu.scale_up_bandwidth_bytes_per_s > 0:
        return gpu.scale_up_bandwidth_bytes_per_s / 2.0
    return PCIE_BYTES_PER_S[gpu.pcie_gen or 4]


def donors(gpu: str, gpus: list[str], specs: dict[str, GpuSpec]) -> list[str]:
    """The GPUs whose fit a left-out GPU takes: same architecture if any, else all others."""
    others = [g for g in gpus if g != gpu]
    same = [g for g in others if specs[g].architecture == specs[gpu].architecture]
    return same or others


def groups_of(table: KernelTable, columns: tuple[str, ...]) -> dict[tuple[str, ...], Rows]:
    """Row indices per distinct value of ``columns``."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    cells = [
        table.text[c] if c in table.text else [f"{v:g}" for v in table.numbers[c]] for c in columns
    ]
    for i, key in enumerate(zip(*cells, strict=True)):
        groups[key].append(i)
    return {key: np.array(rows) for key, rows in groups.items()}


def source_of(table: KernelTable, rows: Rows) -> str:
    return "; ".join(sorted({table.text["source_detail"][i] for i in rows}))


@dataclass
class Report:
    """|relative error| arrays per (GPU, family), in-sample and leave-one-GPU-out."""

    fitted: dict[tuple[str, str], list[FloatArray]] = field(
        default_factory=lambda: defaultdict(list)
    )
    left_out: dict[tuple[str, str], list[FloatArray]] = field(
        default_factory=lambda: defaultdict(list)
    )
    entries: list[dict[str, object]] = field(default_factory=list)


def rounded(params: dict[str, float]) -> dict[str, float]:
    """Four significant digits: the fit is not better than that."""
    return {name: float(f"{value:.4g}") for name, value in params.items()}


def run_gemm(table: KernelTable, specs: dict[str, GpuSpec], report: Report) -> None:
    """GEMM per GPU × engine × dtype; leave-one-GPU-out over the same engine × dtype."""
    m, n, k = (table.numbers[c] for c in ("m", "n", "k"))
    latency_s = table.numbers["latency"] * 1e-3
    groups = groups_of(table, ("gpu", "framework", "gemm_dtype"))

    def sheet(gpu: str, dtype: str, count: int) -> tuple[FloatArray, FloatArray]:
        peak = specs[gpu].dense_flops.get(GEMM_DTYPES[dtype][0]) or float("nan")
        bw = specs[gpu].hbm_bandwidth_bytes_per_s
        return np.full(count, peak), np.full(count, bw)

    for (gpu, engine, dtype), rows in sorted(groups.items()):
        moved = gemm_bytes(m[rows], n[rows], k[rows], dtype)
        peak, bw = sheet(gpu, dtype, len(rows))
        p = fit_gemm(m[rows], n[rows], k[rows], moved, peak, bw, latency_s[rows])
        pred = gemm_time_s(m[rows], n[rows], k[rows], moved, peak, bw, p)
        family = f"gemm {dtype}"
        errors = relative_errors(pred, latency_s[rows])
        report.fitted[(gpu, family)].append(errors)
        report.fitted[(gpu, LONG_GEMM)].append(errors[latency_s[rows] >= LONG_S])
        report.entries.append(
            {
                "family": "gemm",
                "gpu": gpu,
                "catalog_id": CATALOG_ID[gpu],
                "engine": engine,
                "dtype": dtype,
                "params": rounded(asdict(p)),
                "rows": len(rows),
                "source": source_of(table, rows),
                "table": "calibration/kernels/" + Path(table.path).name,
            }
        )
        others = [g for g in donors(gpu, sorted(specs), specs) if (g, engine, dtype) in groups]
        if not others:
            continue
        pool = np.concatenate([groups[(g, engine, dtype)] for g in others])
        pool_peak = np.concatenate(
            [sheet(g, dtype, len(groups[(g, engine, dtype)]))[0] for g in others]
        )
        pool_bw = np.concatenate(
            [sheet(g, dtype, len(groups[(g, engine, dtype)]))[1] for g in others]
        )
        shared = fit_gemm(
            m[pool],
            n[pool],
            k[pool],
            gemm_bytes(m[pool], n[pool], k[pool], dtype),
            pool_peak,
            pool_bw,
            latency_s[pool],
        )
        pred = gemm_time_s(m[rows], n[rows], k[rows], moved, peak, bw, shared)
        errors = relative_errors(pred, latency_s[rows])
        report.left_out[(gpu, family)].append(errors)
        report.left_out[(gpu, LONG_GEMM)].append(errors[latency_s[rows] >= LONG_S])


def run_collectives(
    table: KernelTable,
    specs: dict[str, GpuSpec],
    report: Report,
    implementation: str,
    kind_column: str,
    dtype_column: str,
    family: str,
) -> None:
    """Collectives per GPU × implementation × kind; leave-one-GPU-out over the same
    implementation × kind."""
    n_gpus = table.numbers["num_gpus"]
    width = np.array([ELEMENT_BYTES[d] for d in table.text[dtype_column]])
    message_bytes = table.numbers["message_size"] * width
    latency_s = table.numbers["latency"] * 1e-3
    groups = groups_of(table, ("gpu", implementation, kind_column, "num_gpus"))
    for (gpu, impl, kind_text, count), rows in sorted(groups.items()):
        kind = cast(CollectiveKind, kind_text)
        link = np.full(len(rows), link_bytes_per_s(specs[gpu]))
        p = fit_collective(kind, float(count), message_bytes[rows], link, latency_s[rows])
        pred = collective_time_s(kind, n_gpus[rows], message_bytes[rows], link, p)
        report.fitted[(gpu, family)].append(relative_errors(pred, latency_s[rows]))
        report.entries.append(
            {
                "family": family,
                "gpu": gpu,
                "catalog_id": CATALOG_ID[gpu],
                "implementation": impl,
                "kind": kind,
                "num_gpus": int(float(count)),
                "link_bytes_per_s": link_bytes_per_s(specs[gpu]),
                "params": rounded(asdict(p)),
                "rows": len(rows),
                "source": source_of(table, rows),
                "table": "calibration/kernels/" + Path(table.path).name,
            }
        )
        others = [g for g in donors(gpu, sorted(specs), specs) if (g, impl, kind, count) in groups]
        if not others:
            continue
        pool = np.concatenate([groups[(g, impl, kind, count)] for g in others])
        pool_link = np.concatenate(
            [
                np.full(len(groups[(g, impl, kind, count)]), link_bytes_per_s(specs[g]))
                for g in others
            ]
        )
        shared = fit_collective(kind, float(count), message_bytes[pool], pool_link, latency_s[pool])
        pred = collective_time_s(kind, n_gpus[rows], message_bytes[rows], link, shared)
        report.left_out[(gpu, family)].append(relative_errors(pred, latency_s[rows]))


def _cells(errors: list[FloatArray]) -> str:
    if not errors:
        return "no other GPU | —"
    med, p90 = error_summary(np.concatenate(errors))
    return f"{100 * med:.1f} % | {100 * p90:.1f} %"


def _pooled(
    table: dict[tuple[str, str], list[FloatArray]], key: Callable[[str, str], str | None]
) -> dict[str, list[FloatArray]]:
    pooled: dict[str, list[FloatArray]] = defaultdict(list)
    for (gpu, family), errors in table.items():
        name = key(gpu, family)
        if name is not None:
            pooled[name].extend(errors)
    return pooled


def print_tables(report: Report) -> None:
    """Markdown tables: per kernel family, per GPU × family, per GPU × GEMM dtype."""
    head = "in-sample median | p90 | leave-one-GPU-out median | p90 |"
    for title, key in (
        ("family", lambda gpu, family: family.split()[0]),
        ("GPU | family", lambda gpu, family: f"{gpu} | {family.split()[0]}"),
        ("GPU | GEMM dtype", lambda gpu, f: f"{gpu} | {f.split()[1]}" if " " in f else None),
    ):
        fitted, left = _pooled(report.fitted, key), _pooled(report.left_out, key)
        print(f"| {title} | rows | {head}")
        print("|---" * (title.count("|") + 1) + "|---:" * 5 + "|")
        for name in sorted(fitted, key=lambda n: n.split(" | ")[::-1]):
            rows = sum(len(e) for e in fitted[name])
            print(f"| {name} | {rows} | {_cells(fitted[name])} | {_cells(left.get(name, []))} |")
        print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=Path, default=DEFAULT_KERNELS)
    parser.add_argument("--write", type=Path, help="save the fitted parameters (JSON)")
    args = parser.parse_args()
    catalog = load_catalog()
    specs = {name: catalog.gpus[cid] for name, cid in CATALOG_ID.items()}
    report = Report()
    gemm = read_kernel_table(args.kernels / "gemm_perf.csv.gz", *GEMM_COLUMNS)
    by_device = zip(gemm.text["gpu"], gemm.text["device"], strict=True)
    gemm.text["gpu"] = [DEVICE_GPU.get(device, gpu) for gpu, device in by_device]
    run_gemm(gemm, specs, report)
    nccl = read_kernel_table(args.kernels / "nccl_perf.csv.gz", *NCCL_COLUMNS)
    run_collectives(nccl, specs, report, "kernel_source", "op_name", "nccl_dtype", "nccl")
    custom = read_kernel_table(
        args.kernels / "custom_allreduce_perf.csv.gz", *CUSTOM_ALLREDUCE_COLUMNS
    )
    run_collectives(
        custom, specs, report, "kernel_source", "op_name", "allreduce_dtype", "custom_allreduce"
    )
    print_tables(report)
    if args.write:
        document = {
            "about": "Kernel tier of infersize (inferencesize.kernels), fitted by"
            " benchmarks/kernel_fit.py on measured kernel latencies from NVIDIA's"
            " aiconfigurator (Apache-2.0, copyright NVIDIA); each entry's source names the"
            " original tables (aiconfigurator source_detail) and rows its row count.",
            "units": "shares of the datasheet (eta_*), elements (*_half), seconds (*_s),"
            " bytes/s (link_bytes_per_s)",
            "entries": report.entries,
        }
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
