"""The layouts a request trace comes in, detected from its first line, read in blocks.

- **CSV** with a header row naming, in any order and any case (other columns are ignored):
  the arrival, ``arrival_s`` (seconds from the start, >= 0) or ``timestamp`` (seconds, or a
  date and time such as ``2023-11-16 18:17:03.9799600``; either is taken from the first
  row's); the prompt, ``isl``, ``input_tokens`` or ``ContextTokens``; the answer, ``osl``,
  ``output_tokens`` or ``GeneratedTokens``; optionally the conversation, ``conversation_id``
  or ``conversation`` (empty or null: a request of no conversation). The Azure LLM inference traces (``TIMESTAMP,ContextTokens,
  GeneratedTokens``) are read as they are published.
- **JSONL**: one JSON object a line (the first non-blank character of the file is ``{``),
  with the same keys, the first object's keys deciding which.

A row whose prompt or answer is 0 tokens (a request that was cancelled or failed before its
first token; published traces have them) is skipped and counted (:attr:`Reading.skipped`),
never dropped unsaid. Everything else wrong is an InputError naming the file, the line and
the column: an arrival that is not a finite number (or a date-time), negative, or over
10^9 s from the first; a length that is not a whole number, negative or over
:data:`~inferencesize.specs.common.MAX_TOKENS`; a line that is not a JSON object; a file that
is binary, not UTF-8, empty or has no column the layouts name (``io_measurements`` for OS
and CSV errors). Rows are converted :data:`BLOCK_ROWS` at a time with numpy, so memory does
not grow with the file; a block with a bad cell is read again row by row for the message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from inferencesize.catalog import display_path
from inferencesize.errors import InputError
from inferencesize.io_measurements import _csv_lines
from inferencesize.simulate.arrivals import FloatArray, IntArray
from inferencesize.specs.common import MAX_TOKENS, brief, clip

#: Latest arrival a trace may state: 10^9 s (about 32 years) after its start.
MAX_ARRIVAL_S = 1e9
#: Rows of a trace parsed and checked together.
BLOCK_ROWS = 16_384

#: The names each field goes by (lower case), the first the one messages suggest.
NAMES: dict[str, tuple[str, ...]] = {
    "arrival": ("arrival_s", "timestamp"),
    "isl": ("isl", "input_tokens", "contexttokens"),
    "osl": ("osl", "output_tokens", "generatedtokens"),
    "conversation": ("conversation_id", "conversation"),
}
#: A conversation cell that names none (the request stands alone): empty, or JSON null.
NO_CONVERSATION = ("", "null")
#: The fields a trace must have.
REQUIRED = ("arrival", "isl", "osl")
#: What a file with none of the names is told to have.
LAYOUTS = (
    "a trace needs the columns arrival_s, isl, osl (or the Azure trace's TIMESTAMP,"
    " ContextTokens, GeneratedTokens, or JSONL keys arrival_s/timestamp,"
    " input_tokens/isl, output_tokens/osl)"
)


@dataclass(frozen=True)
class Block:
    """Consecutive requests of a trace file, as they stand in it (skipped rows left out)."""

    arrival_s: FloatArray
    isl: IntArray
    osl: IntArray
    lines: IntArray  # the line of each in the file
    #: Each request's conversation, numbered from 0 in order of first appearance (-1: none).
    conversation: IntArray | None = None


@dataclass
class Reading:
    """What reading a trace found besides its requests: its layout, the rows skipped (a
    prompt or answer of 0 tokens) and the first of them."""

    layout: str = ""
    arrival_column: str = "arrival_s"  # as the file names it
    skipped: int = 0
    first_skipped_line: int = 0
    #: The first row's time (a ``timestamp`` column: the origin of arrival_s), in seconds.
    origin: float | None = None
    origin_ns: int | None = None  # a date-time column: the first row's, in ns since 1970
    conversations: dict[str, int] = field(default_factory=dict)

    def skipped_note(self) -> str:
        """The rows skipped, for output ("" when none)."""
        if not self.skipped:
            return ""
        return (
            f"{self.skipped:,} row(s) with a prompt or answer of 0 tokens skipped"
            f" (the first on line {self.first_skipped_line})"
        )


@dataclass(frozen=True)
class _Columns:
    """Where each field stands: its name in the file and (CSV) its column."""

    names: dict[str, str]
    at: dict[str, int]
    relative: bool  # a ``timestamp`` (from the first row), not ``arrival_s``


def _columns(header: list[str], shown: str, line: int) -> _Columns:
    lowered = [h.strip().lower() for h in header]
    names: dict[str, str] = {}
    at: dict[str, int] = {}
    for role, aliases in NAMES.items():
        found = [a for a in aliases if a in lowered]
        if len(found) > 1:
            both = " and ".join(header[lowered.index(a)] for a in found)
            raise InputError(f"{shown}: line {line}: both {both} name the {role}: keep one")
        if found:
            k = len(lowered) - 1 - lowered[::-1].index(found[0])  # named twice: the last
            names[role], at[role] = header[k].strip(), k
    missing = [NAMES[r][0] + (" (or timestamp)" if r == "arrival" else "") for r in REQUIRED]
    missing = [m for r, m in zip(REQUIRED, missing, strict=True) if r not in names]
    if missing:
        got = ", ".join(clip(h, 40) for h in header[:20]) if header else "no header"
        raise InputError(
            f"{shown}: missing column {', '.join(missing)}: {LAYOUTS} (got {clip(got)})"
        )
    return _Columns(names, at, names["arrival"].lower() == "timestamp")


def _binary(text: str) -> bool:
    return "\x00" in text or any(ord(c) < 32 and c not in "\t\r\n" for c in text[:4096])


def read_blocks(path: Path, reading: Reading) -> Iterator[Block]:
    """The requests of a trace file in blocks of at most :data:`BLOCK_ROWS` (module
    docstring), filling ``reading`` as it goes; InputError for anything wrong."""
    shown = str(path)
    with _csv_lines(path, display_path(path), "a trace CSV") as rows:
        first = next(rows, None)
        while first is not None and not first[1]:
            first = next(rows, None)
        if first is None:
            raise InputError(f"{shown}: empty: {LAYOUTS}")
        line, header = first
        if _binary(",".join(header)):
            raise InputError(f"{shown}: line {line}: binary data, not a trace: {LAYOUTS}")
        if ",".join(header).lstrip().startswith("{"):
            jsonl = True
        else:
            jsonl = False
            cols = _columns(header, shown, line)
            reading.layout = (
                "Azure LLM inference trace"
                if [h.strip() for h in header[:3]]
                == ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
                else "CSV"
            )
            reading.arrival_column = cols.names["arrival"]
            yield from _csv_blocks(rows, cols, shown, reading)
    if jsonl:
        reading.layout = "JSONL"
        yield from _jsonl_blocks(path, shown, reading)


def _csv_blocks(
    rows: Iterator[tuple[int, list[str]]], cols: _Columns, shown: str, reading: Reading
) -> Iterator[Block]:
    block: list[tuple[int, list[str]]] = []
    width = max(cols.at.values()) + 1
    for line, cells in rows:
        if not cells:  # a blank line
            continue
        if len(cells) < width:
            cells = cells + [""] * (width - len(cells))
        block.append((line, cells))
        if len(block) == BLOCK_ROWS:
            yield _parsed(block, cols, shown, reading)
            block = []
    if block:
        yield _parsed(block, cols, shown, reading)


def _jsonl_blocks(path: Path, shown: str, reading: Reading) -> Iterator[Block]:
    cols: _Columns | None = None
    block: list[tuple[int, list[str]]] = []
    try:
        with path.open(encoding="utf-8-sig") as fh:
            for line, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                record = _record(text, shown, line)
                if cols is None:
                    keys = _columns(list(record), f"{shown} (JSONL keys)", line)
                    reading.arrival_column = keys.names["arrival"]
                    at = {role: k for k, role in enumerate(keys.names)}  # cells in role order
                    cols = _Columns(keys.names, at, keys.relative)
                block.append((line, [_text(record.get(k)) for k in cols.names.values()]))
                if len(block) == BLOCK_ROWS:
                    yield _parsed(block, cols, shown, reading)
                    block = []
    except UnicodeDecodeError:
        raise InputError(f"{shown}: is not UTF-8 text") from None
    except OSError as err:
        raise InputError(f"{shown}: cannot be read ({err.strerror or err})") from None
    if block and cols is not None:
        yield _parsed(block, cols, shown, reading)


def _record(text: str, shown: str, line: int) -> dict[str, object]:
    if _binary(text):
        raise InputError(f"{shown}: line {line}: binary data, not a JSON object")
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise InputError(f"{shown}: line {line}: not a JSON object ({clip(str(err))})") from None
    if not isinstance(record, dict):
        raise InputError(f"{shown}: line {line}: expected a JSON object (got {brief(record)})")
    return record


def _text(value: object) -> str:
    """A JSON value as the text of a CSV cell (true/false/null kept so they are refused)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return value if isinstance(value, str) else repr(value)


