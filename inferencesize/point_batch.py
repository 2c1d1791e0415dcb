"""The records of a file of operating points (``infersize estimate --points FILE``), a block
of rows at a time: each row's candidate looked up, resolved and solved (the rows of one
deployment and batching together), or the reason it cannot be.

A row that cannot be computed is still a record: the input as given, ``feasible`` false and a
``reason`` naming its row (``row 6: isl: not a number``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from inferencesize.catalog import Catalog
from inferencesize.errors import InputError, UnknownIdError
from inferencesize.estimate import (
    Candidate,
    Estimator,
    Resolved,
    longest_gaps,
    operating_points,
    rate_record,
    record,
)
from inferencesize.io_measurements import PointsBlock, by_column, point_float, point_int
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


def _number_or_text(text: str | None) -> Any:
    """A cell echoed into JSON: 2000 and 0.5 as numbers, anything else as given."""
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value


def _rate_of(row: dict[str, str], line: int, batching: Batching) -> tuple[float, float]:
    """(rate requests/s, cv) of an open-loop points row; an InputError naming the row else."""
    if batching != Batching.INFLIGHT:
        raise InputError(f"row {line}: rate: the open-loop model is in-flight batching only")
    return point_float(row, "rate", line, MAX_RPS), point_float(row, "cv", line, MAX_CV, 1.0)
