"""Fit the kernel tier on a folder of measured kernel tables, family by family, and judge it.

Shared by ``benchmarks/kernel_fit.py`` (the shipped fit, on ``calibration/kernels``) and
``infersize calibrate --kernels DIR`` (a user's own tables in the same columns). Each table
present in the folder is read (:mod:`inferencesize.io_kernels`), grouped per GPU × engine ×
dtype (collectives: per GPU × implementation × kind × GPU count), fitted
(:mod:`inferencesize.kernel_fit`) on the GPU's datasheet, and scored in-sample and, where other
GPUs measured the same key, leave-one-GPU-out: the left-out GPU predicted from the parameters
fitted jointly on the other GPUs of its architecture (all others where none is of it), on its
own datasheet. Large groups are thinned to :data:`MAX_ROWS` rows by a fixed stride, so a fit of
every table stays within minutes on one core.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast, get_args

import numpy as np
import numpy.typing as npt

from inferencesize.comm import PCIE_BYTES_PER_S
from inferencesize.errors import InputError
from inferencesize.io_kernels import (
    CONTEXT_ATTENTION_COLUMNS,
    CONTEXT_MLA_COLUMNS,
    CUSTOM_ALLREDUCE_COLUMNS,
    GEMM_COLUMNS,
    GENERATION_ATTENTION_COLUMNS,
    GENERATION_MLA_COLUMNS,
    MOE_COLUMNS,
    NCCL_COLUMNS,
    KernelTable,
    read_kernel_table,
    table_path,
)
from inferencesize.kernel_fit import (
    fit_collective,
    fit_context_attention,
    fit_gemm,
    fit_generation_attention,
    fit_moe,
)
from inferencesize.kernels import (
    ELEMENT_BYTES,
    GEMM_DTYPES,
    CollectiveKind,
    CollectiveParams,
    FloatArray,
    GemmParams,
    KernelParams,
    collective_time_s,
    error_summary,
    gemm_bytes,
    gemm_time_s,
    relative_errors,
)
from inferencesize.kernels_attention import (
    ATTENTION_BYTES,
    ATTENTION_PRECISION,
    MLA_CONTEXT_HEAD_DIM,
    ContextAttentionParams,
    GenerationAttentionParams,
    attended,
    context_attention_bytes,
    context_attention_time_s,
    generation_attention_bytes,
    generation_attention_flops,
    generation_attention_time_s,
    mla_generation_bytes,
    mla_generation_flops,
)
from inferencesize.kernels_moe import (
    MOE_DTYPES,
    MoeParams,
    moe_bytes,
    moe_flops,
    moe_pairs,
    moe_time_s,
    moe_touched,
)
from inferencesize.specs.hardware import GpuSpec

Rows = npt.NDArray[np.intp]
#: the six arrays a family's time function takes before its parameters
Shape6 = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]
Shape8 = tuple[
    FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray
]

#: rows fitted per group at most (a stride through the group keeps its spread of shapes); the
#: shared tables hold at most 5,000 rows per GPU × engine, so they are fitted whole
MAX_ROWS = 5000

#: rows a GPU × engine × dtype needs for a fit: more than the most parameters of a family
MIN_ROWS = 8

#: GEMM calls of at least this long are also reported apart: a step's time is mostly theirs
LONG_S = 10e-6
LONG_GEMM = "gemm_from_10us"

#: the shared tables' gpu names -> catalog ids; rows whose device is a GB300 (filed under
#: b300_sxm) are fitted as the GB300 they were measured on. Any other name must be a GPU id of
#: the catalog.
DEVICE_GPU = {"NVIDIA GB300": "gb300"}
CATALOG_ID = {
    "gb300": "gb300",
    "a100_sxm": "a100-sxm-80gb",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "l40s": "l40s",
}


def link_bytes_per_s(gpu: GpuSpec) -> float:
    """Per-direction scale-up bandwidth: half the bidirectional NVLink figure, else PCIe."""
    if gpu.scale_up_bandwidth_bytes_per_s > 0:
        return gpu.scale_up_bandwidth_bytes_per_s / 2.0
    return PCIE_BYTES_PER_S[gpu.pcie_gen or 4]


@dataclass(frozen=True)
class TableGpus:
    """The GPUs of the tables by their name there: datasheet and catalog id."""

    specs: dict[str, GpuSpec]
    catalog_id: dict[str, str]


@dataclass
class KernelReport:
    """|relative error| arrays per (GPU, family), in-sample and leave-one-GPU-out, and the
    fitted entries (the ``entries`` of a fit document)."""

    fitted: dict[tuple[str, str], list[FloatArray]] = field(
        default_factory=lambda: defaultdict(list)
    )
    left_out: dict[tuple[str, str], list[FloatArray]] = field(
        default_factory=lambda: defaultdict(list)
    )
    entries: list[dict[str, object]] = field(default_factory=list)
    #: what each entry's ``table`` starts with (then the table's file name)
    table_prefix: str = ""


def rounded(params: KernelParams) -> dict[str, float]:
    """Four significant digits: the fit is not better than that."""
    return {name: float(f"{value:.4g}") for name, value in asdict(params).items()}


def _groups(table: KernelTable, columns: tuple[str, ...]) -> dict[tuple[str, ...], Rows]:
    """Row indices per distinct value of ``columns``."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    cells = [
        table.text[c] if c in table.text else [f"{v:g}" for v in table.numbers[c]] for c in columns
    ]
    for i, key in enumerate(zip(*cells, strict=True)):
        groups[key].append(i)
    return {key: np.array(rows) for key, rows in groups.items()}