def _parsed(
    block: list[tuple[int, list[str]]], cols: _Columns, shown: str, reading: Reading
) -> Block:
    """A block's requests, converted and checked at once; a block with a bad cell is read
    again row by row, which raises the first bad cell's message."""
    lines = np.array([line for line, _ in block], dtype=np.int64)
    try:
        t = _times([c[cols.at["arrival"]] for _, c in block], cols.relative, reading)
        i, o = (np.array([float(c[cols.at[r]]) for _, c in block]) for r in ("isl", "osl"))
        ok = bool(np.all(np.isfinite(t) & (np.abs(t) <= MAX_ARRIVAL_S))) and all(
            bool(np.all(np.isfinite(n) & (n >= 0) & (n <= MAX_TOKENS) & (n == np.floor(n))))
            for n in (i, o)
        )
        ok = ok and (cols.relative or bool(np.all(t >= 0)))
    except (ValueError, OverflowError):
        ok = False
    if not ok:
        _check_rows(block, cols, shown, reading)
        raise AssertionError("a bad block has a bad row")  # pragma: no cover
    keep = (i > 0) & (o > 0)
    if not bool(keep.all()):
        if not reading.skipped:
            reading.first_skipped_line = int(lines[np.argmin(keep)])
        reading.skipped += int(np.count_nonzero(~keep))
    conversation = None
    if "conversation" in cols.names:
        ids, at = reading.conversations, cols.at["conversation"]
        conversation = np.array(
            [
                -1 if c[at].strip() in NO_CONVERSATION else ids.setdefault(c[at], len(ids))
                for _, c in block
            ],
            dtype=np.int64,
        )[keep]
    return Block(
        t[keep], i[keep].astype(np.int64), o[keep].astype(np.int64), lines[keep], conversation
    )


