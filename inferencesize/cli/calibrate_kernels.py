"""`infersize calibrate --kernels DIR`: fit the kernel tier on a user's own kernel tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from inferencesize import report
from inferencesize.cli.common import Progress, emit_data, open_catalog
from inferencesize.errors import InputError
from inferencesize.io_kernels import table_path
from inferencesize.io_write import check_target, write_atomic


def calibrate_kernels(
    kernels: Path, out_file: Path, force: bool, fmt: str, catalog_dirs: list[Path] | None
) -> None:
    """Read the kernel tables of ``kernels``, fit them, write the fit to ``out_file`` (never
    over an existing file without ``force``) and print the accuracy per kernel family."""
    # scipy (the fits) is imported here, not at start-up, so every other command stays fast
    from inferencesize.kernel_calibration import RUNS, fit_kernel_tables

    if not kernels.is_dir():
        raise InputError(f"--kernels: {kernels}: not a folder (give the folder of the tables)")
    inputs = [
        ("--kernels", p) for p in (table_path(kernels, name) for name in RUNS) if p is not None
    ]
    check_target(out_file, "--out", inputs=inputs, overwrite=force)
    catalog = open_catalog(catalog_dirs)
    with Progress(f"fitting the kernel tables of {kernels}"):
        fitted = fit_kernel_tables(kernels, catalog.gpus)
    write_atomic(
        out_file,
        json.dumps(fitted.document, indent=1) + "\n",
        "--out",
        inputs=inputs,
        overwrite=force,
    )
    rec: dict[str, Any] = {
        "out": str(out_file),
        "kernels": str(kernels),
        "entries": fitted.entries,
        "families": fitted.families,
    }
    emit_data(fmt, rec, rec["families"], lambda con: _tables(con, rec))
    typer.echo(f"wrote {out_file}", err=True)


def _tables(con: Any, rec: dict[str, Any]) -> None:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    cols = ["family", "rows", "GPUs", "median error", "p90", "other GPUs' fit: median", "p90"]
    rows = [
        [
            f["family"],
            f["rows"],
            ", ".join(f["gpus"]),
            pct(f["median_error"]),
            pct(f["p90_error"]),
            pct(f.get("left_one_gpu_out_median_error")),
            pct(f.get("left_one_gpu_out_p90_error")),
        ]
        for f in rec["families"]
    ]
    title = f"kernel fit of {rec['kernels']}: |predicted / measured - 1| ({rec['entries']} fits)"
    con.print(report.table(title, cols, rows))
