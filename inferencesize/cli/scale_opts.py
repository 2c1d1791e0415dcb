"""Scale-out options of `infersize plan`: disaggregated prefill/decode pools, attention DP with
wide EP, rack-scale NVLink domains and KV caps (flags, scenario plumbing, output)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import Catalog
from inferencesize.cli.common import split_ints, stdout
from inferencesize.errors import CatalogError, InputError, UnknownIdError
from inferencesize.estimate import Estimator
from inferencesize.planner import Limits, PlanResult
from inferencesize.specs.scenario import Pool, ScenarioSpec

if TYPE_CHECKING:  # the disaggregated planner is imported only for scenarios that use it
    from inferencesize.disagg import Comparison, DisaggPlan, PoolPlan, PoolSpec

#: Attention-DP degrees tried for ``attention_dp: auto``.
AUTO_DP = [1, 2, 4, 8, 16, 32, 64]

DisaggOpt = Annotated[
    bool | None,
    typer.Option(
        "--disaggregated/--aggregated",
        help="Also size separate prefill and decode pools (xPyD) and compare with aggregated"
        " serving. Pools inherit the scenario's hardware/precision/splits unless its"
        " disaggregated: block says otherwise. Example: --disaggregated",
        show_default=False,
    ),
]
AttentionDpOpt = Annotated[
    str | None,
    typer.Option(
        "--attention-dp",
        help="Attention data parallelism for MoE models (N, N,M or auto): attention replicated"
        " on DP groups, experts EP-sharded over all GPUs. Example: --attention-dp 8 --ep 8",
    ),
]
SpanOpt = Annotated[
    bool | None,
    typer.Option(
        "--span-nvlink-domain",
        help="Let one instance fill a rack-scale NVLink domain (GB200 NVL72: 72 GPUs)"
        " instead of one 4-GPU tray. Example: --hardware gb200-nvl72 --span-nvlink-domain",
        show_default=False,
    ),
]
KvWindowOpt = Annotated[
    int | None,
    typer.Option(
        "--kv-window-tokens",
        min=1,
        help="Cap the KV cache of global-attention layers at the last N tokens (plus"
        " --kv-sink-tokens, default 4): StreamingLLM. Example: --kv-window-tokens 8192",
    ),
]
KvSinkOpt = Annotated[
    int | None,
    typer.Option(
        "--kv-sink-tokens", min=0, help="Attention-sink tokens kept with --kv-window-tokens."
    ),
]
PrefillCpOpt = Annotated[
    str | None,
    typer.Option(
        "--prefill-cp",
        help="Context parallelism of disaggregated prefill instances for long prompts"
        " (N or N,M). Example: --disaggregated --prefill-cp 1,2,4",
    ),
]


#: Flag keys this module owns (``plan_cmd._flags``).
KEYS = (
    "disaggregated",
    "attention_dp",
    "span_nvlink_domain",
    "kv_window_tokens",
    "kv_sink_tokens",
    "prefill_cp",
)


def apply_flags(data: dict[str, Any], flags: dict[str, Any]) -> bool:
    """Fold the scale-out flags into scenario ``data``; True when any was given."""
    given = False
    if flags.get("disaggregated") is not None:
        given = True
        if flags["disaggregated"]:
            data["disaggregated"] = data.get("disaggregated") or {}
        else:
            data.pop("disaggregated", None)
    if flags.get("attention_dp") is not None:
        given = True
        data["attention_dp"] = split_ints(flags["attention_dp"], "--attention-dp")
    if flags.get("span_nvlink_domain") is not None:
        given = True
        data["span_nvlink_domain"] = flags["span_nvlink_domain"]
    if flags.get("kv_window_tokens") is not None or flags.get("kv_sink_tokens") is not None:
        given = True
        cap = dict(data.get("kv_cap") or {})
        if flags.get("kv_window_tokens") is not None:
            cap["window_tokens"] = flags["kv_window_tokens"]
        if flags.get("kv_sink_tokens") is not None:
            cap["sink_tokens"] = flags["kv_sink_tokens"]
        data["kv_cap"] = cap
    if flags.get("prefill_cp") is not None:
        given = True
        cps = split_ints(flags["prefill_cp"], "--prefill-cp")
        if cps == "auto":
            raise InputError("--prefill-cp: expected integers >= 1 (got 'auto')")
        dis = dict(data.get("disaggregated") or {})
        dis["prefill"] = {**dict(dis.get("prefill") or {}), "cp": cps}
        data["disaggregated"] = dis
    return given


def dps(value: Any) -> list[int] | None:
    """Attention-DP degrees to try (None: 1 only)."""
    if value is None:
        return None
    return AUTO_DP if value == "auto" else list(value)


def kv_cap(scenario: ScenarioSpec) -> tuple[int, int]:
    cap = scenario.kv_cap
    return (cap.sink_tokens, cap.window_tokens) if cap else (0, 0)


def _splits(value: Any) -> list[int] | None:
    return None if value in (None, "auto") else list(value)


def pool_spec(
    catalog: Catalog, scenario: ScenarioSpec, pool: Pool, role: str, shown: str
) -> PoolSpec:
    from inferencesize.disagg import PoolSpec

    names = pool.hardware or scenario.hardware
    hardware = []
    for i, name in enumerate(dict.fromkeys(names)):
        try:
            hardware.append(catalog.hardware(name))
        except UnknownIdError as err:
            raise CatalogError(shown, f"disaggregated.{role}.hardware[{i}]", str(err)) from None
    return PoolSpec(
        hardware=hardware,
        precisions=pool.precision or scenario.precision,
        kv_precision=pool.kv_precision or scenario.kv_precision,
        tps=_splits(pool.tp if pool.tp is not None else scenario.tp),
        pps=_splits(pool.pp if pool.pp is not None else scenario.pp),
        eps=_splits(pool.ep if pool.ep is not None else scenario.ep),
        cps=tuple(pool.cp or [1]),
        dps=dps(pool.attention_dp if pool.attention_dp is not None else scenario.attention_dp),
        span_nvlink_domain=scenario.span_nvlink_domain,
    )


def compare(
    catalog: Catalog,
    scenario: ScenarioSpec,
    aggregated: PlanResult,
    peak: float,
    limits: Limits,
    est: Estimator,
    shown: str,
) -> Comparison | None:
    """Disaggregated sizing next to the aggregated plan, when the scenario asks for it."""
    dis = scenario.disaggregated
    if dis is None or scenario.model is None:
        return None
    from inferencesize.disagg import Comparison, plan_disaggregated

    model = catalog.model(scenario.model)
    result = plan_disaggregated(
        model,
        pool_spec(catalog, scenario, dis.prefill, "prefill", shown),
        pool_spec(catalog, scenario, dis.decode, "decode", shown),
        scenario.input_tokens,
        scenario.output_tokens,
        peak,
        limits,
        est,
    )
    return Comparison(result, aggregated)


def _pool_record(p: PoolPlan) -> dict[str, Any]:
    c = p.candidate
    return {
        **c.fields(),
        "dp": c.par.dp,
        "cp": p.cp,
        "instances": p.instances,
        "gpus_per_instance": p.gpus_per_instance,
        "gpus": p.gpus,
        "servers": p.servers,
        "batch": p.batch,
        "step_ms": p.step_s * 1e3,
        "requests_per_s_per_instance": p.rate,
        "cost_per_hour_usd": p.cost_per_hour_usd,
        "efficiency": p.efficiency_source,
    }


def _plan_record(d: DisaggPlan) -> dict[str, Any]:
    return {
        "ratio": d.ratio,
        "prefill": _pool_record(d.prefill),
        "decode": _pool_record(d.decode),
        "kv_transfer": {
            "bytes": d.kv_transfer_bytes,
            "ms": d.kv_transfer_s * 1e3,
            "link": d.kv_link,
        },
        "ttft_ms": d.ttft_s * 1e3,
        "itl_ms": d.itl_s * 1e3,
        "e2e_ms": d.e2e_s * 1e3,
        "gpus": d.gpus,
        "servers": d.servers,
        "capacity_rps": d.capacity_rps,
        "power_kw": d.power_watts / 1e3 if d.power_watts is not None else None,
        "cost_per_hour_usd": d.cost_per_hour_usd,
    }


def record(cmp: Comparison) -> dict[str, Any]:
    """The ``disaggregated`` block of the plan JSON."""
    r = cmp.disaggregated
    return {
        "plan": _plan_record(r.chosen) if r.chosen else None,
        "reason": r.reason,
        "rejected": [{"candidate": x.candidate, "reason": x.reason} for x in r.rejected],
        "better": cmp.better,
    }


def print_table(rec: dict[str, Any], isl: int, osl: int) -> None:
    out = stdout()
    block = rec["disaggregated"]
    d = block["plan"]
    if d is None:
        out.print(f"disaggregated: no feasible plan ({block['reason']})")
        return

    def pool(p: dict[str, Any]) -> str:
        split = f"tp{p['tp']}" + (f" pp{p['pp']}" if p["pp"] > 1 else "")
        split += (f" dp{p['dp']}" if p["dp"] > 1 else "") + (f" ep{p['ep']}" if p["ep"] > 1 else "")
        split += f" cp{p['cp']}" if p["cp"] > 1 else ""
        return (
            f"{p['instances']} × {p['hardware']} {p['precision']} {split} "
            f"({p['gpus']} GPUs, {p['servers']} servers) · batch {p['batch']} · "
            f"step {p['step_ms']:,.1f} ms · {p['requests_per_s_per_instance']:,.3g} req/s/inst"
        )

    kv = d["kv_transfer"]
    cost = d["cost_per_hour_usd"]
    pairs: list[tuple[str, Any]] = [
        ("ratio", f"{d['ratio']} · {d['servers']} servers · {d['gpus']} GPUs"),
        ("prefill pool", pool(d["prefill"])),
        ("decode pool", pool(d["decode"])),
        (
            "KV transfer",
            f"{kv['bytes'] / 1e6:,.1f} MB per {isl}-token prompt over {kv['link']}"
            f" · {kv['ms']:,.2f} ms (in TTFT)",
        ),
        (
            "latency (mean)",
            f"TTFT {d['ttft_ms']:,.1f} ms · ITL {d['itl_ms']:,.2f} ms · E2E {d['e2e_ms']:,.0f} ms"
            f" (OSL {osl})",
        ),
        ("cost", "—" if cost is None else f"${cost:,.2f}/hour"),
        ("better", str(block["better"])),
    ]
    out.print(report.key_value_table("disaggregated prefill / decode", pairs))


def infeasible(cmp: Comparison | None, aggregated: PlanResult) -> bool:
    """No plan at all: neither aggregated nor (when asked) disaggregated."""
    if aggregated.chosen is not None:
        return False
    return cmp is None or cmp.disaggregated.chosen is None
