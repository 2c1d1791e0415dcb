"""Read published measurements (the CSV schema of shared/calibration), GenAI-Perf exports and
the operating points of ``estimate --points``.

Every reader takes a regular file of at most 256 MiB of UTF-8 (``catalog.read_text``) and turns
each OS, decoding and CSV error into one InputError naming the file (and the line). A points
file is not held: :func:`open_points` checks it in one pass and :meth:`PointsFile.blocks` reads
it again a block of rows at a time, so it may have any number of rows. Numbers are
checked as they are read: a measured ``value`` that is NaN, infinite or negative, an ISL or
OSL that is not a finite number from 0 to 100,000,000 tokens, a TP/PP/EP/GPU count above 4,096
or a concurrency above 10^9 is an error naming the row and column (the file is malformed; a
measurement is never dropped or planned silently). A ``value`` of 0 is read, then counted as
not mappable ("rounded in the source"); text in a number column (``P:tp8x1 D:tp8x6``) reads as
not stated, as before.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferencesize.catalog import MAX_DATA_BYTES, _check_kind, display_path, read_text
from inferencesize.errors import CatalogError, InputError
from inferencesize.specs.common import MAX_COUNT, MAX_PARALLEL, MAX_TOKENS, brief, clip

COLUMNS = [
    "source",
    "source_detail",
    "model",
    "gpu",
    "num_gpus",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "isl",
    "osl",
    "concurrency_or_batch",
    "metric",
    "value",
    "unit",
    "engine",
    "engine_version",
    "notes",
]
REQUIRED = ("model", "gpu", "metric", "value")


#: An engine label naming NVIDIA Dynamo before the engine it runs ("Dynamo+TensorRT-LLM",
#: "dynamo-sglang").
_DYNAMO = re.compile(r"^dynamo\s*[+\-_/ ]\s*", re.I)


@dataclass(frozen=True)
class Measurement:
    """One measured metric at one operating point (blank = not stated by the source)."""

    row: int
    source: str
    model: str
    gpu: str
    num_gpus: int | None
    precision: str
    kv_precision: str
    tp: int | None
    pp: int | None
    ep: int | None
    isl: float | None
    osl: float | None
    concurrency: str  # a number, or 'offline_max', or free text
    metric: str
    value: float
    unit: str
    engine: str
    engine_version: str
    notes: str = ""
    tp_cell: str = ""  # the tp cell as written (``P:tp4x1 D:tp8x4`` on disaggregated rows)
    ep_cell: str = ""  # the ep cell as written (``P:8 D:8``)

    @property
    def engine_label(self) -> str:
        return f"{self.engine} {self.engine_version}".strip()

    @property
    def served_engine(self) -> tuple[str, str]:
        """(engine, version) that ran the model: a ``Dynamo+X`` row is engine X with its version
        not stated (``engine_version`` is then the Dynamo runtime's); ``(disagg)`` dropped."""
        engine = re.sub(r"\s*\(disagg\)\s*", " ", self.engine).strip()
        dynamo = _DYNAMO.match(engine)
        if dynamo and engine[dynamo.end() :].strip():
            return engine[dynamo.end() :].strip(), ""
        return engine, self.engine_version

    @property
    def point(self) -> tuple[object, ...]:
        """The operating point measured: every column but the metric, value, unit and notes."""
        return (
            self.source,
            self.model,
            self.gpu,
            self.num_gpus,
            self.precision,
            self.kv_precision,
            self.tp,
            self.pp,
            self.ep,
            self.isl,
            self.osl,
            self.concurrency,
            self.engine_label,
        )


#: Ceilings of the number columns of a measurements CSV (``specs.common``).
CEILINGS: dict[str, float] = {
    "num_gpus": MAX_PARALLEL,
    "tp": MAX_PARALLEL,
    "pp": MAX_PARALLEL,
    "ep": MAX_PARALLEL,
    "isl": MAX_TOKENS,
    "osl": MAX_TOKENS,
    "concurrency_or_batch": MAX_COUNT,
}


def _number(text: str, where: str, column: str) -> float | None:
    """A number column: None when blank or text (not stated); an InputError when it is a
    number that is not finite, negative or above the column's ceiling."""
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    ceiling = CEILINGS.get(column, math.inf)
    if not math.isfinite(value) or value < 0 or value > ceiling:
        limit = f" up to {ceiling:,.0f}" if ceiling < math.inf else ""
        raise InputError(
            f"{where}: {column}: expected a finite number from 0{limit} (got {brief(text)})"
        )
    return value


def _int(text: str, where: str, column: str) -> int | None:
    value = _number(text, where, column)
    return None if value is None else int(value)


def _csv_rows(text: str | Iterable[str], shown: str) -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of CSV text, or of the lines of a file opened with ``newline=""``; a CSV
    error (a field over 128 KiB, a NUL) names the line."""
    reader = csv.reader(io.StringIO(text, newline="") if isinstance(text, str) else text)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise InputError(f"{shown}: line {reader.line_num}: {_csv_problem(err)}") from None
        yield reader.line_num, cells


def _csv_problem(err: csv.Error) -> str:
    text = str(err)
    if "field larger than field limit" in text:
        return f"a field is longer than {csv.field_size_limit() // 1024} KiB"
    return f"not valid CSV ({clip(text)})"


def read_csv_table(path: Path, expected: str) -> tuple[str, list[str], list[tuple[int, list[str]]]]:
    """(shown path, header, [(line, cells)]) of a CSV file with a header row; every OS,
    decoding and CSV error is an InputError naming the file (and the line)."""
    shown, text = read_text(path, expected, MAX_DATA_BYTES, encoding="utf-8-sig")
    rows = _csv_rows(text, shown)
    first = next(rows, None)
    header = [h.strip() for h in first[1]] if first else []
    return shown, header, [(line, cells) for line, cells in rows if cells]  # skip blank lines


def by_column(header: list[str], cells: list[str]) -> dict[str, str]:
    """One row's cells by column name (as ``csv.DictReader``: missing cells are blank)."""
    return dict(zip(header, cells + [""] * (len(header) - len(cells)), strict=False))


def read_measurements(path: Path) -> list[Measurement]:
    """Rows of a measurements CSV; a file that is not one is an InputError naming the file."""
    if path.suffix.lower() == ".json":
        return read_genai_perf_json(path)
    shown = display_path(path)
    # read row by row: neither the file's text nor its table of cells is held
    with _csv_lines(path, shown, "a measurements CSV or GenAI-Perf export") as lines:
        first = next(lines, None)
        header = [h.strip() for h in first[1]] if first else []
        table = ((line, cells) for line, cells in lines if cells)  # skip blank lines
        if "time_to_first_token" in " ".join(header).lower().replace(" ", "_") or (
            header and header[0].lower() == "metric"
        ):
            return read_genai_perf_csv(shown, list(table), header)
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise InputError(
                f"{shown}: missing column(s) {', '.join(missing)}; expected the measurements"
                f" schema ({', '.join(COLUMNS)}) or a GenAI-Perf export"
            )
        return [_row(shown, line, by_column(header, cells)) for line, cells in table]


#: Columns every row of ``estimate --points`` states.
POINT_REQUIRED = ("model", "hardware", "isl", "osl")
#: A points file states each row's load: closed-loop clients or an open-loop rate (requests/s).
POINT_LOAD = ("concurrency", "rate")
#: Ceilings of the number columns of ``estimate --points`` (``specs.common``).
POINT_CEILINGS: dict[str, int] = {
    "tp": MAX_PARALLEL,
    "pp": MAX_PARALLEL,
    "ep": MAX_PARALLEL,
    "dp": MAX_PARALLEL,
    "isl": MAX_TOKENS,
    "osl": MAX_TOKENS,
    "concurrency": MAX_COUNT,
}


def read_points(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows by column) of an ``estimate --points`` CSV, read whole (small files and
    tests; ``estimate --points`` reads :func:`open_points` in blocks); blank lines skipped
    (as ``csv.DictReader``); a file that cannot be read as one is an InputError naming it."""
    points = open_points(path)
    rows = [by_column(points.header, cells) for block in points.blocks() for _, cells in block.rows]
    return points.header, rows


#: Rows of a points file read together (:meth:`PointsFile.blocks`).
POINTS_BLOCK_ROWS = 4096


@dataclass(frozen=True)
class PointsBlock:
    """Consecutive rows of a points file: ``first`` is the index of the first (0 = the row
    after the header, blank lines not counted); ``rows`` are (line in the file, cells)."""

    first: int
    rows: list[tuple[int, list[str]]]


@dataclass(frozen=True)
class PointsFile:
    """An ``estimate --points`` CSV, checked whole without being held in memory: its header
    and how many rows it has (blank lines not counted). :meth:`blocks` reads it again, a block
    of rows at a time, so memory stays flat however many rows it has."""

    path: Path
    shown: str
    header: list[str]
    rows: int

    def blocks(
        self, size: int = POINTS_BLOCK_ROWS, start: int = 0, stop: int | None = None
    ) -> Iterator[PointsBlock]:
        """The rows in blocks of ``size`` aligned on the file's rows (0 to size − 1, size to
        2 · size − 1, …) that hold the rows ``start`` to ``stop`` (default: the last): a
        block is the same whichever part of the file is asked for. The rows before the first
        block are read and skipped. An error reading the file again (it changed meanwhile) is
        an InputError naming it and the line."""
        stop = self.rows if stop is None else min(stop, self.rows)
        if stop <= start:
            return
        low, high = start - start % size, min(self.rows, -(-stop // size) * size)
        index = 0
        block: list[tuple[int, list[str]]] = []
        with _csv_lines(self.path, self.shown) as rows:
            next(rows, None)  # the header
            for line, cells in rows:
                if not cells:
                    continue  # a blank line: no row
                if index >= high:
                    break
                if index >= low:
                    block.append((line, cells))
                    if len(block) == size:
                        yield PointsBlock(index + 1 - size, block)
                        block = []
                index += 1
        if block:
            yield PointsBlock(index - len(block), block)


def open_points(path: Path) -> PointsFile:
    """An ``estimate --points`` CSV, read through once: every OS, decoding and CSV error and a
    missing column is an InputError naming the file (and the line) before any row is used;
    the file is not held (no size limit)."""
    shown = display_path(path)
    with _csv_lines(path, shown) as rows:
        first = next(rows, None)
        header = [h.strip() for h in first[1]] if first else []
        count = sum(1 for _, cells in rows if cells)
    missing = [c for c in POINT_REQUIRED if c not in header]
    if not any(c in header for c in POINT_LOAD):
        missing.append("concurrency (or rate)")
    if missing:
        raise InputError(f"{shown}: missing column(s) {', '.join(missing)}")
    return PointsFile(path, shown, header, count)


@contextlib.contextmanager
def _csv_lines(
    path: Path, shown: str, expected: str = "a CSV of operating points"
) -> Iterator[Iterator[tuple[int, list[str]]]]:
    """(line, cells) of a CSV file as it is read (blank lines as empty cells), with the
    checks and messages of ``catalog.read_bytes``: a directory, FIFO or device is refused
    before it is opened; a file that is not UTF-8 text or cannot be read names the file."""
    try:
        _check_kind(os.stat(path).st_mode, shown, expected)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
        try:
            _check_kind(os.fstat(fd).st_mode, shown, expected)
            fh = open(fd, encoding="utf-8-sig", newline="", closefd=True)  # noqa: SIM115
        except BaseException:
            os.close(fd)
            raise
    except FileNotFoundError:
        raise CatalogError(shown, "", "file not found") from None
    except (OSError, ValueError) as err:  # ValueError: a NUL in the path
        why = getattr(err, "strerror", None) or str(err)
        raise CatalogError(shown, "", f"cannot be read ({why})") from None
    with fh:
        try:
            yield _csv_rows(fh, shown)
        except UnicodeDecodeError:
            raise CatalogError(shown, "", "is not UTF-8 text") from None
        except OSError as err:
            raise CatalogError(shown, "", f"cannot be read ({err.strerror or err})") from None


def _point_cell(row: dict[str, str], name: str, line: int, default: float | None) -> float | None:
    """A points row's cell as a finite number; ``default`` when blank (an InputError naming the
    row and column when blank without a default, or not a finite number)."""
    text = (row.get(name) or "").strip()
    if not text:
        if default is None:
            raise InputError(f"row {line}: {name}: required")
        return None
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"row {line}: {name}: not a number ({brief(text)})") from None
    if not math.isfinite(value):
        raise InputError(f"row {line}: {name}: expected a finite number (got {brief(text)})")
    return value


def point_int(row: dict[str, str], name: str, line: int, default: int | None = None) -> int:
    """A whole number >= 1 of a points row (``default`` when blank, if given), under the
    column's ceiling; an InputError naming the row and column otherwise."""
    text = row.get(name) or ""
    if text.isascii() and text.isdigit():  # the common cell, read without a float
        whole = int(text)
        if 1 <= whole <= POINT_CEILINGS.get(name, MAX_COUNT):
            return whole
    value = _point_cell(row, name, line, default)
    if value is None:
        assert default is not None
        return default
    if int(value) < 1:
        raise InputError(f"row {line}: {name}: must be at least 1 (got {int(value)})")
    ceiling = POINT_CEILINGS.get(name, MAX_COUNT)
    if value > ceiling:
        text = (row.get(name) or "").strip()
        raise InputError(f"row {line}: {name}: must be at most {ceiling:,} (got {brief(text)})")
    return int(value)