def _thin(rows: Rows) -> Rows:
    if len(rows) <= MAX_ROWS:
        return rows
    return rows[np.linspace(0, len(rows) - 1, MAX_ROWS).astype(np.intp)]


def _donors(gpu: str, gpus: list[str], specs: dict[str, GpuSpec]) -> list[str]:
    """The GPUs whose fit a left-out GPU takes: same architecture if any, else all others."""
    others = [g for g in gpus if g != gpu]
    same = [g for g in others if specs[g].architecture == specs[gpu].architecture]
    return same or others


def _source(table: KernelTable, rows: Rows) -> str:
    return "; ".join(sorted({table.text["source_detail"][i] for i in rows}))


#: a family's fit and prediction over rows of one table: (fit(rows), predict(rows, params))
Fitter = Callable[[Rows], KernelParams]
Predictor = Callable[[Rows, KernelParams], FloatArray]


def _run_family(
    table: KernelTable,
    gpus: TableGpus,
    key_columns: tuple[str, ...],
    family: Callable[[tuple[str, ...]], str],
    fit: Fitter,
    predict: Predictor,
    entry: Callable[[tuple[str, ...]], dict[str, object]],
    report: KernelReport,
) -> None:
    """Fit every group of ``table`` (keyed by ``gpu`` then ``key_columns``), score it and,
    leaving each GPU out, score the fit of the other GPUs on it."""
    latency_s = table.numbers["latency"] * 1e-3
    groups = _groups(table, ("gpu", *key_columns))
    names = sorted({key[0] for key in groups})
    for key, rows in sorted(groups.items()):
        gpu, rest = key[0], key[1:]
        if len(rows) < MIN_ROWS:
            raise InputError(
                f"{table.path}: {' '.join(key)}: {len(rows)} rows, a fit needs at least"
                f" {MIN_ROWS} of one GPU × {' × '.join(key_columns)} (shapes spread from small"
                " to large)"
            )
        p = fit(_thin(rows))
        errors = relative_errors(predict(rows, p), latency_s[rows])
        report.fitted[(gpu, family(rest))].append(errors)
        if family(rest).startswith("gemm"):
            report.fitted[(gpu, LONG_GEMM)].append(errors[latency_s[rows] >= LONG_S])
        head = entry(key)
        report.entries.append(
            {
                "family": head.pop("family"),
                "gpu": gpu,
                "catalog_id": gpus.catalog_id[gpu],
                **head,
                "params": rounded(p),
                "rows": len(rows),
                "source": _source(table, rows),
                "table": report.table_prefix + Path(table.path).name,
            }
        )
        others = [g for g in _donors(gpu, names, gpus.specs) if (g, *rest) in groups]
        if not others:
            continue
        pool = np.concatenate([_thin(groups[(g, *rest)]) for g in others])
        errors = relative_errors(predict(rows, fit(pool)), latency_s[rows])
        report.left_out[(gpu, family(rest))].append(errors)
        if family(rest).startswith("gemm"):
            report.left_out[(gpu, LONG_GEMM)].append(errors[latency_s[rows] >= LONG_S])


