"""Read published measurements (the CSV schema of shared/calibration) and GenAI-Perf exports."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencesize.deployment import default_kv_precision
from inferencesize.errors import InputError, UnknownIdError
from inferencesize.parallelism import Parallelism
from inferencesize.units import PRECISIONS

if TYPE_CHECKING:
    from inferencesize.catalog import Catalog
    from inferencesize.estimate import Candidate
    from inferencesize.validation import Mapped

COLUMNS = [
    "source",
    "source_detail",
    "model",
    "gpu",
    "num_gpus",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "isl",
    "osl",
    "concurrency_or_batch",
    "metric",
    "value",
    "unit",
    "engine",
    "engine_version",
    "notes",
]
REQUIRED = ("model", "gpu", "metric", "value")


@dataclass(frozen=True)
class Measurement:
    """One measured metric at one operating point (blank = not stated by the source)."""

    row: int
    source: str
    model: str
    gpu: str
    num_gpus: int | None
    precision: str
    kv_precision: str
    tp: int | None
    pp: int | None
    ep: int | None
    isl: float | None
    osl: float | None
    concurrency: str  # a number, or 'offline_max', or free text
    metric: str
    value: float
    unit: str
    engine: str
    engine_version: str
    notes: str = ""

    @property
    def engine_label(self) -> str:
        return f"{self.engine} {self.engine_version}".strip()

    @property
    def point(self) -> tuple[object, ...]:
        """The operating point measured: every column but the metric, value, unit and notes."""
        return (
            self.source,
            self.model,
            self.gpu,
            self.num_gpus,
            self.precision,
            self.kv_precision,
            self.tp,
            self.pp,
            self.ep,
            self.isl,
            self.osl,
            self.concurrency,
            self.engine_label,
        )


def _int(text: str) -> int | None:
    try:
        return int(float(text)) if text.strip() else None
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        return float(text) if text.strip() else None
    except ValueError:
        return None


def read_measurements(path: Path) -> list[Measurement]:
    """Rows of a measurements CSV; a file that is not one is an InputError naming the file."""
    if path.suffix.lower() == ".json":
        return read_genai_perf_json(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            if "time_to_first_token" in " ".join(header).lower().replace(" ", "_") or (
                header and header[0].strip().lower() == "metric"
            ):
                handle.seek(0)
                return read_genai_perf_csv(path, handle.read())
            missing = [c for c in REQUIRED if c not in header]
            if missing:
                raise InputError(
                    f"{path}: missing column(s) {', '.join(missing)}; expected the measurements"
                    f" schema ({', '.join(COLUMNS)}) or a GenAI-Perf export"
                )
            return [_row(path, i + 2, r) for i, r in enumerate(reader)]
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a CSV file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: is not UTF-8 text") from None


def dedupe(rows: list[Measurement]) -> list[Measurement]:
    """Drop rows that repeat another row's operating point, metric and value (files overlap)."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for m in rows:
        key = (
            m.source,
            m.model,
            m.gpu,
            m.precision,
            m.tp,
            m.pp,
            m.isl,
            m.osl,
            m.concurrency,
            m.metric,
            m.value,
            m.engine_version,
        )
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


def _row(path: Path, line: int, r: dict[str, str]) -> Measurement:
    value = _float(r.get("value", "") or "")
    if value is None:
        raise InputError(f"{path}: row {line}: value: not a number ({r.get('value')!r})")
    return Measurement(
        row=line,
        source=r.get("source", "") or "",
        model=r.get("model", "") or "",
        gpu=r.get("gpu", "") or "",
        num_gpus=_int(r.get("num_gpus", "") or ""),
        precision=(r.get("precision", "") or "").lower(),
        kv_precision=(r.get("kv_precision", "") or "").lower(),
        tp=_int(r.get("tp", "") or ""),
        pp=_int(r.get("pp", "") or ""),
        ep=_int(r.get("ep", "") or ""),
        isl=_float(r.get("isl", "") or ""),
        osl=_float(r.get("osl", "") or ""),
        concurrency=(r.get("concurrency_or_batch", "") or "").strip(),
        metric=r.get("metric", "") or "",
        value=value,
        unit=r.get("unit", "") or "",
        engine=r.get("engine", "") or "",
        engine_version=r.get("engine_version", "") or "",
        notes=r.get("notes", "") or "",
    )


GENAI_SOURCE = "genai-perf"

# GenAI-Perf `profile_export_genai_perf.json`: {"time_to_first_token": {"unit": "ms",
# "avg": …, "p50": …}, "inter_token_latency": {…}, "request_latency": {…},
# "request_throughput": {"unit": "requests/sec", "avg": …},
# "output_token_throughput": {"unit": "tokens/sec", "avg": …}, "input_config": {…}}.
_GENAI_METRICS = {
    "time_to_first_token": "ttft_ms_avg",
    "inter_token_latency": "itl_ms_avg",
    "request_latency": "e2e_ms_avg",
    "request_throughput": "req_per_s",
    "output_token_throughput": "output_tok_s_total",
}


def read_genai_perf_json(path: Path) -> list[Measurement]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a GenAI-Perf profile export (a JSON object)")
    config = data.get("input_config", {}) if isinstance(data.get("input_config"), dict) else {}
    out = []
    for i, (key, metric) in enumerate(_GENAI_METRICS.items()):
        stat = data.get(key)
        if isinstance(stat, dict) and "avg" in stat:
            out.append(_genai(i, metric, float(stat["avg"]), config))
    if not out:
        raise InputError(
            f"{path}: no GenAI-Perf metrics found (expected keys like time_to_first_token)"
        )
    return out


