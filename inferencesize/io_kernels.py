"""Read measured kernel latencies: the gzip-compressed CSV tables of
``calibration/kernels`` (NVIDIA aiconfigurator's per-kernel database, Apache-2.0).

A table is read with the csv module into columns: text columns as lists of strings, number
columns as float arrays. A missing column, a short row or a value that is not a finite
non-negative number is one :class:`InputError` naming the file, the line and the column; no row
is dropped silently. Fitting lives in :mod:`inferencesize.kernels`, which never reads files.
"""

from __future__ import annotations

import csv
import functools
import gzip
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from inferencesize.errors import InputError
from inferencesize.kernel_step import KernelTier
from inferencesize.kernels import CollectiveParams, GemmParams
from inferencesize.kernels_attention import ContextAttentionParams, GenerationAttentionParams
from inferencesize.kernels_moe import MoeParams

FloatArray = npt.NDArray[np.float64]

#: the columns each table needs: (text columns, number columns)
#: (columns ``device`` and ``source_detail`` may be left out: blank, and the file's name)
GEMM_COLUMNS = (
    ("gpu", "device", "framework", "gemm_dtype", "source_detail"),
    ("m", "n", "k", "latency"),
)
NCCL_COLUMNS = (
    ("gpu", "op_name", "kernel_source", "nccl_dtype", "source_detail"),
    ("num_gpus", "message_size", "latency"),
)
CUSTOM_ALLREDUCE_COLUMNS = (
    ("gpu", "op_name", "kernel_source", "allreduce_dtype", "source_detail"),
    ("num_gpus", "message_size", "latency"),
)
_ATTENTION_TEXT = ("gpu", "framework", "attn_dtype", "kv_cache_dtype", "source_detail")
CONTEXT_ATTENTION_COLUMNS = (
    _ATTENTION_TEXT,
    ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size", "latency"),
)
GENERATION_ATTENTION_COLUMNS = (
    _ATTENTION_TEXT,
    (
        "batch_size", "isl", "step", "num_heads", "num_key_value_heads", "head_dim",
        "window_size", "latency",
    ),
)  # fmt: skip
_MLA_TEXT = ("gpu", "framework", "mla_dtype", "kv_cache_dtype", "source_detail")
#: MLA tables: ``num_heads`` is per GPU (after tensor parallelism)
CONTEXT_MLA_COLUMNS = (_MLA_TEXT, ("batch_size", "isl", "num_heads", "latency"))
GENERATION_MLA_COLUMNS = (_MLA_TEXT, ("batch_size", "isl", "step", "num_heads", "latency"))
MOE_COLUMNS = (
    ("gpu", "framework", "moe_dtype", "distribution", "source_detail"),
    (
        "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
        "moe_ep_size", "latency",
    ),
)  # fmt: skip
#: text columns a table may leave out, and number columns whose blank cell means 0
OPTIONAL_TEXT = ("device", "source_detail")
BLANK_IS_ZERO = ("window_size",)


@dataclass(frozen=True)
class KernelTable:
    """One table's columns; ``latency`` stays in the file's unit (milliseconds)."""

    path: str
    text: dict[str, list[str]]
    numbers: dict[str, FloatArray]

    def __len__(self) -> int:
        return len(next(iter(self.numbers.values())))


def read_kernel_table(
    path: Path, text_columns: Sequence[str], number_columns: Sequence[str]
) -> KernelTable:
    """Read ``path`` (gzip CSV, or plain CSV when the name does not end in ``.gz``)."""
    shown = str(path)
    text: dict[str, list[str]] = {name: [] for name in text_columns}
    numbers: dict[str, list[float]] = {name: [] for name in number_columns}
    missing = {"device": "", "source_detail": path.name}
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise InputError(f"{shown}: line 1: the file is empty (expected a CSV header)")
            where = {name: i for i, name in enumerate(header)}
            for name in (*text_columns, *number_columns):
                if name not in where and name not in OPTIONAL_TEXT:
                    raise InputError(f"{shown}: line 1: column {name!r} is missing")
            for row in reader:
                line = reader.line_num
                if len(row) != len(header):
                    raise InputError(
                        f"{shown}: line {line}: {len(row)} fields, the header has {len(header)}"
                    )
                for name in text_columns:
                    text[name].append(row[where[name]] if name in where else missing[name])
                for name in number_columns:
                    cell = row[where[name]]
                    blank = name in BLANK_IS_ZERO and not cell.strip()
                    numbers[name].append(0.0 if blank else _number(cell, shown, line, name))
    except (OSError, UnicodeDecodeError, EOFError, csv.Error) as err:
        raise InputError(f"{shown}: cannot read: {err}") from err
    return KernelTable(
        shown, text, {name: np.asarray(v, dtype=np.float64) for name, v in numbers.items()}
    )


def table_path(folder: Path, name: str) -> Path | None:
    """``folder/name.csv.gz`` or ``folder/name.csv``, whichever exists (None: neither)."""
    for candidate in (folder / f"{name}.csv.gz", folder / f"{name}.csv"):
        if candidate.is_file():
            return candidate
    return None