def _sheet(
    table: KernelTable, gpus: TableGpus, rows: Rows, precision: str
) -> tuple[FloatArray, FloatArray]:
    """Per row: the GPU's datasheet dense peak at ``precision`` (NaN where it has none) and
    its HBM bandwidth."""
    names = [table.text["gpu"][i] for i in rows]
    peak = [gpus.specs[g].dense_flops.get(precision) or float("nan") for g in names]
    if any(np.isnan(peak)):
        gpu = names[int(np.argmax(np.isnan(peak)))]
        raise InputError(
            f"{table.path}: line {int(rows[0]) + 2}: GPU {gpu!r} has no dense {precision} peak"
            " in the catalog, so its rows of that precision cannot be fitted (give the"
            " catalog entry a dense_flops figure for it, or leave those rows out)"
        )
    bw = [gpus.specs[g].hbm_bandwidth_bytes_per_s for g in names]
    return np.array(peak, dtype=np.float64), np.array(bw, dtype=np.float64)


def _catalog_entry(
    family: str, names: tuple[str, ...]
) -> Callable[[tuple[str, ...]], dict[str, object]]:
    def entry(key: tuple[str, ...]) -> dict[str, object]:
        return {"family": family, **dict(zip(names, key[1:], strict=True))}

    return entry


def run_gemm(table: KernelTable, gpus: TableGpus, report: KernelReport) -> None:
    """GEMM per GPU × engine × dtype."""
    m, n, k = (table.numbers[c] for c in ("m", "n", "k"))
    latency_s = table.numbers["latency"] * 1e-3
    dtypes = table.text["gemm_dtype"]

    def shape(rows: Rows) -> Shape6:
        dtype = dtypes[rows[0]]
        peak, bw = _sheet(table, gpus, rows, GEMM_DTYPES[dtype][0])
        return m[rows], n[rows], k[rows], gemm_bytes(m[rows], n[rows], k[rows], dtype), peak, bw

    def predict(rows: Rows, p: KernelParams) -> FloatArray:
        return gemm_time_s(*shape(rows), cast(GemmParams, p))

    _run_family(
        table, gpus, ("framework", "gemm_dtype"), lambda rest: f"gemm {rest[1]}",
        lambda rows: fit_gemm(*shape(rows), latency_s[rows]), predict,
        _catalog_entry("gemm", ("engine", "dtype")), report,
    )  # fmt: skip


def run_collectives(
    table: KernelTable, gpus: TableGpus, report: KernelReport, dtype_column: str, family: str
) -> None:
    """Collectives per GPU × implementation × kind × GPU count."""
    n_gpus = table.numbers["num_gpus"]
    width = np.array([ELEMENT_BYTES[d] for d in table.text[dtype_column]])
    message_bytes = table.numbers["message_size"] * width
    latency_s = table.numbers["latency"] * 1e-3
    kinds = table.text["op_name"]

    def link(rows: Rows) -> FloatArray:
        return np.array([link_bytes_per_s(gpus.specs[table.text["gpu"][i]]) for i in rows])

    def fit(rows: Rows) -> KernelParams:
        kind = cast(CollectiveKind, kinds[rows[0]])
        return fit_collective(
            kind, float(n_gpus[rows[0]]), message_bytes[rows], link(rows), latency_s[rows]
        )

    def predict(rows: Rows, p: KernelParams) -> FloatArray:
        kind = cast(CollectiveKind, kinds[rows[0]])
        return collective_time_s(
            kind, n_gpus[rows], message_bytes[rows], link(rows), cast(CollectiveParams, p)
        )

    def entry(key: tuple[str, ...]) -> dict[str, object]:
        gpu, impl, kind, count = key
        return {
            "family": family, "implementation": impl,
            "kind": kind, "num_gpus": int(float(count)),
            "link_bytes_per_s": link_bytes_per_s(gpus.specs[gpu]),
        }  # fmt: skip

    _run_family(
        table, gpus, ("kernel_source", "op_name", "num_gpus"), lambda rest: family, fit, predict,
        entry, report,
    )  # fmt: skip


