"""`plan --verify`: simulate the chosen plan and report percentiles next to the limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferencesize import report
from inferencesize.cli.common import efficiency_for, open_catalog, stdout
from inferencesize.estimate import Estimator
from inferencesize.planner import Limits, PlanResult
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.verify import servers_for, verify_plan


def add_verification(
    scenario: ScenarioSpec,
    rec: dict[str, Any],
    result: PlanResult,
    engine: str | None,
    calibration: Path | None,
    catalog_dirs: list[Path] | None,
) -> None:
    """Simulate the chosen plan at the peak rate; put the outcome under ``rec["verify"]``."""
    p = result.chosen
    if p is None:
        rec["verify"] = None
        return
    est = Estimator(efficiency_for(open_catalog(catalog_dirs), engine, calibration))
    limits = Limits.of(scenario)
    v = verify_plan(
        est,
        p,
        scenario.input_tokens,
        scenario.output_tokens,
        limits,
        scenario.percentile,
        scenario.batching,
    )
    rec["verify"] = {
        "percentile": v.percentile,
        "arrivals": f"Poisson {p.peak_rps:g} req/s (peak), least-loaded balancer",
        "requests": v.requests,
        "seed": v.seed,
        "ttft_ms": v.ttft_s * 1e3,
        "itl_ms": v.itl_s * 1e3,
        "e2e_ms": v.e2e_s * 1e3,
        "limits": rec["limits"],
        "meets_limits": v.meets,
        "planned_instances": v.planned_instances,
        "instances": v.instances,
        "instances_added": v.added,
        "gpus": v.instances * p.gpus_per_instance,
        "servers": servers_for(p, v.instances),
    }


def print_verification(rec: dict[str, Any]) -> None:
    v = rec.get("verify")
    if not v:
        return
    q = f"p{v['percentile'] * 100:g}"
    lim = v["limits"]

    def vs(name: str, key: str) -> str:
        limit = lim.get(key)
        return f"{name} {v[key]:,.1f} ms" + (f" (limit {limit:,.0f})" if limit else "")

    if v["meets_limits"] and v["instances_added"] == 0:
        verdict = f"meets the limits with the planned {v['instances']} instances"
    elif v["meets_limits"]:
        verdict = (
            f"needs {v['instances_added']} more instance(s): {v['instances']} instances, "
            f"{v['gpus']} GPUs, {v['servers']} servers"
        )
    else:
        verdict = f"misses the limits even with {v['instances']} instances"
    pairs = [
        ("simulated", f"{v['arrivals']} · {v['requests']} requests · seed {v['seed']}"),
        (
            f"{q} latency",
            " · ".join([vs("TTFT", "ttft_ms"), vs("ITL", "itl_ms"), vs("E2E", "e2e_ms")]),
        ),
        ("verdict", verdict),
    ]
    stdout().print(report.key_value_table(f"verification ({q}, simulated)", pairs))
