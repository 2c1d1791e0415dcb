"""Read measured kernel latencies: the gzip-compressed CSV tables of
``calibration/kernels`` (NVIDIA aiconfigurator's per-kernel database, Apache-2.0).

A table is read with the csv module into columns: text columns as lists of strings, number
columns as float arrays. A missing column, a short row or a value that is not a finite
non-negative number is one :class:`InputError` naming the file, the line and the column; no row
is dropped silently. Fitting lives in :mod:`inferencesize.kernels`, which never reads files.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from inferencesize.errors import InputError
from inferencesize.kernels import CollectiveParams, GemmParams

FloatArray = npt.NDArray[np.float64]

#: the columns each table needs: (text columns, number columns)
GEMM_COLUMNS = (
    ("gpu", "device", "framework", "gemm_dtype", "source_detail"),
    ("m", "n", "k", "latency"),
)
NCCL_COLUMNS = (
    ("gpu", "framework", "op_name", "kernel_source", "nccl_dtype", "source_detail"),
    ("num_gpus", "message_size", "latency"),
)
CUSTOM_ALLREDUCE_COLUMNS = (
    ("gpu", "framework", "op_name", "kernel_source", "allreduce_dtype", "source_detail"),
    ("num_gpus", "message_size", "latency"),
)


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
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise InputError(f"{shown}: line 1: the file is empty (expected a CSV header)")
            where = {name: i for i, name in enumerate(header)}
            for name in (*text_columns, *number_columns):
                if name not in where:
                    raise InputError(f"{shown}: line 1: column {name!r} is missing")
            for row in reader:
                line = reader.line_num
                if len(row) != len(header):
                    raise InputError(
                        f"{shown}: line {line}: {len(row)} fields, the header has {len(header)}"
                    )
                for name in text_columns:
                    text[name].append(row[where[name]])
                for name in number_columns:
                    numbers[name].append(_number(row[where[name]], shown, line, name))
    except (OSError, UnicodeDecodeError, EOFError, csv.Error) as err:
        raise InputError(f"{shown}: cannot read: {err}") from err
    return KernelTable(
        shown, text, {name: np.asarray(v, dtype=np.float64) for name, v in numbers.items()}
    )


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
    """The fitted kernel tier (``data/kernels/fit.json``), keyed by catalog GPU id."""

    gemm: dict[tuple[str, str, str], GemmParams]
    collectives: dict[tuple[str, str, str, int], CollectiveParams]


def read_kernel_fit(path: Path) -> KernelFit:
    """Read the parameters written by ``benchmarks/kernel_fit.py``; a malformed entry is one
    InputError naming the file and the entry."""
    shown = str(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        entries = document["entries"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{shown}: cannot read the kernel fit: {err}") from err
    gemm: dict[tuple[str, str, str], GemmParams] = {}
    collectives: dict[tuple[str, str, str, int], CollectiveParams] = {}
    for i, entry in enumerate(entries):
        try:
            gpu = str(entry["catalog_id"])
            if entry["family"] == "gemm":
                gemm[(gpu, str(entry["engine"]), str(entry["dtype"]))] = GemmParams(
                    **entry["params"]
                )
            else:
                key = (
                    gpu,
                    str(entry["implementation"]),
                    str(entry["kind"]),
                    int(entry["num_gpus"]),
                )
                collectives[key] = CollectiveParams(**entry["params"])
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"{shown}: entries[{i}]: malformed entry ({err!r})") from err
    return KernelFit(gemm, collectives)