def run_context_attention(table: KernelTable, gpus: TableGpus, report: KernelReport) -> None:
    """Prefill attention per GPU × engine × math dtype × KV dtype."""
    num = table.numbers
    batch, seq, heads, head_dim = num["batch_size"], num["isl"], num["num_heads"], num["head_dim"]
    latency_s = num["latency"] * 1e-3
    q_bytes = np.array([ATTENTION_BYTES[d] for d in table.text["attn_dtype"]])
    kv_bytes = np.array([ATTENTION_BYTES[d] for d in table.text["kv_cache_dtype"]])
    moved = context_attention_bytes(
        batch, seq, heads, num["num_key_value_heads"], head_dim, q_bytes, kv_bytes
    )

    def shape(rows: Rows) -> Shape8:
        peak, bw = _sheet(table, gpus, rows, ATTENTION_PRECISION[table.text["attn_dtype"][rows[0]]])
        window = num["window_size"][rows]
        return batch[rows], seq[rows], heads[rows], head_dim[rows], window, moved[rows], peak, bw

    def predict(rows: Rows, p: KernelParams) -> FloatArray:
        return context_attention_time_s(*shape(rows), cast(ContextAttentionParams, p))

    _run_family(
        table, gpus, ("framework", "attn_dtype", "kv_cache_dtype"), lambda rest: "context_attention",
        lambda rows: fit_context_attention(*shape(rows), latency_s[rows]), predict,
        _catalog_entry("context_attention", ("engine", "dtype", "kv_dtype")), report,
    )  # fmt: skip


def run_generation_attention(table: KernelTable, gpus: TableGpus, report: KernelReport) -> None:
    """Decode attention per GPU × engine × math dtype × KV dtype; the attended tokens are the
    position ``step`` plus the ``isl`` new ones, at most the window."""
    num = table.numbers
    batch, heads, kv_heads = num["batch_size"], num["num_heads"], num["num_key_value_heads"]
    latency_s = num["latency"] * 1e-3
    kv_bytes = np.array([ATTENTION_BYTES[d] for d in table.text["kv_cache_dtype"]])
    kv_len = attended(num["step"] + num["isl"], num["window_size"])
    flops = generation_attention_flops(batch, kv_len, heads, num["head_dim"])
    moved = generation_attention_bytes(batch, kv_len, heads, kv_heads, num["head_dim"], kv_bytes)

    def shape(rows: Rows) -> Shape6:
        peak, bw = _sheet(table, gpus, rows, ATTENTION_PRECISION[table.text["attn_dtype"][rows[0]]])
        return flops[rows], moved[rows], kv_len[rows], batch[rows] * kv_heads[rows], peak, bw

    def predict(rows: Rows, p: KernelParams) -> FloatArray:
        return generation_attention_time_s(*shape(rows), cast(GenerationAttentionParams, p))

    _run_family(
        table, gpus, ("framework", "attn_dtype", "kv_cache_dtype"), lambda rest: "generation_attention",
        lambda rows: fit_generation_attention(*shape(rows), latency_s[rows]), predict,
        _catalog_entry("generation_attention", ("engine", "dtype", "kv_dtype")), report,
    )  # fmt: skip


