"""`infersize sweep`: plan every point of a grid of scenario fields, streamed as CSV or JSONL."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import (
    Progress,
    check_format,
    emit_data,
    format_option,
    input_files,
    open_catalog,
)
from inferencesize.cli.options import (
    QUESTION,
    ScenarioArg,
    engine_options,
    flag_names,
    overrides,
    with_options,
)
from inferencesize.cli.stream import (
    ShardOption,
    WorkersOption,
    in_blocks,
    parse_shard,
    shard_points,
    write_rows,
)
from inferencesize.errors import InputError, UnknownIdError, UsageError
from inferencesize.io_write import Input, atomic_file, check_target
from inferencesize.render.sweep import columns_for, record
from inferencesize.study import EXCLUSIVE, Study, is_question, resolve, scenario_data
from inferencesize.sweep import (
    MAX_POINTS,
    Axis,
    expand,
    grid_size,
    parse_axis,
    planned_size,
    unsupported_options,
    variable_fields,
)

FORMATS = ("csv", "jsonl", "table", "json", "yaml")
#: Formats written row by row while the grid is planned (to stdout or --out).
STREAMED = ("csv", "jsonl")


#: A streamed block is written once it holds this many rows or this many seconds have passed.
FLUSH_ROWS = 1024
FLUSH_S = 0.25


def _planned(rows: Iterable[Any], total: int) -> Iterator[Any]:
    """``rows``, with a progress bar on a terminal's stderr."""
    with Progress("sweep", total=total) as bar:
        for row in rows:
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


def _stated(data: Mapping[str, Any], field: str) -> bool:
    """Whether the question states ``field``, or a field it excludes (``isl_words`` for
    ``isl``, ``peak_rps`` for ``mean_rps``)."""
    return field in data or any(
        field in group and any(key in data for key in group) for group in EXCLUSIVE
    )


def _question(
    catalog: Catalog, scenario: str | None, flags: Mapping[str, Any], axes: Sequence[Axis]
) -> Study:
    """The question swept: the scenario and flags as ``plan`` reads them, where a field an
    axis varies is stated by the axis. A field the question leaves unstated takes the axis's
    first value to resolve with (every point then sets its own), so ``--model M --vary
    isl=500,1000`` needs no ``--isl``. The shipped default example (no scenario, no
    question flag) and a trace (which a sweep refuses) are resolved as given."""
    given = overrides(flags)
    names = flag_names(given)  # the flags', not the axes' first values filled in below
    if axes and (scenario is not None or is_question(given)):
        data, _ = scenario_data(catalog, scenario, given)
        if "trace" not in data:
            fill = {a.field: a.values[0] for a in axes if not _stated(data, a.field)}
            given = {**given, **fill}
    return resolve(
        catalog,
        scenario,
        given,
        engine=flags.get("engine"),
        calibration=flags.get("calibration"),
        flags=names,
    )


def header(fmt: str, columns: list[str]) -> str:
    """The text before the first row: the CSV header line (JSONL has none)."""
    return (
        _rendered(fmt, columns, [dict(zip(columns, columns, strict=True))]) if fmt == "csv" else ""
    )


def _rendered(fmt: str, columns: list[str], records: Iterable[dict[str, Any]]) -> str:
    """Complete CSV or JSONL rows of ``records``, in order."""
    if fmt == "jsonl":
        return report.to_jsonl([{k: rec.get(k) for k in columns} for rec in records])
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows([report.format_cell(rec.get(k)) for k in columns] for rec in records)
    return buffer.getvalue()


def _stream(fmt: str, columns: list[str], records: Iterable[dict[str, Any]], fh: IO[str]) -> None:
    """Write ``records`` as they come, in blocks of whole rows (:func:`write_rows`)."""
    block: list[dict[str, Any]] = []
    due = time.monotonic() + FLUSH_S
    for rec in records:
        block.append(rec)
        if len(block) >= FLUSH_ROWS or time.monotonic() >= due:
            write_rows(fh, _rendered(fmt, columns, block))
            block.clear()
            due = time.monotonic() + FLUSH_S
    write_rows(fh, _rendered(fmt, columns, block))


#: One worker process's sweep (``--workers``): set by :func:`_start_worker`.
_WORKER: dict[str, Any] = {}


