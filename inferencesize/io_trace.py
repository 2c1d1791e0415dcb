"""Reading request traces and writing per-request results (CSV).

A trace has a header row and one request per row with the columns ``arrival_s`` (seconds
from the start, >= 0), ``isl`` and ``osl`` (tokens, integers >= 1); other columns are
ignored. Errors name the file, the line and the column: a time that is negative, not finite
or after 10^9 s, a length that is not a whole number from 1 to 100,000,000 tokens, and every
OS, decoding and CSV error (``io_measurements``).

The file is read as it is parsed, :data:`BLOCK_ROWS` rows at a time (numbers converted and
checked for a whole block at once; a block with a bad cell is read again row by row for the
message), so its size is not limited and its text is never held. :func:`read_trace` holds the
requests (the simulator replays them all); :func:`read_trace_traffic` holds only the first
:data:`~inferencesize.trace_traffic.REPLAY_MAX_REQUESTS` and gathers the figures of the rest
in one pass, so a trace of 10^7 requests takes the memory of one of 2·10^5. Rows need not be
sorted, except in a trace longer than that (its requests are then taken in file order, and a
row arriving before the one above it is an error naming the line).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inferencesize.catalog import display_path
from inferencesize.errors import InputError
from inferencesize.io_measurements import _csv_lines, by_column
from inferencesize.simulate.arrivals import FloatArray, IntArray, Workload
from inferencesize.simulate.engine import SimResult
from inferencesize.simulate.stats import per_request
from inferencesize.specs.common import MAX_TOKENS, brief, clip
from inferencesize.trace_traffic import (
    REPLAY_MAX_REQUESTS,
    TraceFigures,
    TraceTraffic,
    streamed_traffic,
    trace_traffic,
)

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


#: Rows of a trace parsed and checked together.
BLOCK_ROWS = 16_384


@dataclass(frozen=True)
class _Block:
    """Consecutive requests of a trace file, as they stand in it."""

    arrival_s: FloatArray
    isl: IntArray
    osl: IntArray
    lines: IntArray  # the line of each in the file


def _blocks(path: Path) -> Iterator[_Block]:
    """The requests of a trace CSV, :data:`BLOCK_ROWS` rows at a time, each checked (module
    docstring); InputError naming the file (and the line and column) for anything wrong."""
    name = str(path)
    with _csv_lines(path, display_path(path), "a trace CSV") as rows:
        first = next(rows, None)
        header = [h.strip() for h in first[1]] if first else []
        missing = [c for c in TRACE_COLUMNS if c not in header]
        if missing:
            got = ", ".join(clip(h, 40) for h in header[:20]) if header else "no header"
            raise InputError(
                f"{name}: missing column {', '.join(missing)}: a trace needs the columns "
                f"{', '.join(TRACE_COLUMNS)} (got {clip(got)})"
            )
        # a column named twice: its last cell, as a row read by name (by_column) has it
        at = [len(header) - 1 - header[::-1].index(c) for c in TRACE_COLUMNS]
        block: list[tuple[int, list[str]]] = []
        for line, cells in rows:
            if not cells:  # a blank line
                continue
            block.append((line, cells))
            if len(block) == BLOCK_ROWS:
                yield _parsed(block, header, at, name)
                block = []
        if block:
            yield _parsed(block, header, at, name)


def _parsed(
    block: list[tuple[int, list[str]]], header: list[str], at: list[int], name: str
) -> _Block:
    """A block's requests: its cells converted and checked at once; a block with a bad cell
    (or a short row) is read again row by row, which raises the row's own message."""
    try:
        t, i, o = (np.array([float(cells[k]) for _, cells in block]) for k in at)
        ok = bool(np.all(np.isfinite(t) & (t >= 0) & (t <= MAX_ARRIVAL_S))) and all(
            bool(np.all(np.isfinite(n) & (n >= 1) & (n <= MAX_TOKENS) & (n == np.floor(n))))
            for n in (i, o)
        )
    except (ValueError, IndexError):
        ok = False
    if not ok:
        t, i, o = _checked(block, header, name)
    return _Block(
        arrival_s=t.astype(np.float64),
        isl=i.astype(np.int64),
        osl=o.astype(np.int64),
        lines=np.array([line for line, _ in block], dtype=np.int64),
    )