def run_context_mla(table: KernelTable, gpus: TableGpus, report: KernelReport) -> None:
    """DeepSeek MLA prefill per GPU × engine × math dtype × KV dtype: context attention with
    one KV head a query head and head dimension (192 + 128)/2, full causal; ``dim_half`` held
    at 0 (one head dimension in every row)."""
    num = table.numbers
    batch, seq, heads = num["batch_size"], num["isl"], num["num_heads"]
    latency_s = num["latency"] * 1e-3
    q_bytes = np.array([ATTENTION_BYTES[d] for d in table.text["mla_dtype"]])
    kv_bytes = np.array([ATTENTION_BYTES[d] for d in table.text["kv_cache_dtype"]])
    dim = np.full(len(table), MLA_CONTEXT_HEAD_DIM)
    moved = context_attention_bytes(batch, seq, heads, heads, dim, q_bytes, kv_bytes)

    def shape(rows: Rows) -> Shape8:
        peak, bw = _sheet(table, gpus, rows, ATTENTION_PRECISION[table.text["mla_dtype"][rows[0]]])
        window = np.zeros(len(rows))
        return batch[rows], seq[rows], heads[rows], dim[rows], window, moved[rows], peak, bw

    def predict(rows: Rows, p: KernelParams) -> FloatArray:
        return context_attention_time_s(*shape(rows), cast(ContextAttentionParams, p))

    _run_family(
        table, gpus, ("framework", "mla_dtype", "kv_cache_dtype"), lambda rest: "context_mla",
        lambda rows: fit_context_attention(*shape(rows), latency_s[rows], fit_dim_half=False),
        predict, _catalog_entry("context_mla", ("engine", "dtype", "kv_dtype")), report,
    )  # fmt: skip


def run_generation_mla(table: KernelTable, gpus: TableGpus, report: KernelReport) -> None:
    """DeepSeek MLA decode (weights absorbed) per GPU × engine × math dtype × KV dtype: the
    latent cache read once per sequence (items = sequences), the FLOPs of
    :func:`~inferencesize.kernels_attention.mla_generation_flops`."""
    num = table.numbers
    batch, heads = num["batch_size"], num["num_heads"]
    latency_s = num["latency"] * 1e-3
    kv_bytes = np.array([ATTENTION_BYTES[d] for d in table.text["kv_cache_dtype"]])
    kv_len = num["step"] + num["isl"]
    flops = mla_generation_flops(batch, kv_len, heads)
    moved = mla_generation_bytes(batch, kv_len, heads, kv_bytes)

    def shape(rows: Rows) -> Shape6:
        peak, bw = _sheet(table, gpus, rows, ATTENTION_PRECISION[table.text["mla_dtype"][rows[0]]])
        return flops[rows], moved[rows], kv_len[rows], batch[rows], peak, bw

    def predict(rows: Rows, p: KernelParams) -> FloatArray:
        return generation_attention_time_s(*shape(rows), cast(GenerationAttentionParams, p))

    _run_family(
        table, gpus, ("framework", "mla_dtype", "kv_cache_dtype"), lambda rest: "generation_mla",
        lambda rows: fit_generation_attention(*shape(rows), latency_s[rows]), predict,
        _catalog_entry("generation_mla", ("engine", "dtype", "kv_dtype")), report,
    )  # fmt: skip


