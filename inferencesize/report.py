"""Presentation: render records as a rich table, JSON, YAML or CSV. Computes nothing."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

FORMATS = ("table", "json", "yaml", "csv")


def _plain(value: Any) -> Any:
    """The plain document of ``value``: only dict, list, str, int, float, bool and None.

    NaN/inf -> None; tuples -> lists; mapping keys -> str; numpy scalars and arrays (anything
    with ``tolist``, e.g. ``np.float64``, which JSON takes as a float but YAML refuses) -> the
    Python numbers and lists they hold; subclasses of str/int/float/bool (enums) -> the base
    type. JSON and YAML both write this document, so ``-f yaml`` reads back as ``-f json``.
    """
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__ == "numpy":
        return _plain(tolist())
    return value


def to_json(data: Any) -> str:
    return json.dumps(_plain(data), indent=2, ensure_ascii=False)


def to_jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(_plain(r), ensure_ascii=False) + "\n" for r in rows)


def to_yaml(data: Any) -> str:
    import yaml  # only --format yaml: the other formats never load PyYAML

    return yaml.safe_dump(_plain(data), sort_keys=False, allow_unicode=True, width=100)


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings become ``parent_child`` columns."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}_"))
        elif isinstance(value, (list, tuple)):
            out[name] = ";".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    flat = [flatten(r) for r in rows]
    if columns is None:
        columns = list(dict.fromkeys(k for r in flat for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(
        buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    for row in flat:
        writer.writerow({k: format_cell(row.get(k)) for k in columns})
    return buf.getvalue()


def format_load(value: float) -> str:
    """A per-instance load (clients or batch size): whole numbers as such, a fractional
    mean load (the planner's, between two whole client counts) to two decimals."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """A count and its noun, for text people read: '1 GPU', '2 GPUs', '12,288 instances'
    (``plural``: the plural when it is not ``noun`` + 's')."""
    word = noun if n == 1 else (plural or noun + "s")
    return f"{n:,} {word}"


def number(value: float, digits: int = 4) -> str:
    """A figure for text people read: ``digits`` significant digits with thousands separators,
    never in exponent notation from 10**digits up (``20,233``, not ``2.023e+04``; ``28``,
    ``23.15``, ``0.5``)."""
    if math.isfinite(value) and abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:,.{digits}g}"


def display_cell(value: Any) -> str:
    """A table cell: as :func:`format_cell` (the CSV text), except that whole numbers and
    numbers of 10,000 or more carry thousands separators (``1,184``, ``20,233``); JSON, YAML
    and CSV keep plain numbers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float) and math.isfinite(value) and abs(value) >= 1e4:
        return f"{value:,.0f}"
    return format_cell(value)


def format_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ""
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.0f}"
    return str(value)


#: Widest output when stdout is not a terminal and $COLUMNS is unset: in effect unlimited, so a
#: pipe or a CI log gets every table row on one line.
UNLIMITED_WIDTH = 10_000


def output_width(stream: Any, environ: Mapping[str, str] | None = None) -> int | None:
    """The width tables are laid out in, for output to ``stream``.

    ``$COLUMNS`` when it is set to a positive integer (the user asked for that width, for a
    terminal or a pipe); else ``None`` when ``stream`` is a terminal (rich measures it); else
    :data:`UNLIMITED_WIDTH`: output to a pipe or a file is never wrapped, a wide table keeps
    one line per row (``less -S``, CI logs and ``grep`` read it whole). Colour follows the
    same rule in rich: only on a terminal, never with ``NO_COLOR``.
    """
    env = os.environ if environ is None else environ
    text = env.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        tty = False
    return None if tty else UNLIMITED_WIDTH


#: A cell that is a number, maybe signed, with thousands separators, a percent sign or a
#: leading currency sign (right-aligned in its column).
_NUMBER = re.compile(r"[+-−]?\$?[\d,]*\.?\d+(e[+-]?\d+)?%?")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else display_cell(value)


def _longest_word(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for w in text.split()), default=0)