def _start_worker(
    scenario: str | None, flags: dict[str, Any], axes: list[Axis], fmt: str, columns: list[str]
) -> None:
    study = _question(open_catalog(flags.get("catalog_dirs")), scenario, flags, axes)
    _WORKER.update(
        study=study, sweeper=study.sweeper(), base=study.base(), axes=axes, fmt=fmt, columns=columns
    )


def _worker_block(points: range) -> str:
    """The rows of the grid points ``points``, rendered (in a worker process)."""
    w = _WORKER
    rows = w["sweeper"].run(w["base"], expand(w["axes"], points), points.start)
    study = w["study"]
    return _rendered(
        w["fmt"],
        w["columns"],
        (record(row, w["base"], study.engine, study.plan_engine) for row in rows),
    )


def _block_size(points: range, workers: int) -> int:
    """Points per task of a process pool: about four tasks per worker, 256 to 8192 points."""
    return min(8192, max(256, -(-len(points) // (4 * workers))))


@contextmanager
def _output(out: Path | None, inputs: list[Input]) -> Iterator[IO[str]]:
    """stdout, or ``out`` written atomically (:func:`inferencesize.io_write.atomic_file`):
    complete or untouched, the temporary file removed on any error, Ctrl-C, SIGTERM or
    SIGHUP."""
    if out is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_file(out, "--out", inputs=inputs) as fh:
        yield fh


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
            help="Write to FILE, not stdout: replaces an existing file, atomically (complete or"
            " untouched); never one of the command's inputs.",
        ),
    ] = None,
    shard: ShardOption = None,
    workers: WorkersOption = 1,
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
      infersize sweep default --vary isl=250:4000:250 --vary mean_rps=1:100 --shard 2/8 --workers 4
    """
    check_format(fmt, FORMATS)
    part, parts = parse_shard(shard)
    if (parts > 1 or workers > 1) and fmt not in STREAMED:
        raise UsageError("--shard and --workers stream csv or jsonl (-f csv, -f jsonl)")
    if fmt == "table" and out is not None:
        raise UsageError("--out writes csv, jsonl, json or yaml, not a table")
    inputs = input_files(scenario=scenario, calibration=flags.get("calibration"))
    if out is not None:
        check_target(out, "--out", inputs=inputs)
    # counted from the --vary text, before any axis is expanded
    planned = planned_size(vary or [])
    if planned > MAX_POINTS:
        raise InputError(f"--vary: {planned:,} points (at most {MAX_POINTS:,})")
    axes = [parse_axis(v) for v in vary or []]
    names = [a.field for a in axes]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(f"--vary {sorted(dup)[0]}: given twice; list all its values once")
    total = grid_size(axes)
    catalog = open_catalog(flags.get("catalog_dirs"))
    _check_ids(catalog, axes)
    study = _question(catalog, scenario, flags, axes)
    ignored = unsupported_options(study.spec)
    if ignored:
        raise InputError(
            f"{study.shown}: sweep does not model {', '.join(ignored)} yet; plan such scenarios"
            " point by point with `infersize plan`"
        )
    base = study.base()
    columns = columns_for(axes)
    points = shard_points(total, part, parts)
    if fmt == "table":
        rows = [
            record(row, base, study.engine, study.plan_engine)
            for row in _planned(study.sweep(axes), total)
        ]
        emit_data(fmt, rows, table=lambda con: con.print(_grid_table(rows, columns)))
        return
    with _output(out, inputs) as fh:
        if fmt in STREAMED:
            write_rows(fh, header(fmt, columns) if part == 1 else "")
            if workers == 1:
                rows_in = _planned(study.sweep(axes, points), len(points))
                _stream(
                    fmt,
                    columns,
                    (record(row, base, study.engine, study.plan_engine) for row in rows_in),
                    fh,
                )
            else:
                job = (scenario, flags, axes, fmt, columns)
                blocks = in_blocks(
                    points, _block_size(points, workers), workers, _worker_block, _start_worker, job
                )
                with Progress("sweep", total=len(points)) as bar:
                    for block, text in blocks:
                        write_rows(fh, text)
                        bar.advance(len(block))
        else:  # the whole grid at once
            rows = [
                {k: r.get(k) for k in columns}
                for r in (
                    record(row, base, study.engine, study.plan_engine)
                    for row in _planned(study.sweep(axes), total)
                )
            ]
            fh.write(report.to_json(rows) + "\n" if fmt == "json" else report.to_yaml(rows))
    if out is not None:
        sys.stderr.write(f"wrote {len(points):,} points to {out}\n")