def run_moe(table: KernelTable, gpus: TableGpus, report: KernelReport) -> None:
    """MoE layers per GPU × engine × MoE dtype × routing distribution."""
    num = table.numbers
    tokens, topk, experts = num["num_tokens"], num["topk"], num["num_experts"]
    hidden, inter, tp, ep = (
        num[c] for c in ("hidden_size", "inter_size", "moe_tp_size", "moe_ep_size")
    )
    latency_s = num["latency"] * 1e-3
    dtypes = table.text["moe_dtype"]
    pairs = moe_pairs(tokens, topk, ep)
    routed = tokens * topk
    rows_per_expert = pairs / np.maximum(moe_touched(tokens, topk, experts, ep), 1e-9)
    flops = moe_flops(tokens, topk, hidden, inter, tp, ep)

    def shape(rows: Rows) -> Shape6:
        dtype = dtypes[rows[0]]
        peak, bw = _sheet(table, gpus, rows, MOE_DTYPES[dtype][0])
        moved = moe_bytes(
            tokens[rows], topk[rows], experts[rows], hidden[rows], inter[rows], tp[rows],
            ep[rows], dtype,
        )  # fmt: skip
        return flops[rows], moved, routed[rows], rows_per_expert[rows], peak, bw

    def predict(rows: Rows, p: KernelParams) -> FloatArray:
        return moe_time_s(*shape(rows), cast(MoeParams, p))

    _run_family(
        table, gpus, ("framework", "moe_dtype", "distribution"), lambda rest: "moe",
        lambda rows: fit_moe(*shape(rows), latency_s[rows]), predict,
        _catalog_entry("moe", ("engine", "dtype", "distribution")), report,
    )  # fmt: skip


#: the reader of each table: (columns, run)
RUNS: dict[
    str,
    tuple[
        tuple[tuple[str, ...], tuple[str, ...]],
        Callable[[KernelTable, TableGpus, KernelReport], None],
    ],
] = {
    "gemm_perf": (GEMM_COLUMNS, run_gemm),
    "nccl_perf": (NCCL_COLUMNS, lambda t, g, r: run_collectives(t, g, r, "nccl_dtype", "nccl")),
    "custom_allreduce_perf": (
        CUSTOM_ALLREDUCE_COLUMNS,
        lambda t, g, r: run_collectives(t, g, r, "allreduce_dtype", "custom_allreduce"),
    ),
    "context_attention_perf": (CONTEXT_ATTENTION_COLUMNS, run_context_attention),
    "generation_attention_perf": (GENERATION_ATTENTION_COLUMNS, run_generation_attention),
    "context_mla_perf": (CONTEXT_MLA_COLUMNS, run_context_mla),
    "generation_mla_perf": (GENERATION_MLA_COLUMNS, run_generation_mla),
    "moe_perf": (MOE_COLUMNS, run_moe),
}


def _table_gpus(table: KernelTable, catalog_gpus: Mapping[str, GpuSpec]) -> TableGpus:
    """Map the table's GPU names to catalog GPUs (a GB300's rows by their device); an unknown
    name is an InputError naming the file, the line and the column."""
    names = table.text["gpu"]
    if "device" in table.text:
        names = [DEVICE_GPU.get(d, g) for g, d in zip(names, table.text["device"], strict=True)]
        table.text["gpu"] = names
    catalog_id: dict[str, str] = {}
    for i, name in enumerate(names):
        if name in catalog_id:
            continue
        cid = CATALOG_ID.get(name, name)
        if cid not in catalog_gpus:
            known = ", ".join(sorted(catalog_gpus)[:6])
            raise InputError(
                f"{table.path}: line {i + 2}: column 'gpu': unknown GPU {name!r}"
                f" (give a catalog GPU id, e.g. {known}; `infersize catalog list gpus`)"
            )
        catalog_id[name] = cid
    return TableGpus({n: catalog_gpus[c] for n, c in catalog_id.items()}, catalog_id)


#: the values a text column may take, where the models need to know them
KNOWN_VALUES: dict[str, tuple[str, ...]] = {
    "gemm_dtype": tuple(GEMM_DTYPES),
    "attn_dtype": tuple(ATTENTION_BYTES),
    "kv_cache_dtype": tuple(ATTENTION_BYTES),
    "mla_dtype": tuple(ATTENTION_BYTES),
    "moe_dtype": tuple(MOE_DTYPES),
    "nccl_dtype": tuple(ELEMENT_BYTES),
    "allreduce_dtype": tuple(ELEMENT_BYTES),
    "op_name": get_args(CollectiveKind),
}