def _checked(
    block: list[tuple[int, list[str]]], header: list[str], name: str
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """A block read row by row, each cell checked in order (the first bad one raises)."""
    columns: tuple[list[float], list[float], list[float]] = ([], [], [])
    for line, cells in block:
        row = by_column(header, cells)
        where = f"{name}: line {line}"
        for column, values in zip(TRACE_COLUMNS, columns, strict=True):
            text = (row.get(column) or "").strip()
            values.append(_number(text, where, column, column != "arrival_s"))
    t, i, o = (np.array(c, dtype=np.float64) for c in columns)
    return t, i, o


def read_trace(path: Path) -> Workload:
    """The requests of a trace CSV as an open-loop workload, sorted by arrival time."""
    parts = list(_blocks(path))
    if not parts:
        raise InputError(f"{path}: no requests (a header and at least one row are needed)")
    times = np.concatenate([b.arrival_s for b in parts])
    order = np.argsort(times, kind="stable")
    return Workload(
        isl=np.concatenate([b.isl for b in parts])[order],
        osl=np.concatenate([b.osl for b in parts])[order],
        arrival_s=times[order],
    )


def read_trace_traffic(
    path: Path, source: str, max_cv: float, keep: int | None = None
) -> TraceTraffic:
    """The traffic of a trace CSV (:mod:`inferencesize.trace_traffic`), read in one pass: a
    trace of at most ``keep`` requests is held whole (sorted, its figures as
    :func:`~inferencesize.trace_traffic.trace_traffic` gives them); a longer one, in arrival
    order in the file, keeps its first ``keep`` requests to replay and gathers the figures of
    all (:class:`~inferencesize.trace_traffic.TraceFigures`). InputError for the file (as
    :func:`read_trace`, and a longer trace with a row arriving before the one above it);
    ValueError for a trace that gives no traffic. ``keep``: :data:`REPLAY_MAX_REQUESTS`
    unless given."""
    keep = REPLAY_MAX_REQUESTS if keep is None else keep
    figures = TraceFigures()
    held_t = np.empty(keep)
    held_isl = np.empty(keep, dtype=np.int64)
    held_osl = np.empty(keep, dtype=np.int64)
    disorder: tuple[int, float, float] | None = None  # (line, its time, the time above it)
    for b in _blocks(path):
        start = figures.requests
        if start < keep:
            take = min(len(b.arrival_s), keep - start)
            held_t[start : start + take] = b.arrival_s[:take]
            held_isl[start : start + take] = b.isl[:take]
            held_osl[start : start + take] = b.osl[:take]
        if disorder is None:
            previous = figures.last_s if start else float(b.arrival_s[0])
            back = np.flatnonzero(np.diff(b.arrival_s, prepend=previous) < 0)
            if len(back):
                k = int(back[0])
                above = float(b.arrival_s[k - 1]) if k else figures.last_s
                disorder = (int(b.lines[k]), float(b.arrival_s[k]), above)
        figures.add(b.arrival_s, b.isl, b.osl)
        if disorder is not None and figures.requests > keep:
            line, time, above = disorder
            raise InputError(
                f"{path}: line {line}: arrival_s: {time:g} s comes before the row above"
                f" ({above:g} s): a trace of more than {keep:,} requests must list them in"
                " arrival order (sort its rows by arrival_s)"
            )
    if figures.requests == 0:
        raise InputError(f"{path}: no requests (a header and at least one row are needed)")
    n = min(figures.requests, keep)
    t, isl, osl = held_t[:n], held_isl[:n], held_osl[:n]
    if figures.requests <= keep:  # held whole: sorted, the figures of the whole in memory
        order = np.argsort(t, kind="stable")
        return trace_traffic(Workload(isl[order], osl[order], t[order]), source, max_cv)
    return streamed_traffic(figures, Workload(isl.copy(), osl.copy(), t.copy()), source, max_cv)


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
