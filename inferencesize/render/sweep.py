"""The ``sweep`` output schema: one flat row per grid point, inputs first, then the chosen
plan (empty when infeasible, with the reason)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from inferencesize.sweep import Axis, Row, apply

if TYPE_CHECKING:
    from inferencesize.planner import Plan

#: Input columns, always present, in this order (``*_limit`` are the scenario's limits).
INPUT_COLUMNS = (
    "point",
    "model",
    "isl",
    "osl",
    "mean_rps",
    "percentile",
    "dispersion",
    "peak_rps",
    "ttft_ms_limit",
    "itl_ms_limit",
    "e2e_ms_limit",
    "mode",
    "batching",
    "hardware_options",
    "precision_options",
    "kv_precision_option",
    "tp_options",
    "pp_options",
    "ep_options",
)
#: Scenario field -> input column, where they differ.
FIELD_COLUMN = {
    "ttft_ms": "ttft_ms_limit",
    "itl_ms": "itl_ms_limit",
    "e2e_ms": "e2e_ms_limit",
    "hardware": "hardware_options",
    "precision": "precision_options",
    "kv_precision": "kv_precision_option",
    "tp": "tp_options",
    "pp": "pp_options",
    "ep": "ep_options",
}
#: Result columns, always present, in this order (empty when infeasible).
RESULT_COLUMNS = (
    "feasible",
    "servers",
    "gpus",
    "hardware",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "instances",
    "gpus_per_instance",
    "concurrency",
    "rps_per_instance",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "output_tokens_per_s_per_instance",
    "binding_constraint",
    "capacity_rps",
    "headroom",
    "cost_per_hour_usd",
    "cost_per_million_output_tokens_usd",
    "engine",
    "efficiency",
    "reason",
)


def columns_for(axes: list[Axis]) -> list[str]:
    """Input columns (plus any varied field without one, after ``point``), then results."""
    extra = [a.field for a in axes if FIELD_COLUMN.get(a.field, a.field) not in INPUT_COLUMNS]
    return [INPUT_COLUMNS[0], *dict.fromkeys(extra), *INPUT_COLUMNS[1:], *RESULT_COLUMNS]


def _joined(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return "+".join(str(v) for v in value)
    return value


class _Fields:
    """``.get(field)`` of a validated scenario's attributes."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def get(self, name: str) -> Any:
        return getattr(self.spec, name, None)


def record(
    row: Row, base: dict[str, Any], engine: str, plan_engine: Callable[[Plan], str] | None = None
) -> dict[str, Any]:
    """One output row (flat; None where a value does not apply); ``engine``: the study's
    engine, ``plan_engine``: the engine a plan's GPU × precision is predicted with."""
    s = row.scenario
    # a valid point's fields as the scenario holds them (read, not dumped: no copy per row)
    data: Any = _Fields(s) if s is not None else apply(base, row.values)
    out: dict[str, Any] = {"point": row.index}
    for key, value in row.values.items():
        if FIELD_COLUMN.get(key, key) not in INPUT_COLUMNS:
            out[key] = _joined(value)
    out.update(
        {
            "model": data.get("model"),
            "isl": s.input_tokens if s is not None else data.get("isl"),
            "osl": s.output_tokens if s is not None else data.get("osl"),
            "mean_rps": data.get("mean_rps"),
            "percentile": data.get("percentile"),
            "dispersion": data.get("dispersion"),
            "peak_rps": row.peak_rps,
            "ttft_ms_limit": data.get("ttft_ms"),
            "itl_ms_limit": data.get("itl_ms"),
            "e2e_ms_limit": data.get("e2e_ms"),
            "mode": data.get("mode"),
            "batching": data.get("batching"),
            "hardware_options": _joined(data.get("hardware")),
            "precision_options": _joined(data.get("precision")),
            "kv_precision_option": data.get("kv_precision"),
            "tp_options": _joined(data.get("tp")),
            "pp_options": _joined(data.get("pp")),
            "ep_options": _joined(data.get("ep")),
        }
    )
    p = row.plan
    result: dict[str, Any] = dict.fromkeys(RESULT_COLUMNS)
    result["feasible"] = p is not None
    result["binding_constraint"] = row.binding
    result["reason"] = row.reason
    result["engine"] = engine
    if p is not None:
        result["engine"] = plan_engine(p) if plan_engine is not None else engine
        c, op = p.candidate, p.point
        result.update(
            servers=p.servers,
            gpus=p.gpus,
            hardware=c.hardware_id,
            precision=c.precision,
            kv_precision=c.kv_precision,
            tp=c.par.tp,
            pp=c.par.pp,
            ep=c.par.ep,
            instances=p.instances,
            gpus_per_instance=p.gpus_per_instance,
            concurrency=op.concurrency,
            rps_per_instance=op.requests_per_s,
            ttft_ms=op.ttft_s * 1e3,
            itl_ms=op.itl_s * 1e3,
            e2e_ms=op.e2e_s * 1e3,
            output_tokens_per_s_per_instance=op.output_tokens_per_s,
            capacity_rps=p.capacity_rps,
            headroom=p.headroom,
            cost_per_hour_usd=p.cost_per_hour_usd,
            cost_per_million_output_tokens_usd=p.cost_per_million_output_tokens_usd,
            efficiency=p.efficiency_source,
        )
    out.update(result)
    return out