def check_table(table: KernelTable) -> None:
    """Every latency positive and every dtype or collective one the models know; else an
    InputError naming the file, the line and the column."""
    for column, allowed in KNOWN_VALUES.items():
        if column == "op_name" and "message_size" not in table.numbers:
            continue  # only the collectives' op_name names a kind
        for i, value in enumerate(table.text.get(column, [])):
            if value not in allowed:
                raise InputError(
                    f"{table.path}: line {i + 2}: column {column!r}: unknown {value!r}"
                    f" (one of {', '.join(allowed)})"
                )
    zero = np.flatnonzero(table.numbers["latency"] <= 0)
    if len(zero):
        raise InputError(
            f"{table.path}: line {int(zero[0]) + 2}: column 'latency': expected a time > 0 ms,"
            " got 0"
        )


def fit_folder(
    folder: Path, catalog_gpus: Mapping[str, GpuSpec], table_prefix: str = ""
) -> KernelReport:
    """Read every kernel table in ``folder`` (any of :data:`RUNS`, ``.csv`` or ``.csv.gz``),
    fit it and score it; an InputError where the folder holds none. Each entry's ``table``
    is ``table_prefix`` and the file's name."""
    report = KernelReport(table_prefix=table_prefix)
    found = 0
    for name, (columns, run) in RUNS.items():
        path = table_path(folder, name)
        if path is None:
            continue
        found += 1
        table = read_kernel_table(path, *columns)
        if len(table):
            check_table(table)
            run(table, _table_gpus(table, catalog_gpus), report)
    if not found:
        raise InputError(
            f"{folder}: no kernel table (expected one of"
            f" {', '.join(n + '.csv[.gz]' for n in RUNS)})"
        )
    return report


def fit_document(report: KernelReport, about: str) -> dict[str, object]:
    """The fit as a JSON document (read back by :func:`inferencesize.io_kernels.read_kernel_fit`);
    ``about`` says who fitted it on what."""
    return {
        "about": about,
        "units": "shares of the datasheet (eta_*), elements (*_half), seconds (*_s),"
        " bytes/s (link_bytes_per_s)",
        "entries": report.entries,
    }


@dataclass(frozen=True)
class KernelFit:
    """``infersize calibrate --kernels``: the fit's JSON document and, per kernel family, the
    rows and GPUs fitted and the error (in-sample; leave-one-GPU-out where measured)."""

    entries: int
    document: dict[str, object]
    families: list[dict[str, object]]


def fit_kernel_tables(folder: Path, catalog_gpus: Mapping[str, GpuSpec]) -> KernelFit:
    """Fit the kernel tables of a user's ``folder`` (:func:`fit_folder`) and summarise the error
    per family; an InputError naming the folder when its tables hold no rows."""
    fitted = fit_folder(folder, catalog_gpus)
    if not fitted.entries:
        raise InputError(f"--kernels: {folder}: the tables hold no rows")
    about = (
        f"Kernel tier of infersize (inferencesize.kernels), fitted by `infersize calibrate"
        f" --kernels` on the kernel latencies of {folder.name}/; each entry's source and table"
        " name its rows' origin and rows their count."
    )
    families: dict[str, dict[str, object]] = {}
    rows: dict[str, int] = defaultdict(int)
    gpus: dict[str, list[str]] = defaultdict(list)
    for gpu, family in sorted(fitted.fitted):
        name = family.split()[0]
        rows[name] += sum(len(e) for e in fitted.fitted[(gpu, family)])
        if gpu not in gpus[name]:
            gpus[name].append(gpu)
    for name in rows:
        record: dict[str, object] = {"family": name, "rows": rows[name], "gpus": gpus[name]}
        own = [e for (_, f), es in fitted.fitted.items() if f.split()[0] == name for e in es]
        left = [e for (_, f), es in fitted.left_out.items() if f.split()[0] == name for e in es]
        med, p90 = error_summary(np.concatenate(own))
        record |= {"median_error": med, "p90_error": p90}
        if left:
            med, p90 = error_summary(np.concatenate(left))
            record |= {"left_one_gpu_out_median_error": med, "left_one_gpu_out_p90_error": p90}
        families[name] = record
    return KernelFit(len(fitted.entries), fit_document(fitted, about), list(families.values()))
