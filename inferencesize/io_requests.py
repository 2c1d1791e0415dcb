"""The per-request CSV of ``infersize simulate --requests-out``, a column at a time: the bytes
of ``io_trace.request_blocks`` (a row is "%d,%d,%.6f,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n", NaN
empty) in about a fifth of its time (a million rows: 0.4 s of CPU instead of 2).

Each value is written as digits into a table with one row per character place (a zero byte
where a shorter value has no character), the table is transposed to one row per request and
the zero bytes are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from inferencesize.io_trace import REQUEST_COLUMNS, request_blocks, request_columns
from inferencesize.simulate import SimResult

#: Which request columns are seconds written to the microsecond ('%.6f'); the others are '%d'.
_FIXED = (False, False, True, False, False, True, True, True, True, True)
#: The digits of 0 to 999, one row per place (hundreds, tens, units).
_DIGITS3 = np.array([list(b"%03d" % k) for k in range(1000)], dtype=np.uint8).T.copy()
#: Largest magnitudes written column-wise (beyond them io_trace writes the CSV row by row):
#: seconds, whose millionths stay below 2^52 (where every half is a double), and integers.
_MAX_SECONDS = 2.0**32
_MAX_INTEGER = 10**15
_BLOCK_ROWS = 16_384  # (blocks that stay in cache: three times faster than 65,536)

Ints = npt.NDArray[np.int64]


def requests_text(res: SimResult, rows: int = _BLOCK_ROWS) -> Iterator[str]:
    """The per-request CSV as ``io_trace.request_blocks`` writes it, byte for byte: the
    header, then ``rows`` requests a block."""
    columns = request_columns(res)
    n = len(res.arrival_s)
    within = all(
        bool(np.all(np.isnan(c) | (np.abs(c) < _MAX_SECONDS)))
        if fixed
        else bool(np.all(np.abs(c) < _MAX_INTEGER))
        for c, fixed in zip(columns, _FIXED, strict=True)
    )
    if not within:
        yield from request_blocks(res, rows)
        return
    yield ",".join(REQUEST_COLUMNS) + "\n"
    for start in range(0, n, rows):
        block = [np.asarray(c[start : start + rows]) for c in columns]
        yield csv_rows(block, _FIXED).decode("ascii")


def csv_rows(columns: Sequence[npt.NDArray[Any]], fixed: Sequence[bool]) -> bytes:
    """Rows of equally long ``columns``: comma-separated, a newline after each; a ``fixed``
    column as '%.6f' (NaN: empty; magnitudes below 2^32), the others as '%d' (below 10^15)."""
    m = len(columns[0])
    fields: list[tuple[Ints, Ints | None, Ints, npt.NDArray[np.bool_]]] = []
    for column, is_fixed in zip(columns, fixed, strict=True):
        if is_fixed:
            x = np.asarray(column, dtype=np.float64)
            nan = np.isnan(x)
            magnitude = np.where(nan, 0.0, np.abs(x))
            micro = magnitude * 1e6
            nearest = np.rint(micro)
            value = nearest.astype(np.int64)
            # micro is the exact product rounded to a double; rounding is monotone and a
            # half (k + 0.5, a double below 2^52) cannot lie strictly between the two, so
            # nearest is the exact product correctly rounded unless micro is a half: those
            # (exact ties such as 1/128 s among them) go to Python's correctly rounded '%f'
            unsure = np.flatnonzero(np.abs(micro - nearest) == 0.5)
            if unsure.size:
                value[unsure] = [
                    int(f"{v:.6f}".replace(".", "")) for v in magnitude[unsure].tolist()
                ]
            whole = value // 1_000_000
            negative = np.signbit(x) & ~nan  # '-0.000000' for -0.0 and tiny negatives, as %f
            length = np.where(nan, 0, _places(whole) + 7 + negative)
            fields.append((whole, value - whole * 1_000_000, length, negative))
        else:
            ints = np.asarray(column, dtype=np.int64)
            negative = ints < 0
            whole = np.abs(ints)
            fields.append((whole, None, _places(whole) + negative, negative))
    widths = [int(length.max(initial=0)) for _, _, length, _ in fields]
    total = sum(widths) + len(fields)
    # one row per character place; rows a little longer than m (a power-of-two stride
    # would make the transpose below three times slower)
    text: npt.NDArray[np.uint8] = np.empty((total, m + 64), dtype=np.uint8)[:, :m]
    start = 0
    for (whole, micros, length, negative), width in zip(fields, widths, strict=True):
        end = start + width
        if micros is None:
            _digits(text, start, end, whole)
        elif width:
            _digits(text, end - 6, end, micros)
            text[end - 7] = ord(".")
            _digits(text, start, end - 7, whole)
        first = end - length  # the place of each value's first character
        for place in range(start, end - int(length.min(initial=0))):
            text[place] *= first <= place  # before it: no character
        if negative.any():
            rows = np.flatnonzero(negative)
            text[first[rows], rows] = ord("-")
        text[end] = ord(",")
        start = end + 1
    text[total - 1] = ord("\n")
    out = np.ascontiguousarray(text.T)
    kept: npt.NDArray[np.uint8] = out[out != 0]
    return kept.tobytes()


def _digits(text: npt.NDArray[np.uint8], start: int, end: int, value: Ints) -> None:
    """Write each value's decimal digits right-aligned into rows ``start:end`` of ``text``,
    with leading zeros (a value has at most ``end - start`` digits)."""
    while end > start:
        k = min(3, end - start)
        if end - start > 3:
            high = value // 1000
            low = value - high * 1000
        else:
            high = low = value
        np.take(_DIGITS3[3 - k :], low, axis=1, out=text[end - k : end])
        value = high
        end -= k


def _places(value: Ints) -> Ints:
    """The decimal digits of each value >= 0 (one for 0)."""
    places = np.ones(len(value), dtype=np.int64)
    top = int(value.max(initial=0))
    power = 10
    while power <= top:
        places += value >= power
        power *= 10
    return places