def point_float(
    row: dict[str, str], name: str, line: int, high: float, default: float | None = None
) -> float:
    """A number above 0 and at most ``high`` of a points row (``default`` when blank, if
    given); an InputError naming the row and column otherwise."""
    value = _point_cell(row, name, line, default)
    if value is None:
        assert default is not None
        return default
    if not 0 < value <= high:
        text = (row.get(name) or "").strip()
        raise InputError(
            f"row {line}: {name}: expected a number above 0 and at most {high:g}"
            f" (got {brief(text)})"
        )
    return value


def dedupe(rows: list[Measurement]) -> list[Measurement]:
    """Drop rows that repeat another row's operating point, metric and value (files overlap)."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for m in rows:
        key = (
            m.source,
            m.model,
            m.gpu,
            m.precision,
            m.tp,
            m.pp,
            m.isl,
            m.osl,
            m.concurrency,
            m.metric,
            m.value,
            m.engine_version,
        )
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


_DUPLICATE_OF = re.compile(r"likely duplicate of ([A-Za-z0-9_]+)")


def marked_duplicates(
    rows: list[Measurement],
) -> tuple[list[Measurement], list[tuple[Measurement, str]]]:
    """(rows kept, rows dropped with why): a row its source marks "likely duplicate of S" (the
    same point published by source S, within 2 %) is dropped when rows of S are read too, so
    the point counts once; without S it is the only copy and is kept."""
    sources = {m.source for m in rows}
    kept: list[Measurement] = []
    dropped: list[tuple[Measurement, str]] = []
    for m in rows:
        dup = _DUPLICATE_OF.search(m.notes)
        if dup and dup.group(1) in sources:
            dropped.append((m, f"likely duplicate of a row of {dup.group(1)} (counted once)"))
        else:
            kept.append(m)
    return kept, dropped


_LEADING_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)")


def _row(shown: str, line: int, r: dict[str, str]) -> Measurement:
    where = f"{shown}: row {line}"
    text = r.get("value", "") or ""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: value: not a number ({brief(text)})") from None
    if not math.isfinite(value) or value < 0:
        raise InputError(
            f"{where}: value: expected a finite measurement >= 0 (got {brief(text)});"
            " fix or remove the row"
        )
    concurrency = (r.get("concurrency_or_batch", "") or "").strip()
    lead = _LEADING_NUMBER.match(concurrency)
    if lead:
        _number(lead.group(1), where, "concurrency_or_batch")

    def cell(column: str) -> str:
        return r.get(column, "") or ""

    return Measurement(
        row=line,
        source=cell("source"),
        model=cell("model"),
        gpu=cell("gpu"),
        num_gpus=_int(cell("num_gpus"), where, "num_gpus"),
        precision=cell("precision").lower(),
        kv_precision=cell("kv_precision").lower(),
        tp=_int(cell("tp"), where, "tp"),
        pp=_int(cell("pp"), where, "pp"),
        ep=_int(cell("ep"), where, "ep"),
        isl=_number(cell("isl"), where, "isl"),
        osl=_number(cell("osl"), where, "osl"),
        concurrency=concurrency,
        metric=r.get("metric", "") or "",
        value=value,
        unit=r.get("unit", "") or "",
        engine=r.get("engine", "") or "",
        engine_version=r.get("engine_version", "") or "",
        notes=r.get("notes", "") or "",
        tp_cell=cell("tp"),
        ep_cell=cell("ep"),
    )


GENAI_SOURCE = "genai-perf"

# GenAI-Perf `profile_export_genai_perf.json`: {"time_to_first_token": {"unit": "ms",
# "avg": …, "p50": …}, "inter_token_latency": {…}, "request_latency": {…},
# "request_throughput": {"unit": "requests/sec", "avg": …},
# "output_token_throughput": {"unit": "tokens/sec", "avg": …}, "input_config": {…}}.
_GENAI_METRICS = {
    "time_to_first_token": "ttft_ms_avg",
    "inter_token_latency": "itl_ms_avg",
    "request_latency": "e2e_ms_avg",
    "request_throughput": "req_per_s",
    "output_token_throughput": "output_tok_s_total",
}


#: Digits of the longest integer a JSON export may hold (longer ones are not converted).
_MAX_DIGITS = 100


def _json_int(text: str) -> int | float:
    return int(text) if len(text) <= _MAX_DIGITS else math.inf


def read_genai_perf_json(path: Path) -> list[Measurement]:
    shown, text = read_text(path, "a GenAI-Perf profile export", MAX_DATA_BYTES)
    try:
        data = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as err:
        raise InputError(f"{shown}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}") from None
    except RecursionError:
        raise InputError(f"{shown}: nested too deeply to read") from None
    if not isinstance(data, dict):
        raise InputError(f"{shown}: expected a GenAI-Perf profile export (a JSON object)")
    config = data.get("input_config", {}) if isinstance(data.get("input_config"), dict) else {}
    out = []
    for i, (key, metric) in enumerate(_GENAI_METRICS.items()):
        stat = data.get(key)
        if isinstance(stat, dict) and "avg" in stat:
            avg = stat["avg"]
            if (
                isinstance(avg, bool)
                or not isinstance(avg, int | float)
                or not math.isfinite(avg)
                or avg < 0
            ):
                raise InputError(
                    f"{shown}: {key}.avg: expected a finite number >= 0 (got {brief(avg)})"
                )
            out.append(_genai(i, metric, float(avg), config))
    if not out:
        raise InputError(
            f"{shown}: no GenAI-Perf metrics found (expected keys like time_to_first_token)"
        )
    return out


def read_genai_perf_csv(
    shown: str, table: list[tuple[int, list[str]]], header: list[str]
) -> list[Measurement]:
    """GenAI-Perf `profile_export_genai_perf.csv`: a table `Metric,avg,min,max,p99,…` then
    `Metric,Value` rows for throughputs (``table``: the rows after ``header``)."""
    out = []
    for line, cells in table:
        if len(cells) < 2:
            continue
        name_cell, value_cell = cells[0], cells[1]
        # "Output Token Throughput (tokens/sec)" is the metric; "Output Token Throughput Per
        # User (tokens/sec/user)" is another one: match the whole name before the unit.
        name = name_cell.strip().lower().replace(" ", "_").split("_(")[0]
        metric = _GENAI_METRICS.get(name)
        if metric is None:
            continue
        try:
            value = float(value_cell.replace(",", ""))
        except ValueError:
            continue
        if not math.isfinite(value) or value < 0:
            raise InputError(
                f"{shown}: line {line}: {brief(name_cell.strip())[1:-1]}: expected a finite"
                f" number >= 0 (got {brief(value_cell)})"
            )
        out.append(_genai(line - 1, metric, value, {}))
    if not out:
        raise InputError(f"{shown}: no GenAI-Perf metrics found in the CSV export")
    return out


def _genai(i: int, metric: str, value: float, config: dict[str, Any]) -> Measurement:
    model = config.get("model", "")
    if isinstance(model, list):  # GenAI-Perf stores a list of served model names
        model = model[0] if model else ""
    return Measurement(
        row=i + 1,
        source=GENAI_SOURCE,
        model=str(model or ""),
        gpu="",
        num_gpus=None,
        precision="",
        kv_precision="",
        tp=None,
        pp=None,
        ep=None,
        isl=None,
        osl=None,
        concurrency=str(config.get("concurrency", ""))[:100],
        metric=metric,
        value=value,
        unit="",
        engine="genai-perf",
        engine_version="",
    )


_LIKELY = re.compile(r"^\s*([a-z0-9]+)\s*\(likely\b")


def stated_precision(text: str) -> str:
    """A precision cell: the precision, or the one a source marks as likely ("bf16 (likely: no
    quant mode given; BF16 checkpoint)" reads as bf16: the checkpoint's own precision)."""
    likely = _LIKELY.match(text)
    return likely.group(1) if likely else text
