"""Fit the kernel tier on the measured kernel tables and print its accuracy.

Usage:
    python benchmarks/kernel_fit.py [--kernels DIR] [--write data/kernels/fit.json]

Reads the kernel tables of DIR (default ../shared/calibration/kernels: NVIDIA aiconfigurator's
per-kernel tables, Apache-2.0): GEMM, NCCL and custom all-reduce, context and generation
attention; fits per GPU × engine × dtype (collectives: per GPU × implementation × kind) the
parameters of :mod:`inferencesize.kernels` and :mod:`inferencesize.kernels_attention` with
:func:`inferencesize.kernel_calibration.fit_folder` (the same fit as `infersize calibrate
--kernels`), and prints per GPU × kernel family the median and 90th percentile
of |relative error| in-sample and leave-one-GPU-out: the left-out GPU's rows predicted from the
parameters fitted jointly on the other GPUs of its architecture (all other GPUs where none is
of its architecture), applied to its own datasheet. ``--write`` saves the fitted parameters.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from inferencesize.catalog import load_catalog
from inferencesize.kernel_calibration import KernelReport, fit_document, fit_folder
from inferencesize.kernels import FloatArray, error_summary

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_KERNELS = ROOT.parent / "shared" / "calibration" / "kernels"
ABOUT = (
    "Kernel tier of infersize (inferencesize.kernels), fitted by benchmarks/kernel_fit.py on"
    " measured kernel latencies from NVIDIA's aiconfigurator (Apache-2.0, copyright NVIDIA);"
    " each entry's source names the original tables (aiconfigurator source_detail) and rows"
    " its row count."
)


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


def print_tables(report: KernelReport) -> None:
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
    report = fit_folder(args.kernels, load_catalog().gpus, "calibration/kernels/")
    print_tables(report)
    if args.write:
        document = fit_document(report, ABOUT)
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
