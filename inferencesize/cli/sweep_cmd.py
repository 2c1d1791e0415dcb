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
from inferencesize.cli.common import (
    CalibrationOpt,
    CatalogOpt,
    EngineOpt,
    check_format,
    efficiency_for,
    open_catalog,
    stderr,
)
from inferencesize.cli.plan_cmd import (
    BatchingOpt,
    E2eOpt,
    EpOpt,
    HardwareOpt,
    IslOpt,
    ItlOpt,
    MeanOpt,
    ModelOpt,
    ModeOpt,
    OslOpt,
    PeakOpt,
    PercentileOpt,
    PpOpt,
    PrecisionOpt,
    ScenarioArg,
    TpOpt,
    TtftOpt,
    _flags,
    load_scenario,
    sweep_setup,
)
from inferencesize.errors import InputError, UnknownIdError
from inferencesize.estimate import Estimator
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.sweep import (
    MAX_POINTS,
    Axis,
    Row,
    Sweeper,
    apply,
    expand,
    grid_size,
    parse_axis,
    unsupported_options,
    variable_fields,
)

FORMATS = ("csv", "jsonl")

#: Input columns, always present, in this order (``*_limit`` are the scenario's limits).
INPUT_COLUMNS = (
    "point",
    "model",
    "isl",
    "osl",
    "mean_rps",
    "percentile",
    "dispersion",
    "peak_rps",
    "ttft_ms_limit",
    "itl_ms_limit",
    "e2e_ms_limit",
    "mode",
    "batching",
    "hardware_options",
    "precision_options",
    "kv_precision_option",
    "tp_options",
    "pp_options",
    "ep_options",
)
#: Scenario field -> input column, where they differ.
FIELD_COLUMN = {
    "ttft_ms": "ttft_ms_limit",
    "itl_ms": "itl_ms_limit",
    "e2e_ms": "e2e_ms_limit",
    "hardware": "hardware_options",
    "precision": "precision_options",
    "kv_precision": "kv_precision_option",
    "tp": "tp_options",
    "pp": "pp_options",
    "ep": "ep_options",
}
#: Result columns, always present, in this order (empty when infeasible).
RESULT_COLUMNS = (
    "feasible",
    "servers",
    "gpus",
    "hardware",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "instances",
    "gpus_per_instance",
    "concurrency",
    "rps_per_instance",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "output_tokens_per_s_per_instance",
    "binding_constraint",
    "capacity_rps",
    "headroom",
    "cost_per_hour_usd",
    "cost_per_million_output_tokens_usd",
    "engine",
    "efficiency",
    "reason",
)


def columns_for(axes: list[Axis]) -> list[str]:
    """Input columns (plus any varied field without one, after ``point``), then results."""
    extra = [a.field for a in axes if FIELD_COLUMN.get(a.field, a.field) not in INPUT_COLUMNS]
    return [INPUT_COLUMNS[0], *dict.fromkeys(extra), *INPUT_COLUMNS[1:], *RESULT_COLUMNS]


