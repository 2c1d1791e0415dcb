"""The question's options, shared by `plan`, `check`, `sweep` and `frontier`, and their parsing.

Each option maps onto one scenario field (a dotted path, :data:`FLAGS`); a command collects
the values Typer parsed with :func:`overrides` and hands them to
:func:`inferencesize.study.resolve`. Groups of options are declared once as the parameters of
a template function and added to a command's signature by :func:`with_options`.

List options take repeated and comma-separated values alike: ``--tp 2 --tp 4`` is
``--tp 2,4``; ``auto`` alone (where allowed) means every valid value.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import typer

from inferencesize.cli.common import MAX_USD, finite, flag_name, open_catalog
from inferencesize.errors import InputError, UsageError
from inferencesize.specs.scenario import (
    MAX_CV,
    MAX_DEADLINE_H,
    MAX_OFFLINE_REQUESTS,
    MAX_RPS,
    MAX_TOKENS_PER_DAY,
)
from inferencesize.study import Study, nest, resolve
from inferencesize.units import PRECISIONS
from inferencesize.vocabulary import (
    Arrivals,
    Batching,
    CostBasis,
    Mode,
    Objective,
    Router,
    Statistic,
)

F = TypeVar("F", bound=Callable[..., Any])


TECH = "Serving techniques"
ECON = "Cost, power and daily traffic"
SCALE = "Scale-out"
OFFLINE = "Offline batch (instead of traffic and latency limits)"
COLLECT = "Engine and catalog"


#: Metavars of the list options (repeated or comma-separated values).
INTS_OR_AUTO = "N[,N…]|auto"
INTS = "N[,N…]"


def _list(help_text: str, metavar: str, panel: str | None = None) -> Any:
    return typer.Option(help=help_text, metavar=metavar, show_default=False, rich_help_panel=panel)


# --------------------------------------------------------------------------- templates
# Each template's parameters are options; its body is never run.


def workload_options(
    model: Annotated[str | None, typer.Option(metavar="ID", help="Model id or alias.")] = None,
    isl: Annotated[
        int | None, typer.Option(min=1, metavar="TOKENS", help="Input tokens per request.")
    ] = None,
    osl: Annotated[
        int | None, typer.Option(min=1, metavar="TOKENS", help="Output tokens per request.")
    ] = None,
    hardware: Annotated[
        list[str] | None,
        _list(
            "GPU or system ids to compare, e.g. dgx-h100,dgx-b200 (default: DGX H100, H200, B200).",
            "ID[,ID…]",
        ),
    ] = None,
    precision: Annotated[
        list[str] | None,
        _list(
            f"Weight precisions: {', '.join(PRECISIONS)} (default auto: every precision the GPU"
            " runs natively).",
            "P[,P…]|auto",
        ),
    ] = None,
    tp: Annotated[
        list[str] | None, _list("Tensor-parallel sizes, e.g. 1,2,4,8 (default auto).", INTS_OR_AUTO)
    ] = None,
    pp: Annotated[
        list[str] | None, _list("Pipeline stages, e.g. 1,2 (default auto).", INTS_OR_AUTO)
    ] = None,
    ep: Annotated[
        list[str] | None, _list("Expert-parallel sizes (default auto).", INTS_OR_AUTO)
    ] = None,
    kv_precision: Annotated[
        str | None,
        typer.Option(
            metavar="P", help="KV-cache precision (default: fp8 for fp8/fp4 weights, else 16-bit)."
        ),
    ] = None,
    mode: Annotated[
        Mode | None, typer.Option(help="streaming (TTFT/ITL/E2E limits) or sequential (E2E only).")
    ] = None,
    batching: Annotated[Batching | None, typer.Option(help="Batching of the engine.")] = None,
    ttft_ms: Annotated[
        float | None,
        typer.Option(metavar="MS", help="TTFT limit, ms (at --latency-stat; default the mean)."),
    ] = None,
    itl_ms: Annotated[
        float | None,
        typer.Option(
            metavar="MS",
            help="ITL limit, ms: a request's mean gap between tokens after the first, TPOT ="
            " (E2E − TTFT) / (OSL − 1) (at --latency-stat).",
        ),
    ] = None,
    e2e_ms: Annotated[
        float | None,
        typer.Option(metavar="MS", help="End-to-end limit, ms (at --latency-stat)."),
    ] = None,
) -> None:
    """Model, lengths, candidates and limits."""


def traffic_options(
    mean_rps: Annotated[
        float | None,
        typer.Option(metavar="RPS", help="Mean requests/s (sized at its percentile)."),
    ] = None,
    peak_rps: Annotated[
        float | None, typer.Option(metavar="RPS", help="Peak requests/s to size for.")
    ] = None,
    percentile: Annotated[
        float | None,
        typer.Option(metavar="Q", help="Peak percentile of --mean-rps, 0–1 (default 0.95)."),
    ] = None,
    batch_sizes: Annotated[
        list[str] | None,
        _list(
            "Static batching: the only batch sizes the engine runs, e.g. 1,2,4,8 (auto: any).",
            INTS_OR_AUTO,
        ),
    ] = None,
    requests: Annotated[
        float | None,
        typer.Option(
            metavar="N",
            rich_help_panel=OFFLINE,
            help="Offline batch: N requests to finish within --deadline-h (no latency limit).",
        ),
    ] = None,
    tokens_per_day: Annotated[
        float | None,
        typer.Option(
            metavar="TOKENS",
            rich_help_panel=OFFLINE,
            help="Offline: input + output tokens to process every day (within --deadline-h,"
            " default 24).",
        ),
    ] = None,
    deadline_h: Annotated[
        float | None,
        typer.Option(
            metavar="HOURS",
            rich_help_panel=OFFLINE,
            help="Offline: hours to finish the batch in; sized at the throughput-optimal load.",
        ),
    ] = None,
) -> None:
    """Traffic."""


def arrival_options(
    arrivals: Annotated[
        Arrivals | None,
        typer.Option(
            help="poisson (default): requests at a rate, limits held at --latency-stat;"
            " closed-loop: the GenAI-Perf concurrency benchmark (NVIDIA's sizing method),"
            " mean limits. Static batching, disaggregated, pipeline and offline questions"
            " are closed-loop."
        ),
    ] = None,
    cv: Annotated[
        float | None,
        typer.Option(
            metavar="CV",
            help="Arrivals at a rate: coefficient of variation of the gaps (1 Poisson, 0 evenly"
            " spaced, >1 burstier), 0–10.",
        ),
    ] = None,
    router: Annotated[
        Router | None,
        typer.Option(
            help="How requests at a rate reach the instances: least-loaded (default: the one"
            " with the fewest requests outstanding, as production routers do), round-robin,"
            " or random.",
        ),
    ] = None,
    latency_stat: Annotated[
        Statistic | None,
        typer.Option(help="Statistic the latency limits hold (poisson arrivals; default mean)."),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Size for the traffic of a file of requests (CSV arrival_s, isl, osl; the"
            " Azure trace layout; JSONL): its ISL/OSL distribution, its mean rate (unless"
            " --mean-rps or --peak-rps) and its gaps' cv; --verify replays it.",
        ),
    ] = None,
    trace_scale: Annotated[
        float | None,
        typer.Option(
            metavar="FACTOR", help="The trace's rates times this (growth planning; default 1)."
        ),
    ] = None,
    trace_window: Annotated[
        str | None,
        typer.Option(
            metavar="START:END",
            help="Only the trace's requests arriving from START to END s on its clock.",
        ),
    ] = None,
    window_s: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS", help="Windows the trace is cut into, in seconds (default 300)."
        ),
    ] = None,
    scale_up_delay_s: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Time one unit takes to start when the trace's fleet autoscales (default 600).",
        ),
    ] = None,
    trace_lengths: Annotated[
        str | None,
        typer.Option(
            metavar="distribution|mean",
            help="Size for the trace's binned ISL/OSL distribution (the default: the long"
            " prompts set KV capacity and the TTFT tail) or for its mean lengths alone.",
        ),
    ] = None,
) -> None:
    """Arrivals and the statistic the latency limits hold."""


def technique_options(
    prefix_tokens: Annotated[
        int | None,
        typer.Option(
            metavar="TOKENS",
            min=0,
            rich_help_panel=TECH,
            help="Shared prompt prefix held in the prefix cache (default: the system prompt).",
        ),
    ] = None,
    prefix_hit_rate: Annotated[
        float | None,
        typer.Option(
            metavar="SHARE",
            rich_help_panel=TECH,
            help="Share of requests whose prefix is in the cache.",
        ),
    ] = None,
    chunked_prefill: Annotated[
        int | None,
        typer.Option(
            metavar="TOKENS",
            min=16,
            rich_help_panel=TECH,
            help="Chunked prefill: prompt tokens per step, e.g. 2048.",
        ),
    ] = None,
    draft: Annotated[
        str | None,
        typer.Option(
            metavar="ID|mtp",
            rich_help_panel=TECH,
            help="Speculative decoding: draft model id (same tokenizer) or 'mtp'.",
        ),
    ] = None,
    draft_tokens: Annotated[
        int | None,
        typer.Option(
            metavar="K",
            min=1,
            max=16,
            rich_help_panel=TECH,
            help="Tokens drafted per step, k (default 4).",
        ),
    ] = None,
    acceptance: Annotated[
        float | None,
        typer.Option(
            metavar="PROB",
            rich_help_panel=TECH,
            help="Probability a drafted token is accepted.",
        ),
    ] = None,
    weight_only: Annotated[
        bool | None,
        typer.Option(
            "--weight-only/--no-weight-only",
            rich_help_panel=TECH,
            show_default=False,
            help="Weight-only quantization: low-bit weights, 16-bit GEMMs (AWQ/GPTQ).",
        ),
    ] = None,
    sparse_weights: Annotated[
        float | None,
        typer.Option(
            metavar="SHARE",
            rich_help_panel=TECH,
            help="2:4 sparsity: share of the weight bytes kept, e.g. 0.63.",
        ),
    ] = None,
    sparse_speedup: Annotated[
        float | None,
        typer.Option(
            metavar="X",
            rich_help_panel=TECH,
            help="2:4 sparsity: GEMM speed-up when compute-bound, 1 to 2.",
        ),
    ] = None,
) -> None:
    """Serving techniques (``techniques:``)."""


def economics_options(
    objective: Annotated[
        Objective | None,
        typer.Option(
            rich_help_panel=ECON,
            help="Rank plans by servers (default), gpus, cost ($/hour) or power (kW).",
        ),
    ] = None,
    cost_basis: Annotated[
        CostBasis | None,
        typer.Option(
            rich_help_panel=ECON, help="cloud ($/GPU-hour), owned (purchase + power) or auto."
        ),
    ] = None,
    usd_per_gpu_hour: Annotated[
        float | None,
        typer.Option(metavar="USD", rich_help_panel=ECON, help="Rent per GPU-hour, USD."),
    ] = None,
    server_price_usd: Annotated[
        float | None,
        typer.Option(metavar="USD", rich_help_panel=ECON, help="Purchase price per server, USD."),
    ] = None,
    amortization_years: Annotated[
        float | None,
        typer.Option(metavar="YEARS", rich_help_panel=ECON, help="Years to write servers off (4)."),
    ] = None,
    usd_per_kwh: Annotated[
        float | None,
        typer.Option(metavar="USD", rich_help_panel=ECON, help="Electricity, USD/kWh (0.10)."),
    ] = None,
    pue: Annotated[
        float | None,
        typer.Option(
            metavar="RATIO", rich_help_panel=ECON, help="Facility power / IT power (1.3)."
        ),
    ] = None,
    server_power_kw: Annotated[
        float | None,
        typer.Option(metavar="KW", rich_help_panel=ECON, help="Max IT power per server, kW."),
    ] = None,
    power_budget_kw: Annotated[
        float | None,
        typer.Option(metavar="KW", rich_help_panel=ECON, help="IT power the fleet may draw, kW."),
    ] = None,
    requests_per_day: Annotated[
        float | None,
        typer.Option(
            metavar="N",
            rich_help_panel=ECON,
            help="Daily volume (with --peak-hour-share): fixed fleet vs hourly autoscaling.",
        ),
    ] = None,
    peak_hour_share: Annotated[
        float | None,
        typer.Option(
            metavar="SHARE",
            rich_help_panel=ECON,
            help="Share of the day's requests in the busiest hour.",
        ),
    ] = None,
    hourly_rps: Annotated[
        list[str] | None, _list("24 mean requests/s, hour 0..23 (comma list).", "RPS,…×24", ECON)
    ] = None,
    spare_servers: Annotated[
        int | None,
        typer.Option(
            metavar="K",
            rich_help_panel=ECON,
            help="N + K: K spare servers beyond the peak's, paid and powered (default 0).",
        ),
    ] = None,
) -> None:
    """Economics and daily traffic."""


def scale_options(
    disaggregated: Annotated[
        bool | None,
        typer.Option(
            "--disaggregated/--aggregated",
            rich_help_panel=SCALE,
            show_default=False,
            help="Also size separate prefill and decode pools (xPyD) and compare.",
        ),
    ] = None,
    attention_dp: Annotated[
        list[str] | None,
        _list("Attention data parallelism of MoE instances.", INTS_OR_AUTO, SCALE),
    ] = None,
    span_nvlink_domain: Annotated[
        bool | None,
        typer.Option(
            "--span-nvlink-domain",
            rich_help_panel=SCALE,
            show_default=False,
            help="Let one instance fill a rack-scale NVLink domain (GB200 NVL72: 72 GPUs).",
        ),
    ] = None,
    share_gpus: Annotated[
        bool | None,
        typer.Option(
            "--share-gpus",
            rich_help_panel=SCALE,
            show_default=False,
            help="Also try several instances of a small model per GPU (MIG slices, shared GPUs).",
        ),
    ] = None,
    kv_window_tokens: Annotated[
        int | None,
        typer.Option(
            metavar="TOKENS",
            min=1,
            rich_help_panel=SCALE,
            help="Cap global-attention KV at the last N tokens (StreamingLLM).",
        ),
    ] = None,
    kv_sink_tokens: Annotated[
        int | None,
        typer.Option(
            metavar="TOKENS",
            min=0,
            rich_help_panel=SCALE,
            help="Attention-sink tokens kept with --kv-window-tokens.",
        ),
    ] = None,
    prefill_cp: Annotated[
        list[str] | None,
        _list("Context parallelism of disaggregated prefill instances, e.g. 1,2,4.", INTS, SCALE),
    ] = None,
) -> None:
    """Scale-out: disaggregation, attention DP, NVLink domains, KV caps."""


# One operating point's options (estimate, simulate): one value each, not lists.
PointModelOpt = Annotated[str | None, typer.Option(metavar="ID", help="Model id or alias.")]
PointHardwareOpt = Annotated[str | None, typer.Option(metavar="ID", help="GPU or system id.")]
PointPrecisionOpt = Annotated[
    str, typer.Option(metavar="[" + "|".join(PRECISIONS) + "]", help="Weight precision.")
]
PointKvPrecisionOpt = Annotated[
    str | None,
    typer.Option(
        metavar="P", help="KV-cache precision (default: fp8 for fp8/fp4 weights, else 16-bit)."
    ),
]
IslOpt = Annotated[
    int, typer.Option(min=1, metavar="TOKENS", help="Input tokens per request (mean).")
]
OslOpt = Annotated[
    int, typer.Option(min=1, metavar="TOKENS", help="Output tokens per request (mean).")
]
TpOpt = Annotated[int, typer.Option(min=1, metavar="N", help="Tensor-parallel GPUs.")]
PpOpt = Annotated[int, typer.Option(min=1, metavar="N", help="Pipeline stages.")]
EpOpt = Annotated[int, typer.Option(min=1, metavar="N", help="Expert-parallel groups.")]

EngineOpt = Annotated[
    str | None,
    typer.Option(
        metavar="ID",
        rich_help_panel=COLLECT,
        help="Engine: vllm, sglang, trtllm or nim, optionally @version (trtllm@0.17), or an"
        " efficiency set id; see `catalog list efficiency`. Without it: the default set, and"
        " on a GPU × precision it was not measured on, the set measured there on most rows.",
    ),
]
CalibrationOpt = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        rich_help_panel=COLLECT,
        help="A fitted efficiency set (from `infersize calibrate`).",
    ),
]
CatalogOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--catalog",
        metavar="DIR",
        rich_help_panel=COLLECT,
        show_default=False,
        help="Extra catalog directory overriding built-ins by id; repeatable."
        " Also INFERSIZE_CATALOG.",
    ),
]


def engine_options(
    engine: EngineOpt = None, calibration: CalibrationOpt = None, catalog_dirs: CatalogOpt = None
) -> None:
    """Efficiency set and catalogs."""


ScenarioArg = Annotated[
    str | None,
    typer.Argument(
        metavar="SCENARIO",
        help="Scenario YAML file or shipped scenario id (`infersize catalog list scenarios`);"
        " flags override its fields. Without it and without question flags: the shipped"
        " 'default' example.",
        show_default=False,
    ),
]

QUESTION = (
    workload_options,
    traffic_options,
    arrival_options,
    technique_options,
    economics_options,
    scale_options,
)


def with_options(*groups: Callable[..., None]) -> Callable[[F], F]:
    """Add the options of ``groups`` (template functions) to a command's signature, after its
    own parameters; the command receives them as keyword arguments (``**flags``)."""

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        hints = get_type_hints(fn, include_extras=True)
        params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in own]
        for group in groups:
            ghints = get_type_hints(group, include_extras=True)
            for p in inspect.signature(group).parameters.values():
                params.append(p.replace(annotation=ghints[p.name], kind=p.KEYWORD_ONLY))
        params.sort(key=lambda p: p.kind)
        fn.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        fn.__annotations__ = {p.name: p.annotation for p in params}
        return fn

    return wrap


# --------------------------------------------------------------------------- parsing


def split_list(values: list[str] | tuple[str, ...], flag: str) -> list[str]:
    """Repeated and comma-separated values of a list option, in order."""
    out = [part.strip() for v in values for part in str(v).split(",") if part.strip()]
    if not out:
        raise InputError(f"{flag}: expected at least one value")
    return out


def int_list(values: list[str], flag: str, allow_auto: bool = True) -> str | list[int]:
    """A TP/PP/EP-style list: 'auto' alone, or integers >= 1."""
    items = split_list(values, flag)
    if [i.lower() for i in items] == ["auto"]:
        if not allow_auto:
            raise InputError(f"{flag}: expected integers >= 1 (got 'auto')")
        return "auto"
    try:
        out = [int(i) for i in items]
    except ValueError:
        raise InputError(
            f"{flag}: expected an integer >= 1 or a comma list of them"
            + (", or 'auto'" if allow_auto else "")
            + f" (got {','.join(items)!r})"
        ) from None
    if min(out) < 1:
        raise InputError(f"{flag}: expected integers >= 1 (got {','.join(items)!r})")
    return out


def precision_list(values: list[str], flag: str) -> str | list[str]:
    items = split_list(values, flag)
    if [i.lower() for i in items] in (["auto"], ["native"]):
        return "auto"
    for p in items:
        if p not in PRECISIONS:
            raise InputError(
                f"{flag}: unknown '{p}'; expected one of {', '.join(PRECISIONS)} or auto"
            )
    return items


def float_list(values: list[str], flag: str, count: int | None = None) -> list[float]:
    items = split_list(values, flag)
    try:
        out = [finite(float(i), flag, 0.0, MAX_RPS) for i in items]
    except ValueError:
        raise InputError(f"{flag}: expected numbers (got {','.join(items)!r})") from None
    if count is not None and len(out) != count:
        raise InputError(f"{flag}: expected {count} values, one per hour (got {len(out)})")
    return out


def _same(value: Any, flag: str) -> Any:
    return value.value if isinstance(value, StrEnum) else value


def _real(low: float | None = None, high: float | None = None) -> Callable[[Any, str], Any]:
    return lambda value, flag: finite(float(value), flag, low, high)


_NON_NEGATIVE = _real(0.0)
_SHARE = _real(0.0, 1.0)
_RATE = _real(0.0, MAX_RPS)
_MONEY = _real(0.0, MAX_USD)


def _ints(value: Any, flag: str) -> Any:
    return int_list(value, flag)


def _ints_no_auto(value: Any, flag: str) -> Any:
    return int_list(value, flag, allow_auto=False)


def _batch_sizes(value: Any, flag: str) -> Any:
    return int_list(value, flag)  # 'auto': any batch size (study drops the table)


#: option (parameter name) -> (scenario field path, parser). The one table from flags to the
#: scenario; every flag of the question is here.
FLAGS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "model": ("model", _same),
    "isl": ("isl", _same),
    "osl": ("osl", _same),
    "hardware": ("hardware", lambda v, f: list(dict.fromkeys(split_list(v, f)))),
    "precision": ("precision", precision_list),
    "tp": ("tp", _ints),
    "pp": ("pp", _ints),
    "ep": ("ep", _ints),
    "kv_precision": ("kv_precision", _same),
    "mode": ("mode", _same),
    "batching": ("batching", _same),
    "ttft_ms": ("ttft_ms", _NON_NEGATIVE),
    "itl_ms": ("itl_ms", _NON_NEGATIVE),
    "e2e_ms": ("e2e_ms", _NON_NEGATIVE),
    "mean_rps": ("mean_rps", _RATE),
    "peak_rps": ("peak_rps", _RATE),
    "percentile": ("percentile", _SHARE),
    "arrivals": ("arrivals", _same),
    "cv": ("cv", _real(0.0, MAX_CV)),
    "router": ("router", _same),
    "latency_stat": ("latency_stat", _same),
    "trace": ("trace", lambda v, f: str(v)),
    "trace_scale": ("trace_scale", _real(0.0, 1e6)),
    "trace_window": ("trace_window", _same),
    "window_s": ("window_s", _real(0.0, 1e9)),
    "scale_up_delay_s": ("scale_up_delay_s", _real(0.0, 86_400.0)),
    "trace_lengths": ("trace_lengths", _same),
    "batch_sizes": ("batch_sizes", _batch_sizes),
    "requests": ("offline.requests", _real(0.0, MAX_OFFLINE_REQUESTS)),
    "tokens_per_day": ("offline.tokens_per_day", _real(0.0, MAX_TOKENS_PER_DAY)),
    "deadline_h": ("offline.deadline_h", _real(0.0, MAX_DEADLINE_H)),
    "prefix_tokens": ("techniques.prefix_tokens", _same),
    "prefix_hit_rate": ("techniques.prefix_hit_rate", _SHARE),
    "chunked_prefill": ("techniques.chunked_prefill_tokens", _same),
    "draft": ("techniques.speculative.draft", _same),
    "draft_tokens": ("techniques.speculative.draft_tokens", _same),
    "acceptance": ("techniques.speculative.acceptance", _SHARE),
    "weight_only": ("techniques.weight_only", _same),
    "sparse_weights": ("techniques.sparsity.weight_factor", _real()),
    "sparse_speedup": ("techniques.sparsity.compute_speedup", _real()),
    "objective": ("objective", _same),
    "cost_basis": ("economics.basis", _same),
    "usd_per_gpu_hour": ("economics.usd_per_gpu_hour", _MONEY),
    "server_price_usd": ("economics.server_price_usd", _MONEY),
    "amortization_years": ("economics.amortization_years", _NON_NEGATIVE),
    "usd_per_kwh": ("economics.usd_per_kwh", _MONEY),
    "pue": ("economics.pue", _real(1.0)),
    "server_power_kw": ("economics.server_power_kw", _NON_NEGATIVE),
    "power_budget_kw": ("economics.power_budget_kw", _NON_NEGATIVE),
    "requests_per_day": ("daily.requests_per_day", _real(0.0, MAX_RPS * 86_400)),
    "peak_hour_share": ("daily.peak_hour_share", _real()),
    "hourly_rps": ("daily.hourly_rps", lambda v, f: float_list(v, f, 24)),
    "spare_servers": ("redundancy.spare_servers", _same),
    "disaggregated": ("disaggregated", _same),
    "attention_dp": ("attention_dp", _ints),
    "span_nvlink_domain": ("span_nvlink_domain", _same),
    "share_gpus": ("share_gpus", _same),
    "kv_window_tokens": ("kv_cap.window_tokens", _same),
    "kv_sink_tokens": ("kv_cap.sink_tokens", _same),
    "prefill_cp": ("disaggregated.prefill.cp", _ints_no_auto),
}


#: Options an offline batch excludes: it has no traffic, arrivals or latency limits.
NOT_OFFLINE = (
    "mean_rps",
    "peak_rps",
    "percentile",
    "requests_per_day",
    "peak_hour_share",
    "hourly_rps",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "arrivals",
    "cv",
    "router",
    "latency_stat",
    "trace",
    "trace_scale",
    "trace_window",
    "window_s",
    "scale_up_delay_s",
    "trace_lengths",
)
OFFLINE_FLAGS = ("requests", "tokens_per_day", "deadline_h")


def overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario paths the given options set (None and empty lists: not given)."""
    given = {n for n, v in params.items() if n in FLAGS and v is not None and v != []}
    offline = [flag_name(n) for n in OFFLINE_FLAGS if n in given]
    clash = [flag_name(n) for n in NOT_OFFLINE if n in given]
    if offline and clash:
        raise UsageError(
            f"{'/'.join(offline)} size an offline batch (throughput by a deadline, no latency"
            f" limit): drop {', '.join(clash)}"
        )
    out: dict[str, Any] = {}
    for name, value in params.items():
        if name not in given:
            continue
        path, parse = FLAGS[name]
        out[path] = parse(value, flag_name(name))
    return out


def flag_names(paths: Iterable[str]) -> dict[str, str]:
    """The flag that sets each of ``paths`` (scenario paths, as :func:`overrides` gives
    them), for messages: ``{'mean_rps': '--mean-rps'}``."""
    by_path = {path: flag_name(name) for name, (path, _) in FLAGS.items()}
    return {p: by_path[p] for p in paths if p in by_path}


def study_from(scenario: str | None, flags: Mapping[str, Any], traffic: bool = True) -> Study:
    """The one resolved study of a command's scenario argument and option values."""
    given = overrides(flags)
    return resolve(
        open_catalog(flags.get("catalog_dirs")),
        scenario,
        given,
        engine=flags.get("engine"),
        calibration=flags.get("calibration"),
        traffic=traffic,
        flags=flag_names(given),
    )


def techniques_given(flags: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``techniques:`` block the technique options state (None: none given)."""
    given = {p: v for p, v in overrides(flags).items() if p.startswith("techniques.")}
    return nest(given)["techniques"] if given else None
