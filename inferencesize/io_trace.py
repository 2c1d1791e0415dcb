"""Reading request traces and writing per-request results (CSV).

A trace has a header row and one request per row with the columns ``arrival_s`` (seconds
from the start, >= 0), ``isl`` and ``osl`` (tokens, integers >= 1); other columns are
ignored. Rows need not be sorted. Errors name the file, the line and the column: a time that
is negative, not finite or after 10^9 s, a length that is not a whole number from 1 to
100,000,000 tokens, and every OS, decoding and CSV error (``io_measurements.read_csv_table``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from inferencesize.errors import InputError
from inferencesize.io_measurements import by_column, read_csv_table
from inferencesize.simulate.arrivals import Workload
from inferencesize.simulate.engine import SimResult
from inferencesize.simulate.stats import per_request
from inferencesize.specs.common import MAX_TOKENS, brief, clip

TRACE_COLUMNS = ("arrival_s", "isl", "osl")


#: Latest arrival a trace may state: 10^9 s (about 32 years).
MAX_ARRIVAL_S = 1e9


def _number(text: str, where: str, column: str, integer: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: {column}: expected a number (got {brief(text)})") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: {column}: expected a finite number (got {brief(text)})")
    if column == "arrival_s" and value < 0:
        raise InputError(f"{where}: {column}: must be >= 0 seconds (got {clip(text, 40)})")
    if column == "arrival_s" and value > MAX_ARRIVAL_S:
        raise InputError(
            f"{where}: {column}: must be at most {MAX_ARRIVAL_S:g} seconds (got {clip(text, 40)})"
        )
    if integer and (value < 1 or value != int(value)):
        raise InputError(
            f"{where}: {column}: expected a whole number of tokens >= 1 (got {clip(text, 40)})"
        )
    if integer and value > MAX_TOKENS:
        raise InputError(
            f"{where}: {column}: must be at most {MAX_TOKENS:,} tokens (got {clip(text, 40)})"
        )
    return value


def read_trace(path: Path) -> Workload:
    """The requests of a trace CSV as an open-loop workload, sorted by arrival time."""
    name = str(path)
    _, header, table = read_csv_table(path, "a trace CSV")
    missing = [c for c in TRACE_COLUMNS if c not in header]
    if missing:
        got = ", ".join(clip(h, 40) for h in header[:20]) if header else "no header"
        raise InputError(
            f"{name}: missing column {', '.join(missing)}: a trace needs the columns "
            f"{', '.join(TRACE_COLUMNS)} (got {clip(got)})"
        )
    times: list[float] = []
    isl: list[int] = []
    osl: list[int] = []
    for line, cells in table:
        row = by_column(header, cells)
        where = f"{name}: line {line}"
        values = {c: (row.get(c) or "").strip() for c in TRACE_COLUMNS}
        times.append(_number(values["arrival_s"], where, "arrival_s", False))
        isl.append(int(_number(values["isl"], where, "isl", True)))
        osl.append(int(_number(values["osl"], where, "osl", True)))
    if not times:
        raise InputError(f"{name}: no requests (a header and at least one row are needed)")
    order = np.argsort(np.asarray(times), kind="stable")
    return Workload(
        isl=np.asarray(isl, dtype=np.int64)[order],
        osl=np.asarray(osl, dtype=np.int64)[order],
        arrival_s=np.asarray(times, dtype=float)[order],
    )


REQUEST_COLUMNS = (
    "request",
    "instance",
    "arrival_s",
    "isl",
    "osl",
    "queue_s",
    "ttft_s",
    "itl_s",
    "e2e_s",
    "done_s",
)


#: One request's CSV row: integers, then seconds to the microsecond ("nan": dropped, empty).
_REQUEST_ROW = "%d,%d,%.6f,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n"


def request_blocks(res: SimResult, rows: int = 65_536) -> Iterator[str]:
    """The per-request CSV in blocks of whole rows: the header, then ``rows`` requests a block
    (dropped requests have empty times)."""
    pr = per_request(res)
    n = len(res.arrival_s)
    columns = (
        np.arange(n),
        res.instance,
        res.arrival_s,
        res.isl,
        res.osl,
        pr.queue_s,
        pr.ttft_s,
        pr.itl_s,
        pr.e2e_s,
        res.done_s,
    )
    yield ",".join(REQUEST_COLUMNS) + "\n"
    for start in range(0, n, rows):
        values = zip(*(c[start : start + rows].tolist() for c in columns), strict=True)
        yield "".join(map(_REQUEST_ROW.__mod__, values)).replace("nan", "")


def requests_csv(res: SimResult) -> str:
    """One row per request (dropped requests have empty times)."""
    return "".join(request_blocks(res))
