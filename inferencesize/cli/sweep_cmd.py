"""`infersize sweep`: plan every point of a grid of scenario fields, streamed as CSV or JSONL."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import Progress, check_format, emit_data, format_option
from inferencesize.cli.options import (
    QUESTION,
    ScenarioArg,
    engine_options,
    study_from,
    with_options,
)
from inferencesize.errors import InputError, UnknownIdError, UsageError
from inferencesize.render.sweep import columns_for, record
from inferencesize.sweep import (
    MAX_POINTS,
    Axis,
    grid_size,
    parse_axis,
    unsupported_options,
    variable_fields,
)

FORMATS = ("csv", "jsonl", "table", "json", "yaml")
#: Formats written row by row while the grid is planned (to stdout or --out).
STREAMED = ("csv", "jsonl")


def _planned(study: Any, axes: list[Axis], total: int) -> Iterator[Any]:
    """The study's sweep rows, with a progress bar on a terminal's stderr."""
    with Progress("sweep", total=total) as bar:
        for row in study.sweep(axes):
            yield row
            bar.advance()


def _grid_table(rows: list[dict[str, Any]], columns: list[str]) -> Any:
    return report.table("sweep", columns, [[r.get(c) for c in columns] for r in rows], compact=True)


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


#: Signals that end a sweep writing --out: the temporary file is removed first (the default
#: action of SIGTERM and SIGHUP would end the process without it).
STOP_SIGNALS = ("SIGTERM", "SIGHUP")


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def _stopping_cleanly() -> Iterator[None]:
    """While the body runs, SIGTERM and SIGHUP raise SystemExit(128 + signal) in the main
    thread, so ``finally`` clauses run (and the exit status is the shell's for that signal)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, _stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextmanager
def _output(out: Path | None) -> Iterator[IO[str]]:
    """stdout, or ``out`` written atomically: a temporary file next to it, renamed when
    complete; removed on any error, Ctrl-C, SIGTERM or SIGHUP (never left behind)."""
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
    with _stopping_cleanly():
        try:
            with tmp.open("w", encoding="utf-8", newline="") as fh:
                yield fh
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)


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
        typer.Option("--vary", metavar="FIELD=VALUES", help=VARY_HELP, show_default=False),
    ] = None,
    fmt: Annotated[
        str,
        format_option(
            FORMATS,
            "csv and jsonl stream one row per point as it is planned; table, json and yaml"
            " print the whole grid at the end.",
        ),
    ] = "csv",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            metavar="FILE",
            help="Write to FILE (atomically: complete or untouched), not stdout.",
        ),
    ] = None,
    **flags: Any,
) -> None:
    """Plan every point of a grid of scenario fields (--vary), one row per point.

    The scenario (file, shipped id or flags, as for plan) with each combination of the --vary
    values. One row per point, inputs first, then the chosen plan (servers, GPUs,
    per-instance rate, TTFT, ITL, E2E, binding constraint, cost). Infeasible points are rows
    with feasible=false and the reason; the exit code is 0.

    Examples:
      infersize sweep default --vary isl=500,1000,2000 --vary peak_rps=50:200:50
      infersize sweep --vary isl=500,1000,2000 --vary mean_rps=10:90:10 --vary hardware=h100-sxm,h200-sxm,b200 --out sweep.csv
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
    if fmt == "table" and out is not None:
        raise UsageError("--out writes csv, jsonl, json or yaml, not a table")
    if fmt == "table":
        rows = [record(row, base, study.engine) for row in _planned(study, axes, total)]
        emit_data(fmt, rows, table=lambda con: con.print(_grid_table(rows, columns)))
        return
    with _output(out) as fh:
        if fmt in STREAMED:
            write = _writer(fmt, columns, fh)
            for row in _planned(study, axes, total):
                write(record(row, base, study.engine))
        else:  # the whole grid at once
            rows = [
                {k: r.get(k) for k in columns}
                for r in (record(row, base, study.engine) for row in _planned(study, axes, total))
            ]
            fh.write(report.to_json(rows) + "\n" if fmt == "json" else report.to_yaml(rows))
    if out is not None:
        sys.stderr.write(f"wrote {total:,} points to {out}\n")