def _wrapped(key: str, value: str, width: int) -> list[str]:
    """``key: value`` wrapped at spaces (never inside a word) to ``width``, continued lines
    indented; a word longer than the width stays whole on its own line."""
    import textwrap

    line = f"{key}: {value}" if key else value
    return textwrap.wrap(
        line,
        width=max(width, 1),
        subsequent_indent="    ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [line]


class Records:
    """A table that fits the width it is drawn in (a rich renderable; rich is imported only
    when it is drawn).

    * Cells are split only at spaces: a number (``2,526.2``), an id (``deepseek-r1``) or a
      header word is never broken across lines. The first column, the name of each row
      (``dgx-b200 fp4 tp2``, a key), is never wrapped at all: a wrapped name would read as a
      row of its own. Each column is at least as wide as its
      longest word; spare width goes to the columns whose text would otherwise wrap.
    * When even those widths do not fit, the borders go (the compact layout of a long
      listing); when they still do not fit, the table is drawn vertically: one block per record,
      one ``column: value`` line per cell (wrapped at spaces, continued lines indented).
    * The width is the console's (:func:`output_width`): a terminal's or ``$COLUMNS``; output
      that goes to a pipe is never wrapped.
    * Cell text is shown literally (no rich markup, no highlighting).
    """

    def __init__(
        self,
        title: str | None,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        caption: str | None = None,
        *,
        header: bool = True,
        compact: bool = False,
        whole: Sequence[int] = (),
    ) -> None:
        self.title = title
        self.whole = (0, *whole)  # the first column names the row: never wrapped
        self.caption = caption
        self.columns = [str(c) for c in columns]
        self.rows = [[_text(v) for v in row] for row in rows]
        self.header = header
        self.compact = compact

    def _overhead(self, compact: bool) -> int:
        n = len(self.columns)
        if compact:  # no edges; a pad and a (blank) divider between two columns
            return 2 * (n - 1)
        return 3 * n + 1  # a border per column and one at the edge, one pad on each side

    def widths(self, width: int, compact: bool | None = None) -> list[int] | None:
        """Column widths (text only) for a table ``width`` cells wide; None: use the vertical
        layout (the longest words of the columns do not fit side by side)."""
        from rich.cells import cell_len

        cols = list(zip(*self.rows, strict=True)) if self.rows else [()] * len(self.columns)
        heads = self.columns if self.header else [""] * len(self.columns)
        lo = [
            max(_longest_word(h), *(_longest_word(c) for c in col), 1)
            for h, col in zip(heads, cols, strict=True)
        ]
        hi = [
            max(cell_len(h), *(cell_len(c) for c in col), 1)
            for h, col in zip(heads, cols, strict=True)
        ]
        # the first column names the row (a key, a candidate, an id): it stays on one line,
        # so a row never wraps into a second line that reads as a row of its own (and so
        # do the columns asked to: a count such as "3 of 72")
        for i in self.whole:
            lo[i] = hi[i]
        room = width - self._overhead(self.compact if compact is None else compact)
        if sum(hi) <= room:
            return hi
        if sum(lo) > room:
            return None
        # spare width completes the columns that need least first: short columns stay on one
        # line, the long text columns wrap
        out = list(lo)
        spare = room - sum(lo)
        for i in sorted(range(len(out)), key=lambda k: hi[k] - lo[k]):
            grow = min(hi[i] - lo[i], spare)
            out[i] += grow
            spare -= grow
        return out

    def vertical(self, width: int) -> list[str]:
        """The records as blocks of ``column: value`` lines, a blank line between blocks (a
        key/value table: one ``key: value`` line per pair); empty cells left out."""
        if not self.header:
            return [line for key, value in self.rows for line in _wrapped(key, value, width)]
        lines: list[str] = []
        for n, row in enumerate(self.rows):
            if n:
                lines.append("")
            for key, value in zip(self.columns, row, strict=True):
                if value:
                    lines += _wrapped(key, value, width)
        return lines

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        width = options.max_width
        if self.title:
            yield Text(self.title, style="bold")
        compact = self.compact
        sizes = self.widths(width)
        if sizes is None and self.header and not compact:
            compact = True  # no borders before one block per record
            sizes = self.widths(width, compact=True)
        if sizes is None:
            yield Text("\n".join(self.vertical(width)))
        else:
            shape = box.SIMPLE_HEAD if compact else box.HEAVY_HEAD if self.header else box.SQUARE
            out = Table(
                show_header=self.header,
                box=shape,
                show_edge=not compact,
                pad_edge=not compact,
                padding=(0, 1, 0, 0) if compact else (0, 1),
            )
            for i, (name, size) in enumerate(zip(self.columns, sizes, strict=True)):
                key = not self.header and i == 0
                right = self.header and all(_NUMBER.fullmatch(r[i]) for r in self.rows if r[i])
                out.add_column(
                    Text(name),
                    width=size,
                    style="bold" if key else "",
                    justify="right" if right and any(r[i] for r in self.rows) else "left",
                )
            for row in self.rows:
                out.add_row(*(Text(c) for c in row))
            yield out
        if self.caption:
            yield Text(self.caption)


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    caption: str | None = None,
    *,
    compact: bool = False,
    whole: Sequence[int] = (),
) -> Records:
    """Rows under column headers (see :class:`Records` for the layout at any width);
    non-string cells go through :func:`display_cell`. ``compact``: no outer border (a long
    listing); ``whole``: columns (by index) whose cells are never wrapped ("3 of 72")."""
    return Records(title, columns, rows, caption, compact=compact, whole=whole)


def key_value_table(title: str | None, pairs: Sequence[tuple[str, Any]]) -> Records:
    """One record as ``key  value`` rows; vertically (``key: value`` lines) when the keys and
    the longest word of the values do not fit side by side."""
    return Records(title, ["field", "value"], [[k, v] for k, v in pairs], header=False)


def emit(out: Any, text: str) -> None:
    """Write machine-readable text exactly (no wrapping, no markup) to a text stream or to a
    rich console's file."""
    file: TextIO = out if isinstance(out, io.IOBase) else out.file  # type: ignore[assignment]
    file.write(text if text.endswith("\n") else text + "\n")
    file.flush()
