"""Reading request traces and writing per-request results (CSV).

A trace is one request per row or JSON line, in any layout :mod:`inferencesize.io_trace_formats`
reads (our ``arrival_s,isl,osl``, the Azure LLM inference traces as published, JSONL), checked
as it is read (errors name the file, the line and the column; rows of 0 tokens are skipped and
counted).

The file is read as it is parsed, a block of rows at a time, so its size is not limited and
its text is never held. :func:`read_trace` holds the requests (the simulator replays them
all); :func:`read_trace_traffic` holds only the first
:data:`~inferencesize.trace_traffic.REPLAY_MAX_REQUESTS` and gathers the figures of the rest
in one pass, so a trace of 10^7 requests takes the memory of one of 2·10^5. Rows need not be
sorted, except in a trace longer than that (its requests are then taken in file order, and a
row arriving before the one above it is an error naming the line).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from inferencesize.errors import InputError
from inferencesize.io_trace_formats import Block, Reading, read_blocks
from inferencesize.simulate.arrivals import Workload
from inferencesize.simulate.engine import SimResult
from inferencesize.simulate.stats import per_request
from inferencesize.trace_conversations import Reuse
from inferencesize.trace_traffic import (
    REPLAY_MAX_REQUESTS,
    TraceFigures,
    TraceTraffic,
    streamed_traffic,
    trace_traffic,
)
from inferencesize.trace_windows import DEFAULT_WINDOW_S, Windows

TRACE_COLUMNS = ("arrival_s", "isl", "osl")


def _blocks(path: Path, reading: Reading | None = None) -> Iterator[Block]:
    """The requests of a trace file, a block of rows at a time
    (:func:`~inferencesize.io_trace_formats.read_blocks`)."""
    return read_blocks(path, Reading() if reading is None else reading)


def _no_requests(
    path: Path, reading: Reading, slice_s: tuple[float, float] | None = None
) -> InputError:
    skipped = f" ({reading.skipped_note()})" if reading.skipped else ""
    if slice_s is not None:
        low, high = slice_s
        return InputError(
            f"{path}: no requests arrive from {low:g} s to {high:g} s (--trace-window){skipped}"
        )
    return InputError(f"{path}: no requests (a header and at least one row are needed){skipped}")


def read_trace(path: Path) -> Workload:
    """The requests of a trace file as an open-loop workload, sorted by arrival time, the
    first at 0 when its times are taken from a ``timestamp`` column."""
    reading = Reading()
    parts = list(_blocks(path, reading))
    if not parts:
        raise _no_requests(path, reading)
    times = np.concatenate([b.arrival_s for b in parts])
    order = np.argsort(times, kind="stable")
    times = times[order]
    if reading.origin is not None or reading.origin_ns is not None:
        times = times - times[0]
    return Workload(
        isl=np.concatenate([b.isl for b in parts])[order],
        osl=np.concatenate([b.osl for b in parts])[order],
        arrival_s=times,
    )


def read_trace_traffic(
    path: Path,
    source: str,
    max_cv: float,
    keep: int | None = None,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    slice_s: tuple[float, float] | None = None,
    scale: float = 1.0,
) -> TraceTraffic:
    """The traffic of a trace file (:mod:`inferencesize.trace_traffic`), read in one pass: a
    trace of at most ``keep`` requests is held whole (sorted, its figures as
    :func:`~inferencesize.trace_traffic.trace_traffic` gives them); a longer one, in arrival
    order in the file, keeps its first ``keep`` requests to replay and gathers the figures of
    all (:class:`~inferencesize.trace_traffic.TraceFigures`). InputError for the file (as
    :func:`read_trace`, and a longer trace with a row arriving before the one above it);
    ValueError for a trace that gives no traffic. ``keep``: :data:`REPLAY_MAX_REQUESTS`
    unless given. ``slice_s`` (A, B): only the requests arriving in [A, B) s on the trace's
    clock (``--trace-window``); the trace is cut into windows of ``window_s``
    (:mod:`inferencesize.trace_windows`), its rates times ``scale`` (``--trace-scale``)."""
    keep = REPLAY_MAX_REQUESTS if keep is None else keep
    reading = Reading()
    figures = TraceFigures()
    held_t = np.empty(keep)
    held_isl = np.empty(keep, dtype=np.int64)
    held_osl = np.empty(keep, dtype=np.int64)
    held_conversation = np.full(keep, -1, dtype=np.int64)
    reuse = Reuse()  # in file order; a held trace out of order is gathered again once sorted
    disorder: tuple[int, float, float] | None = None  # (line, its time, the time above it)
    windows = Windows(window_s)  # in file order; a held trace is cut again once sorted
    for b in _blocks(path, reading):
        if slice_s is not None:
            b = _within(b, *slice_s)
        start = figures.requests
        if start < keep:
            take = min(len(b.arrival_s), keep - start)
            held_t[start : start + take] = b.arrival_s[:take]
            held_isl[start : start + take] = b.isl[:take]
            held_osl[start : start + take] = b.osl[:take]
            if b.conversation is not None:
                held_conversation[start : start + take] = b.conversation[:take]
        if disorder is None and len(b.arrival_s):
            previous = figures.last_s if start else float(b.arrival_s[0])
            back = np.flatnonzero(np.diff(b.arrival_s, prepend=previous) < 0)
            if len(back):
                k = int(back[0])
                above = float(b.arrival_s[k - 1]) if k else figures.last_s
                disorder = (int(b.lines[k]), float(b.arrival_s[k]), above)
        figures.add(b.arrival_s, b.isl, b.osl)
        if disorder is None:
            windows.add(b.arrival_s, b.isl, b.osl)
            if b.conversation is not None:
                reuse.add(b.arrival_s, b.isl, b.osl, b.conversation)
        if disorder is not None and figures.requests > keep:
            line, time, above = disorder
            name = reading.arrival_column
            raise InputError(
                f"{path}: line {line}: {name}: {time:g} s comes before the row above"
                f" ({above:g} s): a trace of more than {keep:,} requests must list them in"
                f" arrival order (sort its rows by {name})"
            )
    if figures.requests == 0:
        raise _no_requests(path, reading, slice_s)
    n = min(figures.requests, keep)
    t, isl, osl = held_t[:n], held_isl[:n], held_osl[:n]
    if figures.requests <= keep:  # held whole: sorted, the figures of the whole in memory
        order = np.argsort(t, kind="stable")
        t, isl, osl = t[order], isl[order], osl[order]
        traffic = trace_traffic(Workload(isl, osl, t), source, max_cv)
        windows = Windows(window_s)
        windows.add(t, isl, osl)
        if reading.conversations and disorder is not None:  # gathered again in order
            reuse = Reuse()
            reuse.add(t, isl, osl, held_conversation[:n][order])
    else:
        replay = Workload(isl.copy(), osl.copy(), t.copy())
        traffic = streamed_traffic(figures, replay, source, max_cv)
    traffic = traffic.read_as(reading.layout, reading.skipped, reading.skipped_note())
    if reading.conversations:
        traffic = traffic.with_reuse(reuse)
    return traffic.cut(windows.result(scale), window_s, scale, slice_s)


def _within(b: Block, low: float, high: float) -> Block:
    """The requests of ``b`` arriving in [low, high) s."""
    keep = (b.arrival_s >= low) & (b.arrival_s < high)
    if bool(keep.all()):
        return b
    conversation = None if b.conversation is None else b.conversation[keep]
    return Block(b.arrival_s[keep], b.isl[keep], b.osl[keep], b.lines[keep], conversation)


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


def request_columns(res: SimResult) -> tuple[Any, ...]:
    """The per-request columns of :data:`REQUEST_COLUMNS`, in that order, one array each."""
    pr = per_request(res)
    return (
        np.arange(len(res.arrival_s), dtype=np.int64),
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


def request_blocks(res: SimResult, rows: int = 65_536) -> Iterator[str]:
    """The per-request CSV in blocks of whole rows: the header, then ``rows`` requests a block
    (dropped requests have empty times)."""
    columns = request_columns(res)
    n = len(res.arrival_s)
    yield ",".join(REQUEST_COLUMNS) + "\n"
    for start in range(0, n, rows):
        values = zip(*(c[start : start + rows].tolist() for c in columns), strict=True)
        yield "".join(map(_REQUEST_ROW.__mod__, values)).replace("nan", "")


def requests_csv(res: SimResult) -> str:
    """One row per request (dropped requests have empty times)."""
    return "".join(request_blocks(res))