def _joined(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return "+".join(str(v) for v in value)
    return value


def record(row: Row, base: dict[str, Any], engine: str) -> dict[str, Any]:
    """One output row (flat; None where a value does not apply)."""
    s = row.scenario
    data = s.model_dump() if s is not None else apply(base, row.values)
    out: dict[str, Any] = {"point": row.index}
    for key, value in row.values.items():
        if FIELD_COLUMN.get(key, key) not in INPUT_COLUMNS:
            out[key] = _joined(value)
    out.update(
        {
            "model": data.get("model"),
            "isl": s.input_tokens if s is not None else data.get("isl"),
            "osl": s.output_tokens if s is not None else data.get("osl"),
            "mean_rps": data.get("mean_rps"),
            "percentile": data.get("percentile"),
            "dispersion": data.get("dispersion"),
            "peak_rps": row.peak_rps,
            "ttft_ms_limit": data.get("ttft_ms"),
            "itl_ms_limit": data.get("itl_ms"),
            "e2e_ms_limit": data.get("e2e_ms"),
            "mode": data.get("mode"),
            "batching": data.get("batching"),
            "hardware_options": _joined(data.get("hardware")),
            "precision_options": _joined(data.get("precision")),
            "kv_precision_option": data.get("kv_precision"),
            "tp_options": _joined(data.get("tp")),
            "pp_options": _joined(data.get("pp")),
            "ep_options": _joined(data.get("ep")),
        }
    )
    p = row.plan
    result: dict[str, Any] = dict.fromkeys(RESULT_COLUMNS)
    result["feasible"] = p is not None
    result["binding_constraint"] = row.binding
    result["reason"] = row.reason
    result["engine"] = engine
    if p is not None:
        c, op = p.candidate, p.point
        result.update(
            servers=p.servers,
            gpus=p.gpus,
            hardware=c.hardware_id,
            precision=c.precision,
            kv_precision=c.kv_precision,
            tp=c.par.tp,
            pp=c.par.pp,
            ep=c.par.ep,
            instances=p.instances,
            gpus_per_instance=p.gpus_per_instance,
            concurrency=op.concurrency,
            rps_per_instance=op.requests_per_s,
            ttft_ms=op.ttft_s * 1e3,
            itl_ms=op.itl_s * 1e3,
            e2e_ms=op.e2e_s * 1e3,
            output_tokens_per_s_per_instance=op.output_tokens_per_s,
            capacity_rps=p.capacity_rps,
            headroom=p.headroom,
            cost_per_hour_usd=p.cost_per_hour_usd,
            cost_per_million_output_tokens_usd=p.cost_per_million_output_tokens_usd,
            efficiency=p.efficiency_source,
        )
    out.update(result)
    return out


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
    model: ModelOpt = None,
    isl: IslOpt = None,
    osl: OslOpt = None,
    mean_rps: MeanOpt = None,
    peak_rps_: PeakOpt = None,
    percentile: PercentileOpt = None,
    ttft_ms: TtftOpt = None,
    itl_ms: ItlOpt = None,
    e2e_ms: E2eOpt = None,
    hardware: HardwareOpt = None,
    precision: PrecisionOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    ep: EpOpt = None,
    mode: ModeOpt = None,
    batching: BatchingOpt = None,
    engine: EngineOpt = None,
    calibration: CalibrationOpt = None,
    catalog_dirs: CatalogOpt = None,
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
    catalog = open_catalog(catalog_dirs)
    _check_ids(catalog, axes)
    base_spec, shown = load_scenario(catalog, scenario, _flags(locals()))
    ignored = unsupported_options(base_spec)
    if ignored:
        raise InputError(
            f"{shown}: sweep does not model {', '.join(ignored)} yet; plan such scenarios"
            " point by point with `infersize plan`"
        )
    base = base_spec.model_dump(by_alias=True, exclude_none=True)
    eset = efficiency_for(catalog, engine or base_spec.engine, calibration)
    # Points with the same techniques and KV cap share one estimator (and its deployments).
    estimators: dict[tuple[Any, ...], Estimator] = {}

    def configure(s: ScenarioSpec) -> tuple[Estimator, dict[str, Any]]:
        est, extra = sweep_setup(catalog, eset, s, shown)
        return estimators.setdefault((est.techniques, est.kv_cap), est), extra

    sweeper = Sweeper(Estimator(eset), catalog, configure=configure)
    columns = columns_for(axes)
    grid = list(expand(axes))
    bar = _progress(total)
    with _output(out) as fh:
        write = _writer(fmt, columns, fh)
        rows = sweeper.run(base, grid)
        if bar is None:
            for row in rows:
                write(record(row, base, eset.engine))
        else:
            with bar:
                task = bar.add_task("sweep", total=total)
                for row in rows:
                    write(record(row, base, eset.engine))
                    bar.advance(task)
    if out is not None:
        sys.stderr.write(f"wrote {total:,} points to {out}\n")
