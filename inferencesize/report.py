"""Presentation: render records as a rich table, JSON, YAML or CSV. Computes nothing."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import yaml

if TYPE_CHECKING:  # rich is imported only when a table is drawn (machine formats skip it)
    from rich.table import Table

FORMATS = ("table", "json", "yaml", "csv")


def _plain(value: Any) -> Any:
    """JSON-safe value: NaN/inf -> None, tuples -> lists, nested mappings kept."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_json(data: Any) -> str:
    return json.dumps(_plain(data), indent=2, ensure_ascii=False)


def to_jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(_plain(r), ensure_ascii=False) + "\n" for r in rows)


def to_yaml(data: Any) -> str:
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


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    caption: str | None = None,
) -> Table:
    from rich.table import Table

    out = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    for col in columns:
        out.add_column(col, overflow="fold")
    for row in rows:
        out.add_row(*(format_cell(v) if not isinstance(v, str) else v for v in row))
    return out


def key_value_table(title: str | None, pairs: Sequence[tuple[str, Any]]) -> Table:
    from rich.table import Table

    out = Table(title=title, show_header=False, title_justify="left")
    out.add_column("field", style="bold")
    out.add_column("value", overflow="fold")
    for key, value in pairs:
        out.add_row(key, value if isinstance(value, str) else format_cell(value))
    return out


def emit(out: Any, text: str) -> None:
    """Write machine-readable text exactly (no wrapping, no markup) to a text stream or to a
    rich console's file."""
    file: TextIO = out if isinstance(out, io.IOBase) else out.file  # type: ignore[assignment]
    file.write(text if text.endswith("\n") else text + "\n")
    file.flush()
