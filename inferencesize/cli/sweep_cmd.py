"""`infersize sweep`: plan every point of a grid of scenario fields, streamed as CSV or JSONL."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import check_format, stderr
from inferencesize.cli.options import (
    QUESTION,
    ScenarioArg,
    engine_options,
    study_from,
    with_options,
)
from inferencesize.errors import InputError, UnknownIdError
from inferencesize.render.sweep import columns_for, record
from inferencesize.sweep import (
    MAX_POINTS,
    Axis,
    grid_size,
    parse_axis,
    unsupported_options,
    variable_fields,
)

FORMATS = ("csv", "jsonl")


def _check_ids(catalog: Catalog, axes: list[Axis]) -> None:
    """Unknown model or hardware ids in an axis are bad input (exit 1), not infeasible rows."""
    for axis in axes:
        if axis.field not in ("model", "hardware"):
            continue
        for value in axis.values:
            for name in value if isinstance(value, list) else [value]:
                try:
                    if axis.field == "model":
                        catalog.model(name)
                    else:
                        catalog.hardware(name)
                except UnknownIdError as err:
                    raise InputError(f"--vary {axis.field}: {err}") from None


def _writer(fmt: str, columns: list[str], fh: IO[str]) -> Callable[[dict[str, Any]], None]:
    if fmt == "jsonl":

        def write_json(rec: dict[str, Any]) -> None:
            fh.write(report.to_jsonl([{k: rec.get(k) for k in columns}]))

        return write_json
    import csv

    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(columns)

    def write_csv(rec: dict[str, Any]) -> None:
        writer.writerow([report.format_cell(rec.get(k)) for k in columns])

    return write_csv


@contextmanager
def _output(out: Path | None) -> Iterator[IO[str]]:
    """stdout, or ``out`` written atomically (a temporary file renamed when complete)."""
    if out is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"--out {out}: directory {folder} does not exist")
    if out.is_dir():
        raise InputError(f"--out {out}: is a directory, expected a file name")
    tmp = folder / f".{out.name}.{os.getpid()}.tmp"
    try:
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            yield fh
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def _progress(total: int) -> Any:
    if not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    return Progress(
        "sweep",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr(),
        transient=True,
    )


VARY_HELP = (
    "FIELD=a,b,c or FIELD=START:STOP[:STEP] (inclusive); repeatable, the grid is the cartesian"
    " product. Hardware/precision: one id per value, several joined with '+'; tp/pp/ep: 'auto'"
    " or integers joined with '+'. Fields: " + ", ".join(variable_fields()) + "."
)


@with_options(*QUESTION, engine_options)
def sweep_command(
    scenario: ScenarioArg = None,
    vary: Annotated[
        list[str] | None,
        typer.Option("--vary", help=VARY_HELP, show_default=False),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="csv | jsonl")] = "csv",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Write to FILE (atomically: complete or untouched), not stdout."
        ),
    ] = None,
    **flags: Any,
) -> None:
    """Plan every point of a grid: the scenario (file, shipped id or flags, as for plan) with
    each combination of the --vary values. One row per point, inputs first, then the chosen
    plan (servers, GPUs, per-instance rate, TTFT, ITL, E2E, binding constraint, cost).
    Infeasible points are rows with feasible=false and the reason; the exit code is 0.

    Example: infersize sweep --vary isl=500,1000,2000 --vary mean_rps=10:90:10
    --vary hardware=h100-sxm,h200-sxm,b200 --out sweep.csv
    """
    check_format(fmt, FORMATS)
    axes = [parse_axis(v) for v in vary or []]
    names = [a.field for a in axes]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(f"--vary {sorted(dup)[0]}: given twice; list all its values once")
    total = grid_size(axes)
    if total > MAX_POINTS:
        raise InputError(f"--vary: {total:,} points (at most {MAX_POINTS:,})")
    study = study_from(scenario, flags)
    catalog = study.catalog
    _check_ids(catalog, axes)
    ignored = unsupported_options(study.spec)
    if ignored:
        raise InputError(
            f"{study.shown}: sweep does not model {', '.join(ignored)} yet; plan such scenarios"
            " point by point with `infersize plan`"
        )
    base = study.base()
    columns = columns_for(axes)
    bar = _progress(total)
    with _output(out) as fh:
        write = _writer(fmt, columns, fh)
        rows = study.sweep(axes)
        if bar is None:
            for row in rows:
                write(record(row, base, study.engine))
        else:
            with bar:
                task = bar.add_task("sweep", total=total)
                for row in rows:
                    write(record(row, base, study.engine))
                    bar.advance(task)
    if out is not None:
        sys.stderr.write(f"wrote {total:,} points to {out}\n")
