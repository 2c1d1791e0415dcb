"""Analytic against simulated instance counts for every shipped model, under Poisson traffic
with p99 limits.

For each model in ``models/*.yaml`` (one sensible system each: a DGX H100, or a DGX B200 where
the FP8 weights take more than half a DGX H100's memory), it runs

    infersize plan --model M --hardware HW --precision fp8 --isl 1000 --osl 200
        --arrivals poisson --latency-stat p99 --ttft-ms 2000 --itl-ms 100
        --peak-rps R --router ROUTER --verify --format json

in-process, for each router (least-loaded, random, round-robin; the simulator routes the same
way), with a moderate peak R: about six times what one instance of the smallest split
that fits sustains (so the plan needs several instances and a one-instance difference is
~10 %). ``--verify`` searches the instance count again with the discrete-event simulator
(both directions from the analytic count, each limit at its p99 over the simulated requests).
It prints, per model, the chosen split, the analytic and simulated instance counts, their
servers, and whether they agree within one instance or 10 %, then how many agree per router.

Run: python benchmarks/openloop_verify.py [--models a,b,...] [--routers r1,r2] [--json FILE]
Exit 0 when every model agrees, 2 when one does not, 1 when a command fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from inferencesize.catalog import load_catalog
from inferencesize.cli import app
from inferencesize.estimate import Candidate
from inferencesize.openloop import max_rate_rps
from inferencesize.parallelism import valid_splits
from inferencesize.study import resolve_point

ROOT = Path(__file__).resolve().parents[1]
ISL, OSL = 1000, 200
LIMITS = ["--ttft-ms", "2000", "--itl-ms", "100", "--latency-stat", "p99"]
#: FP8 weights above this share of a DGX H100's memory go to a DGX B200.
BIG_SHARE = 0.5
#: The peak, in instances' worth of the smallest split's sustainable rate.
PEAK_INSTANCES = 6


def hardware_for(catalog: Any, model: Any) -> str:
    gpu, system = catalog.hardware("dgx-h100")
    assert system is not None
    from inferencesize.transformer import total_params

    weights_bytes = total_params(model) * 1.0  # FP8: one byte per parameter
    node_bytes = gpu.memory_bytes * system.gpus_per_node
    return "dgx-b200" if weights_bytes > BIG_SHARE * node_bytes else "dgx-h100"


def moderate_peak(catalog: Any, model: Any, hw: str) -> float | None:
    """PEAK_INSTANCES × the sustainable rate of the smallest FP8 split that runs (2 digits)."""
    gpu, system = catalog.hardware(hw)
    est = resolve_point(catalog, engine=None, calibration=None).estimator
    node = system.gpus_per_node if system else 8
    splits = sorted(valid_splits(est.costs(model), node), key=lambda p: (p.gpus, p.pp, p.ep))
    for par in splits:
        cand = Candidate(model, gpu, system, "fp8", "fp8", par)
        res = est.resolve(cand, ISL + OSL)
        if res.deployment is None or res.reason is not None or res.max_concurrency < 1:
            continue
        top = max_rate_rps(res.deployment, ISL, OSL, max_in_flight=res.max_concurrency)
        peak = PEAK_INSTANCES * top
        return float(f"{peak:.2g}")
    return None


def run(catalog: Any, model_id: str, runner: CliRunner, router: str) -> dict[str, Any]:
    model = catalog.model(model_id)
    hw = hardware_for(catalog, model)
    peak = moderate_peak(catalog, model, hw)
    row: dict[str, Any] = {"model": model_id, "hardware": hw, "peak_rps": peak, "router": router}
    if peak is None:
        return {**row, "error": "no FP8 split runs"}
    args = [
        "plan", "--model", model_id, "--hardware", hw, "--precision", "fp8",
        "--isl", str(ISL), "--osl", str(OSL), "--arrivals", "poisson", *LIMITS,
        "--peak-rps", f"{peak:g}", "--router", router, "--verify", "--format", "json",
    ]  # fmt: skip
    start = time.perf_counter()
    result = runner.invoke(app, args)
    row["seconds"] = time.perf_counter() - start
    if result.exit_code != 0:
        return {**row, "error": (result.stderr or result.stdout).strip()[:200]}
    rec = json.loads(result.stdout)
    p, v = rec["plan"], rec["verify"]
    a, s = v["analytic"], v["simulated"]
    return {
        **row,
        "split": f"tp{p['tp']}pp{p['pp']}ep{p['ep']}",
        "analytic": a["instances"],
        "simulated": s["instances"],
        "analytic_servers": a["servers"],
        "simulated_servers": s["servers"],
        "meets": v["meets_limits"],
        "agrees": v["agrees"],
        "ttft_p99_ms": s["held"]["ttft_ms"],
        "itl_p99_ms": s["held"]["itl_ms"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", help="comma list of model ids (default: every shipped model)")
    ap.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    ap.add_argument(
        "--routers",
        default="least-loaded,random,round-robin",
        help="comma list of routers (default: all three)",
    )
    args = ap.parse_args()
    ids = (
        [m.strip() for m in args.models.split(",") if m.strip()]
        if args.models
        else sorted(p.stem for p in (ROOT / "models").glob("*.yaml"))
    )
    runner = CliRunner()
    catalog = load_catalog()
    rows = []
    summary = []
    for router in [r.strip() for r in args.routers.split(",") if r.strip()]:
        print(f"\nrouter: {router}")
        head = (
            f"{'model':26} {'hardware':9} {'peak':>7} {'split':12} {'N plan':>6} {'N sim':>6}"
            f" {'servers':>9} {'agree':>6} {'s':>6}"
        )
        print(head)
        part = []
        for mid in ids:
            try:
                r = run(catalog, mid, runner, router)
            except Exception as err:  # the catalog or the planner cannot take it: its row says
                r = {"model": mid, "hardware": "-", "router": router}
                r["error"] = f"{type(err).__name__}: {err}"[:200]
            part.append(r)
            if "error" in r:
                print(f"{mid:26} {r['hardware']:9} error: {r['error']}")
                continue
            servers = f"{r['analytic_servers']}/{r['simulated_servers']}"
            print(
                f"{mid:26} {r['hardware']:9} {r['peak_rps']:7g} {r['split']:12}"
                f" {r['analytic']:6d} {r['simulated']:6d} {servers:>9}"
                f" {'yes' if r['agrees'] else 'NO':>6} {r['seconds']:6.1f}",
                flush=True,
            )
        rows += part
        done = [r for r in part if "error" not in r]
        agree = sum(1 for r in done if r["agrees"])
        deltas = sorted((r["simulated"] - r["analytic"]) / r["analytic"] for r in done)
        line = (
            f"{router}: {agree} of {len(done)} models agree within one instance or 10 %"
            f" ({len(part) - len(done)} failed); median (sim − analytic)/analytic"
            f" {deltas[len(deltas) // 2] if deltas else math.nan:+.1%}, range"
            f" {deltas[0] if deltas else math.nan:+.1%} … {deltas[-1] if deltas else math.nan:+.1%}"
        )
        summary.append(line)
    print()
    print("\n".join(summary))
    done = [r for r in rows if "error" not in r]
    agree = sum(1 for r in done if r["agrees"])
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    if len(done) < len(rows):
        return 1
    return 0 if agree == len(done) else 2


if __name__ == "__main__":
    sys.exit(main())