def read_genai_perf_csv(path: Path, text: str) -> list[Measurement]:
    """GenAI-Perf `profile_export_genai_perf.csv`: a table `Metric,avg,min,max,p99,…` then
    `Metric,Value` rows for throughputs."""
    rows = list(csv.reader(text.splitlines()))
    out = []
    for i, row in enumerate(rows):
        if len(row) < 2:
            continue
        # "Output Token Throughput (tokens/sec)" is the metric; "Output Token Throughput Per
        # User (tokens/sec/user)" is another one: match the whole name before the unit.
        name = row[0].strip().lower().replace(" ", "_").split("_(")[0]
        metric = _GENAI_METRICS.get(name)
        value = _float(row[1].replace(",", "")) if metric else None
        if metric and value is not None:
            out.append(_genai(i, metric, value, {}))
    if not out:
        raise InputError(f"{path}: no GenAI-Perf metrics found in the CSV export")
    return out


def _genai(i: int, metric: str, value: float, config: dict[str, Any]) -> Measurement:
    model = config.get("model", "")
    if isinstance(model, list):  # GenAI-Perf stores a list of served model names
        model = model[0] if model else ""
    return Measurement(
        row=i + 1,
        source=GENAI_SOURCE,
        model=str(model or ""),
        gpu="",
        num_gpus=None,
        precision="",
        kv_precision="",
        tp=None,
        pp=None,
        ep=None,
        isl=None,
        osl=None,
        concurrency=str(config.get("concurrency", "")),
        metric=metric,
        value=value,
        unit="",
        engine="genai-perf",
        engine_version="",
    )


# ---------------------------------------------------------------------------------------------
# Mapping rows onto catalog candidates
# ---------------------------------------------------------------------------------------------


def map_measurements(
    catalog: Catalog,
    rows: list[Measurement],
    hardware: str | None = None,
    precision: str | None = None,
) -> tuple[list[Mapped], list[tuple[Measurement, str]]]:
    """Rows the model can predict (with their operating point) and the others with why not."""
    mapped: list[Mapped] = []
    skipped: list[tuple[Measurement, str]] = []
    memo: dict[tuple[object, ...], Candidate | str] = {}
    for m in rows:
        key = (m.model, m.gpu, m.precision, m.kv_precision, m.tp, m.pp, m.ep, m.num_gpus)
        if key not in memo:
            memo[key] = _candidate(catalog, m, hardware, precision)
        cand = memo[key]
        result = cand if isinstance(cand, str) else _operating_point(cand, m)
        if isinstance(result, str):
            skipped.append((m, result))
        else:
            mapped.append(result)
    return mapped, skipped


def _operating_point(cand: Candidate, m: Measurement) -> Mapped | str:
    """The row's operating point on its candidate, or why it cannot be predicted."""
    from inferencesize.validation import METRICS, Mapped, mode_of

    if m.metric not in METRICS:
        return f"metric {m.metric!r} is not a per-instance latency or throughput"
    if m.value <= 0:
        return "value is 0 (rounded in the source)"
    mode = mode_of(m)
    match = re.match(r"^\s*(\d+(?:\.\d+)?)", m.concurrency)
    if mode != "offline" and match is None:
        return f"operating point {m.concurrency!r} is not a concurrency or batch size"
    if m.isl is None:
        return "isl not stated"
    scale = _instances_covered(m.unit, m.num_gpus, cand.par.gpus)
    if m.osl is None:
        m = replace(m, osl=1.0)
    return Mapped(m, cand, mode, float(match.group(1)) if match else 0.0, scale)


#: Units of a rate that covers a whole server: its ``num_gpus`` GPUs, whatever the instance size.
_PER_SERVER = re.compile(r"\bper\s+(dgx|hgx|server|node)\b")
_PER_GPU = re.compile(r"(\bper\s+gpu\b|/\s*gpu\b)")


def _instances_covered(unit: str, num_gpus: int | None, instance_gpus: int) -> float:
    """How many instances a measured rate covers, from its unit: 1 (per instance, the TP
    group), ``num_gpus / instance_gpus`` per DGX / server / node, ``1 / instance_gpus`` per GPU."""
    text = unit.lower()
    if _PER_GPU.search(text):
        return 1.0 / instance_gpus
    if _PER_SERVER.search(text) and num_gpus:
        return num_gpus / instance_gpus
    return 1.0


def _candidate(
    catalog: Catalog, m: Measurement, hardware: str | None, precision: str | None
) -> Candidate | str:
    """The catalog candidate a row was measured on, or why it has none."""
    from inferencesize.estimate import Candidate

    try:
        model = catalog.model(m.model)
    except UnknownIdError:
        return f"unknown model {m.model!r}"
    gpu_name = hardware or m.gpu
    try:
        gpu, system = catalog.hardware(gpu_name)
    except UnknownIdError:
        return f"unknown GPU {gpu_name!r}"
    prec = precision or m.precision
    if prec not in PRECISIONS:
        return f"precision {m.precision!r} not stated or unknown"
    kv = m.kv_precision if m.kv_precision in PRECISIONS else default_kv_precision(prec)
    tp = m.tp or m.num_gpus or 1
    return Candidate(model, gpu, system, prec, kv, Parallelism(tp, m.pp or 1, m.ep or 1))
