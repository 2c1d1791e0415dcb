"""`infersize estimate --points FILE`: one output record per row of a file of operating points.

The file is read through once (every read, decoding and CSV error, and a missing column, is
reported before a row is computed: ``io_measurements.open_points``), then again a block of
rows at a time: each block is computed and written whole (``cli.stream.write_rows``), so
memory stays flat however many rows the file has, and an interrupted run leaves complete
rows only. ``json`` and ``yaml`` are written the same way, as one document whose items come
a block at a time. ``--shard K/N`` computes the K-th of N contiguous blocks of rows;
``--workers N`` computes blocks in N processes, written in the file's order.

A row that cannot be computed is still an output row: the input as given, ``feasible``
false and a ``reason`` naming its row (``row 6: isl: not a number``).
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import open_catalog, stdout
from inferencesize.cli.stream import in_order, parse_shard, shard_points, write_rows
from inferencesize.errors import InputError, UnknownIdError, UsageError
from inferencesize.estimate import (
    RATE_RECORD_KEYS,
    Candidate,
    Estimator,
    Resolved,
    longest_gaps,
    operating_points,
    rate_record,
    record,
)
from inferencesize.io_measurements import (
    PointsBlock,
    by_column,
    open_points,
    point_float,
    point_int,
)
from inferencesize.measured_map import on_servers
from inferencesize.specs.common import MAX_RPS
from inferencesize.specs.scenario import MAX_CV
from inferencesize.study import candidate
from inferencesize.vocabulary import Batching

POINT_COLUMNS = (
    "model",
    "hardware",
    "precision",
    "tp",
    "pp",
    "ep",
    "isl",
    "osl",
    "concurrency",
    "batching",
    "kv_precision",
    "rate",
    "cv",
)
RESULT_KEYS = (
    "gpus",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "itl_max_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "max_concurrency",
    "memory",
    "bound",
    "feasible",
    "reason",
    "engine",
    "efficiency",
    "trust",
)
#: Every key of an estimate record (``estimate.record``).
RECORD_KEYS = (*POINT_COLUMNS[:6], "dp", *POINT_COLUMNS[6:11], *RESULT_KEYS, "techniques")
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


class PointRecords:
    """The records of a points file's rows, a block at a time, with what rows share looked up
    once: the candidate of each distinct (model, hardware, precision, KV precision, TP, PP,
    EP, DP) cell set (or its error), the resolved deployment of each distinct candidate and
    sequence length. The rows of one deployment and batching in a block are solved together
    (``estimate.operating_points``)."""

    #: Entries a cache holds before it is emptied (memory stays flat on any file).
    CACHE_ENTRIES = 65_536

    def __init__(self, catalog: Catalog, est: Estimator, header: list[str]) -> None:
        self.catalog, self.est, self.header = catalog, est, header
        self._base: dict[tuple[Any, ...], Candidate | Exception] = {}
        self._cands: dict[tuple[Any, ...], tuple[Candidate, tuple[Any, ...]]] = {}
        self._resolved: dict[tuple[Any, ...], Resolved] = {}

    def records(self, block: PointsBlock, chosen: range | None = None) -> list[dict[str, Any]]:
        """The records of the rows of ``block`` that are in ``chosen`` (default: all); the
        block is computed whole either way."""
        for cache in (self._base, self._cands, self._resolved):
            if len(cache) > self.CACHE_ENTRIES:
                cache.clear()
        rows = [by_column(self.header, cells) for _, cells in block.rows]
        first = block.first
        out: list[dict[str, Any] | None] = [None] * len(rows)
        groups: dict[tuple[Any, ...], list[tuple[int, int, int, int]]] = defaultdict(list)
        cands: dict[tuple[Any, ...], Candidate] = {}
        for i, row in enumerate(rows):
            line = first + i + 2
            try:
                key, cand, isl, osl, conc, batching = self._parse(row, line)
                if conc is None:  # an open-loop row: rate (and cv), one point at a time
                    rate, cv = _rate_of(row, line, batching)
                    engine = self.est.efficiency_for(cand.gpu, cand.precision).engine
                    rec = rate_record(
                        self._resolve(key, cand, isl + osl), isl, osl, rate, cv, engine
                    )
                    out[i] = {**row, **rec, "rate": rate}
                    continue
            except (InputError, UnknownIdError, ValueError) as err:
                out[i] = _error_record(row, err)
                continue
            cands[key] = cand
            groups[key].append((i, isl, osl, conc))
        for key, items in groups.items():
            self._group(rows, out, cands[key], key, items)
        start, stop = 0, len(rows)
        if chosen is not None:
            start, stop = max(chosen.start - first, 0), min(chosen.stop - first, stop)
        return [r for r in out[start:stop] if r is not None]

    def _group(
        self,
        rows: list[dict[str, str]],
        out: list[dict[str, Any] | None],
        cand: Candidate,
        key: tuple[Any, ...],
        items: list[tuple[int, int, int, int]],
    ) -> None:
        """The records of the closed-loop rows ``items`` of one candidate and batching."""
        batching, engine = key[-1], self.est.efficiency_for(cand.gpu, cand.precision).engine
        resolved = [self._resolve(key, cand, isl + osl) for _, isl, osl, _ in items]
        ok = [(it, r) for it, r in zip(items, resolved, strict=True) if r.reason is None]
        for (i, isl, osl, conc), r in zip(items, resolved, strict=True):
            if r.reason is not None:
                out[i] = {**rows[i], **record(r, isl, osl, conc, batching, None, engine)}
        if not ok:
            return
        isls = [it[1] for it, _ in ok]
        osls = [it[2] for it, _ in ok]
        concs = [it[3] for it, _ in ok]
        res0 = ok[0][1]
        ops = operating_points(
            res0, isls, osls, concs, [r.max_concurrency for _, r in ok], batching
        )
        gaps = longest_gaps(res0, isls, osls, ops, batching)
        for ((i, isl, osl, conc), r), op, gap in zip(ok, ops, gaps, strict=True):
            out[i] = {**rows[i], **record(r, isl, osl, conc, batching, op, engine, gap)}

    def _resolve(self, key: tuple[Any, ...], cand: Candidate, seq_len: int) -> Resolved:
        """``Estimator.resolve`` of a candidate (``key``: what names it) at ``seq_len``."""
        at = (key[:-1], seq_len)
        found = self._resolved.get(at)
        if found is None:
            found = self._resolved[at] = self.est.resolve(cand, seq_len)
        return found

    def _parse(
        self, row: dict[str, str], line: int
    ) -> tuple[tuple[Any, ...], Candidate, int, int, int | None, Batching]:
        """A row's candidate (and the key that names it with the batching), lengths and load:
        its concurrency, or None for an open-loop row (a rate instead); exactly one of the
        two. The checks and their order are the row's errors: the first one found is its
        reason."""

        def num(name: str, default: int | None = None) -> int:
            return point_int(row, name, line, default)  # finite, >= 1, under the ceiling

        text = (row.get("batching") or Batching.INFLIGHT).strip()
        if text not in _BATCHINGS:
            raise InputError(f"row {line}: batching: '{text}' is not inflight or static")
        batching = _BATCHINGS[text]
        precision = (row.get("precision") or "fp8").strip()
        kv = (row.get("kv_precision") or "").strip() or None
        model, hardware = row.get("model", ""), row.get("hardware", "")
        tp, pp, ep = num("tp", 1), num("pp", 1), num("ep", 1)
        cells = (model, hardware, precision, kv, tp, pp, ep)
        base = self._base.get(cells)
        if base is None:
            try:
                base = candidate(self.catalog, model, hardware, precision, kv, tp, pp, ep)
            except (InputError, UnknownIdError, ValueError) as err:
                base = err
            self._base[cells] = base
        if isinstance(base, Exception):
            raise base
        dp = num("dp", 1)  # attention data parallelism (optional column)
        found = self._cands.get((cells, dp))
        if found is None:
            cand = replace(base, par=replace(base.par, dp=dp)) if dp != 1 else base
            cand = on_servers(self.catalog, cand)
            names = (cand.model.id, cand.hardware_id, cand.precision, cand.kv_precision)
            found = self._cands[(cells, dp)] = (cand, (*names, cand.par))
        cand, names = found
        has_conc = bool((row.get("concurrency") or "").strip())
        has_rate = bool((row.get("rate") or "").strip())
        if has_conc == has_rate:
            raise InputError(
                f"row {line}: give exactly one of concurrency (closed-loop clients) or rate"
                " (open-loop requests/s)" + (" (both given)" if has_conc else " (neither given)")
            )
        if has_conc and (row.get("cv") or "").strip():
            raise InputError(f"row {line}: cv: applies to a rate, not to concurrency")
        conc = num("concurrency") if has_conc else None
        return (*names, batching), cand, num("isl"), num("osl"), conc, batching


#: The batching cells of a points file.
_BATCHINGS = {b.value: b for b in Batching}


def _error_record(row: dict[str, str], err: Exception) -> dict[str, Any]:
    """The record of a row that cannot be computed: the same keys as a computed row, the input
    as given (numbers as numbers), ``feasible`` false and why."""
    echoed = {k: _number_or_text(v) for k, v in row.items()}
    return {
        **echoed,
        **dict.fromkeys(k for k in RECORD_KEYS if k not in echoed),
        "feasible": False,
        "reason": str(err),
    }


def _gib_keys(memory: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if memory is None else {f"{k}_gib": v for k, v in memory.items()}


def _number_or_text(text: str | None) -> Any:
    """A cell echoed into JSON: 2000 and 0.5 as numbers, anything else as given."""
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value


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


def _rate_of(row: dict[str, str], line: int, batching: Batching) -> tuple[float, float]:
    """(rate requests/s, cv) of an open-loop points row; an InputError naming the row else."""
    if batching != Batching.INFLIGHT:
        raise InputError(f"row {line}: rate: the open-loop model is in-flight batching only")
    return point_float(row, "rate", line, MAX_RPS), point_float(row, "cv", line, MAX_CV, 1.0)
