"""`infersize estimate --points FILE`: one output record per row of a file of operating points.

The file is read through once (every read, decoding and CSV error, and a missing column, is
reported before a row is computed: ``io_measurements.open_points``), then again a block of
rows at a time: each block is computed and written whole (``cli.stream.write_rows``), so
memory stays flat however many rows the file has, and an interrupted run leaves complete
rows only. ``json`` and ``yaml`` are written the same way, as one document whose items come
a block at a time. ``--shard K/N`` computes the K-th of N contiguous blocks of rows;
``--workers N`` computes blocks in N processes, written in the file's order.

The records come from ``point_batch.PointRecords``; this module reads, shards and writes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import open_catalog, stdout
from inferencesize.cli.stream import in_order, parse_shard, shard_points, write_rows
from inferencesize.errors import UsageError
from inferencesize.estimate import RATE_RECORD_KEYS, Estimator
from inferencesize.io_measurements import PointsBlock, open_points
from inferencesize.point_batch import POINT_COLUMNS, RESULT_KEYS, PointRecords

#: Formats of ``estimate --points``: one record per input row.
POINTS_FORMATS = ("csv", "jsonl", "json", "yaml")
#: Formats whose parts concatenate into the whole (``--shard``, ``--workers``).
STREAM_FORMATS = ("csv", "jsonl")

#: Rows of ``estimate --points`` computed and written together.
POINTS_BLOCK = 4096


def run_points(
    catalog: Catalog,
    est: Estimator,
    path: Path,
    fmt: str,
    shard: str | None,
    workers: int,
    catalog_dirs: Any = None,
) -> None:
    """Write the record of every row of ``path`` (its part ``shard``) to stdout in ``fmt``.

    Rows are computed in blocks of :data:`POINTS_BLOCK` aligned on the file's rows, whichever
    part or process computes them (a part's first and last blocks are computed whole, the
    rows outside the part dropped): the rows of a distinct deployment in a block are solved
    together, and the solver's last digits depend on which rows those are."""
    points = open_points(path)  # every read, decoding and CSV error names the file
    part, parts = parse_shard(shard)
    if (parts > 1 or workers > 1) and fmt not in STREAM_FORMATS:
        raise UsageError("--shard and --workers stream csv or jsonl (-f csv, -f jsonl)")
    chosen = shard_points(points.rows, part, parts)
    columns = _columns(points.header)
    fh = stdout().file
    doc = _Document(fh, fmt, columns)
    if fmt == "csv" and part == 1:
        write_rows(fh, report.csv_text([], columns))
    blocks = points.blocks(POINTS_BLOCK, chosen.start, chosen.stop)
    if workers == 1:
        rows = PointRecords(catalog, est, points.header)
        for block in blocks:
            doc.write(rows.records(block, chosen))
        doc.close()
        return
    job = (catalog_dirs, est, points.header, fmt, columns, chosen)
    for text in in_order(blocks, workers, _worker_block, _start_worker, job):
        write_rows(fh, text)


class _Document:
    """The output of ``estimate --points`` written a block of records at a time: CSV rows or
    JSON lines as they come; a JSON list or a YAML sequence whose items come a block at a
    time (the same bytes as the list built whole and written at once)."""

    def __init__(self, fh: IO[str], fmt: str, columns: list[str]) -> None:
        self.fh, self.fmt, self.columns, self.items = fh, fmt, columns, 0

    def write(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        if self.fmt == "json":
            items = ",\n".join(_json_item(r) for r in records)
            text = ("[\n" if self.items == 0 else ",\n") + items
        elif self.fmt == "yaml":
            text = report.to_yaml(records)
        else:
            text = rendered(self.fmt, self.columns, records)
        self.items += len(records)
        write_rows(self.fh, text)

    def close(self) -> None:
        """End the document: an empty list, or the end of a JSON list."""
        if self.fmt in ("json", "yaml") and self.items == 0:
            write_rows(self.fh, "[]\n")
        elif self.fmt == "json":
            write_rows(self.fh, "\n]\n")


def _json_item(rec: dict[str, Any]) -> str:
    """One record as an item of ``report.to_json``'s list (indented 2 more)."""
    return "  " + report.to_json(rec).replace("\n", "\n  ")


#: One worker process's state (``--workers``): set by :func:`_start_worker`.
_WORKER: dict[str, Any] = {}


def _start_worker(
    catalog_dirs: Any,
    est: Estimator,
    header: list[str],
    fmt: str,
    columns: list[str],
    chosen: range,
) -> None:
    rows = PointRecords(open_catalog(catalog_dirs), est, header)
    _WORKER.update(rows=rows, fmt=fmt, columns=columns, chosen=chosen)


def _worker_block(block: PointsBlock) -> str:
    """A block of rows of the points file, rendered (in a worker process)."""
    w = _WORKER
    return rendered(w["fmt"], w["columns"], w["rows"].records(block, w["chosen"]))


def _columns(header: list[str]) -> list[str]:
    template = _template("rate" in header)
    template["memory"] = _gib_keys(template["memory"])
    return list(header) + [c for c in report.flatten(template) if c not in header]


def rendered(fmt: str, columns: list[str], records: list[dict[str, Any]]) -> str:
    """Complete CSV rows (no header) or JSON lines of ``records``: the bytes of
    ``report.csv_text`` / ``report.to_jsonl`` (CSV cells carry no nesting: the unit goes
    into the memory column names, ``memory_weights_gib``)."""
    if fmt == "jsonl":
        return report.to_jsonl(records) if records else ""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    cell = report.format_cell
    for rec in records:
        values = _flat(rec, columns)
        writer.writerow(
            [
                v if type(v) is str else "" if v is None else str(v) if type(v) is int else cell(v)
                for v in values
            ]
        )
    return buf.getvalue()


def _flat(rec: dict[str, Any], columns: list[str]) -> list[Any]:
    """The values of ``columns`` in ``report.flatten`` of ``rec`` (memory keys in GiB)."""
    flat: dict[str, Any] = {}
    for key, value in rec.items():
        if type(value) in _SCALARS:
            flat[key] = value
        elif isinstance(value, Mapping):
            unit = "_gib" if key == "memory" else ""  # CSV cells carry no nesting: the unit
            for sub, inner in value.items():
                name = f"{key}_{sub}{unit}"
                if type(inner) in _SCALARS:
                    flat[name] = inner
                else:
                    flat.update(report.flatten({name: inner}))
        elif isinstance(value, list | tuple):
            flat[key] = ";".join(str(v) for v in value)
        else:
            flat[key] = value
    return [flat.get(c) for c in columns]


#: Cell types that ``report.flatten`` keeps as they are (a subclass goes the long way).
_SCALARS = frozenset((str, int, float, bool, type(None)))


def _gib_keys(memory: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if memory is None else {f"{k}_gib": v for k, v in memory.items()}


def _template(rates: bool) -> dict[str, Any]:
    """The columns of a batch CSV after the input's (``rates``: open-loop keys too)."""
    mem = dict.fromkeys(("capacity", "weights", "kv_cache", "activations", "reserve", "free"))
    out = {
        **dict.fromkeys(c for c in POINT_COLUMNS if c not in ("rate", "cv")),
        **dict.fromkeys(RESULT_KEYS),
        "memory": mem,
        "bound": {"prefill": None, "decode": None},
    }
    if rates:
        out.update(dict.fromkeys(k for k in RATE_RECORD_KEYS if k not in out))
    return out