def _times(cells: list[str], relative: bool, reading: Reading) -> FloatArray:
    """Arrival times in seconds: ``arrival_s`` as they are; a ``timestamp`` (seconds or a
    date-time) from the first row's (ValueError for a cell that is neither)."""
    if not relative:
        return np.array([float(c) for c in cells], dtype=np.float64)
    try:
        seconds = np.array([float(c) for c in cells], dtype=np.float64)
    except ValueError:
        stamps = np.array([c.strip() for c in cells], dtype="datetime64[ns]").astype(np.int64)
        if (stamps == np.iinfo(np.int64).min).any():  # NaT
            raise ValueError("not a time") from None
        if reading.origin_ns is None:
            reading.origin_ns = int(stamps[0])
        # from the first row in whole nanoseconds first: float64 of 1.7e18 ns is 256 ns coarse
        return (stamps - reading.origin_ns).astype(np.float64) / 1e9
    if reading.origin is None:
        reading.origin = float(seconds[0])
    return seconds - reading.origin


def _check_rows(
    block: list[tuple[int, list[str]]], cols: _Columns, shown: str, reading: Reading
) -> None:
    """Raise the message of the first bad cell of ``block``, in file order."""
    for line, cells in block:
        where = f"{shown}: line {line}"
        for role in REQUIRED:
            text = cells[cols.at[role]].strip()
            name = cols.names[role]
            if role == "arrival":
                _arrival(text, where, name, cols.relative, reading)
            else:
                _tokens(text, where, name)


def _arrival(text: str, where: str, name: str, relative: bool, reading: Reading) -> None:
    try:
        value = float(_times([text], relative, reading)[0])
    except ValueError:
        what = "a number of seconds or a date-time" if relative else "a number"
        raise InputError(f"{where}: {name}: expected {what} (got {brief(text)})") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: {name}: expected a finite number (got {brief(text)})")
    if not relative and value < 0:
        raise InputError(f"{where}: {name}: must be >= 0 seconds (got {clip(text, 40)})")
    if abs(value) > MAX_ARRIVAL_S:
        after = " from the first row" if relative else ""
        raise InputError(
            f"{where}: {name}: must be at most {MAX_ARRIVAL_S:g} seconds{after}"
            f" (got {clip(text, 40)})"
        )


def _tokens(text: str, where: str, name: str) -> None:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: {name}: expected a number (got {brief(text)})") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise InputError(
            f"{where}: {name}: expected a whole number of tokens >= 1, or 0 to skip the row"
            f" (got {clip(text, 40)})"
        )
    if value > MAX_TOKENS:
        raise InputError(
            f"{where}: {name}: must be at most {MAX_TOKENS:,} tokens (got {clip(text, 40)})"
        )