def _number(cell: str, shown: str, line: int, column: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise InputError(
            f"{shown}: line {line}: column {column!r}: expected a number, got {cell[:40]!r}"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise InputError(
            f"{shown}: line {line}: column {column!r}: expected a finite number >= 0, got {cell!r}"
        )
    return value


@dataclass(frozen=True)
class KernelFit:
    """The fitted kernel tier (``data/kernels/fit.json``), keyed by catalog GPU id first:

    * ``gemm``: (GPU, engine, GEMM dtype);
    * ``collectives``: (GPU, implementation, kind, GPU count);
    * ``context_attention``, ``generation_attention``, ``context_mla``, ``generation_mla``:
      (GPU, engine, math dtype, KV dtype);
    * ``moe``: (GPU, engine, MoE dtype, routing distribution).
    """

    gemm: dict[tuple[str, str, str], GemmParams]
    collectives: dict[tuple[str, str, str, int], CollectiveParams]
    context_attention: dict[tuple[str, str, str, str], ContextAttentionParams] = field(
        default_factory=dict
    )
    generation_attention: dict[tuple[str, str, str, str], GenerationAttentionParams] = field(
        default_factory=dict
    )
    context_mla: dict[tuple[str, str, str, str], ContextAttentionParams] = field(
        default_factory=dict
    )
    generation_mla: dict[tuple[str, str, str, str], GenerationAttentionParams] = field(
        default_factory=dict
    )
    moe: dict[tuple[str, str, str, str], MoeParams] = field(default_factory=dict)


def read_kernel_fit(path: Path) -> KernelFit:
    """Read the parameters written by ``benchmarks/kernel_fit.py`` or ``infersize calibrate
    --kernels``; a malformed entry is one InputError naming the file and the entry."""
    shown = str(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        entries = document["entries"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{shown}: cannot read the kernel fit: {err}") from err
    fit = KernelFit({}, {})
    for i, entry in enumerate(entries):
        try:
            gpu, family = str(entry["catalog_id"]), str(entry["family"])
            if family == "gemm":
                key3 = (gpu, str(entry["engine"]), str(entry["dtype"]))
                fit.gemm[key3] = GemmParams(**entry["params"])
            elif family in ("nccl", "custom_allreduce"):
                key = (gpu, str(entry["implementation"]), str(entry["kind"]))
                fit.collectives[(*key, int(entry["num_gpus"]))] = CollectiveParams(
                    **entry["params"]
                )
            elif family in ("context_attention", "context_mla"):
                key4 = (gpu, str(entry["engine"]), str(entry["dtype"]), str(entry["kv_dtype"]))
                getattr(fit, family)[key4] = ContextAttentionParams(**entry["params"])
            elif family in ("generation_attention", "generation_mla"):
                key4 = (gpu, str(entry["engine"]), str(entry["dtype"]), str(entry["kv_dtype"]))
                getattr(fit, family)[key4] = GenerationAttentionParams(**entry["params"])
            elif family == "moe":
                key4 = (gpu, str(entry["engine"]), str(entry["dtype"]), str(entry["distribution"]))
                fit.moe[key4] = MoeParams(**entry["params"])
            else:
                raise ValueError(f"unknown family {family!r}")
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"{shown}: entries[{i}]: malformed entry ({err!r})") from err
    return fit


#: where the wheel carries ``data/kernels/fit.json``, inside the package (pyproject.toml's
#: force-include; the catalog's YAML sits beside it in ``_catalog``)
PACKAGED_FIT = ("_catalog", "data", "kernels", "fit.json")


def kernel_fit_path() -> Path:
    """The shipped fit: inside the wheel (:data:`PACKAGED_FIT`) or the source checkout's
    ``data/kernels/fit.json``."""
    here = Path(__file__).resolve().parent
    packaged = here.joinpath(*PACKAGED_FIT)
    return packaged if packaged.is_file() else here.parent.joinpath(*PACKAGED_FIT[1:])


@functools.cache
def load_kernel_fit() -> KernelFit:
    """The shipped kernel tier, read once per process."""
    return read_kernel_fit(kernel_fit_path())


def kernel_tier(fit: KernelFit, architecture_of: dict[str, str | None]) -> KernelTier:
    """The tier the step model takes: the fit's tables and the architectures of its GPUs."""
    return KernelTier(
        fit.gemm,
        fit.collectives,
        fit.context_attention,
        fit.generation_attention,
        {g: architecture_of.get(g) for g in _gpus(fit)},
    )


def _gpus(fit: KernelFit) -> set[str]:
    tables: list[dict[Any, Any]] = [
        fit.gemm,
        fit.collectives,
        fit.context_attention,
        fit.generation_attention,
    ]
    return {key[0] for table in tables for key in table}


def merged_fit(base: KernelFit, mine: KernelFit) -> KernelFit:
    """``base`` with every entry of ``mine`` added, replacing the same key."""
    return KernelFit(
        **{f.name: {**getattr(base, f.name), **getattr(mine, f.name)} for f in fields(KernelFit)}
    )
