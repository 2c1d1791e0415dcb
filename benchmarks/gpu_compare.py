"""Relative throughput of GPUs: predicted against measured, where the data has both GPUs.

Usage:
    python benchmarks/gpu_compare.py            # (re)write docs/gpu-comparison.md
    python benchmarks/gpu_compare.py --check    # exit 1 when the page is out of date

A point of data/calibration/measurements_modern.csv (model, engine and version, precision,
split, ISL, OSL, clients) measured on two GPUs gives a measured ratio of output tokens/s per
GPU, each from its mean TTFT and TPOT under closed-loop clients of fixed length: clients · OSL /
(TTFT + (OSL − 1) · TPOT) / GPUs. The predicted ratio is the same formula on the predicted TTFT
and TPOT (the shipped sets, as `infersize validate` picks them). The page gives, per GPU pair,
the median over the shared points of both ratios, and the median error of the predicted one.
A second table gives the predicted ratio, with its trust label, for GPUs no data covers
(MI300X): a datasheet figure, not a measurement.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.deployment import efficiency_resolution
from inferencesize.estimate import Candidate, Estimator
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.parallelism import Parallelism
from inferencesize.serving import inflight
from inferencesize.validation import estimator_chooser, predict_all

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data/calibration/measurements_modern.csv"
DOC = ROOT / "docs" / "gpu-comparison.md"
COMMAND = "python benchmarks/gpu_compare.py"
PAIRS = (("h200-sxm", "h100-sxm"), ("b200", "h100-sxm"), ("b200", "h200-sxm"), ("b300", "b200"))
#: The unmeasured comparison: Llama-3.1-70B fp8 on one 8-GPU node, 1k/1k at 64 clients.
PLAN_GPUS = ("h100-sxm", "h200-sxm", "b200", "mi300x")


def _rate(ttft_ms: float, tpot_ms: float, clients: float, osl: float, gpus: int) -> float:
    return clients * osl / ((ttft_ms + (osl - 1) * tpot_ms) / 1e3) / gpus


def measured_and_predicted(
    catalog: Catalog,
) -> dict[tuple[object, ...], dict[str, tuple[float, float]]]:
    """Point (without the GPU) -> GPU -> (measured, predicted) output tokens/s per GPU."""
    rows, _ = map_measurements(catalog, dedupe(read_measurements(DATA)))
    rows = [r for r in rows if r.pools is None]
    preds = predict_all(estimator_chooser(catalog), rows)
    metric: dict[tuple[object, ...], dict[str, tuple[float, float]]] = defaultdict(dict)
    for p in preds:
        m, c = p.mapped.m, p.mapped.candidate
        gkey: tuple[object, ...] = (
            *(m.model, m.engine, m.engine_version, m.precision, c.par),
            *(m.isl, m.osl, m.concurrency, c.gpu.id),
        )
        metric[gkey][m.metric] = (m.value, p.predicted)
    out: dict[tuple[object, ...], dict[str, tuple[float, float]]] = defaultdict(dict)
    for gkey, got in metric.items():
        if {"ttft_ms_avg", "tpot_ms_avg"} <= set(got) and all(v == v for v in got["ttft_ms_avg"]):
            point, gpu = gkey[:-1], gkey[-1]
            par = point[4]
            assert isinstance(par, Parallelism)
            clients, osl = float(str(point[7])), float(str(point[6]))
            (tm, tp), (im, ip) = got["ttft_ms_avg"], got["tpot_ms_avg"]
            out[point][str(gpu)] = (
                _rate(tm, im, clients, osl, par.gpus),
                _rate(tp, ip, clients, osl, par.gpus),
            )
    return out


def pair_table(points: dict[tuple[object, ...], dict[str, tuple[float, float]]]) -> list[str]:
    lines = [
        "| GPU / reference | shared points | measured ratio (median) | predicted ratio (median)"
        " | median error of the predicted ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for a, b in PAIRS:
        meas, pred, err = [], [], []
        for gpus in points.values():
            if a in gpus and b in gpus:
                m = gpus[a][0] / gpus[b][0]
                p = gpus[a][1] / gpus[b][1]
                meas.append(m)
                pred.append(p)
                err.append(abs(p / m - 1))
        if meas:
            lines.append(
                f"| {a} / {b} | {len(meas)} | {statistics.median(meas):.2f}"
                f" | {statistics.median(pred):.2f} | {statistics.median(err):.1%} |"
            )
    return lines


def unmeasured_table(catalog: Catalog) -> list[str]:
    """Predicted output tokens/s per GPU of one plan-like point on each GPU, with its trust."""
    model = catalog.model("llama-3.1-70b")
    lines = [
        "| GPU | set | trust | output tokens/s per GPU | relative to h100-sxm |",
        "|---|---|---|---:|---:|",
    ]
    rates: dict[str, float] = {}
    for set_id in ("vllm-2026", "trtllm-1.x"):
        eset = catalog.efficiency_set(set_id)
        est = Estimator(eset)
        for gpu_id in PLAN_GPUS:
            gpu = catalog.gpu(gpu_id)
            cand = Candidate(model, gpu, None, "fp8", "fp8", Parallelism(8))
            res = est.resolve(cand, 2048)
            assert res.deployment is not None
            op = inflight(res.deployment, 1024, 1024, 64, res.max_concurrency)
            rate = op.output_tokens_per_s / 8
            rates[gpu_id] = rate
            trust = efficiency_resolution(eset, gpu, "fp8").trust
            lines.append(
                f"| {gpu_id} | {set_id} | {trust} | {rate:,.0f} | {rate / rates[PLAN_GPUS[0]]:.2f} |"
            )
    return lines


def render() -> str:
    catalog = load_catalog()
    points = measured_and_predicted(catalog)
    return "\n".join(
        [
            f"<!-- Generated by `{COMMAND}`. Do not edit by hand: regenerate it. -->",
            "",
            "# Relative throughput of GPUs",
            "",
            f"Generated by `{COMMAND}`. Which GPU is worth buying depends on how they compare,"
            " so the model is checked on ratios, not only on absolute numbers.",
            "",
            "## Measured pairs",
            "",
            "Output tokens/s per GPU of one GPU over another at the same point (model, engine"
            " and version, precision, split, ISL, OSL, clients) of"
            " `data/calibration/measurements_modern.csv`, measured (from the mean TTFT and TPOT"
            " of closed-loop clients) and predicted (the shipped sets, as `infersize validate`"
            " picks them).",
            "",
            *pair_table(points),
            "",
            "## A GPU no data covers",
            "",
            "Llama-3.1-70B fp8 on 8 GPUs (TP8), 1024/1024 tokens at 64 clients. The MI300X is"
            " in no measurement: it takes the sets' conservative defaults on its datasheet"
            " (trust `datasheet`), so its figure is an estimate to be checked, not a ranking.",
            "",
            *unmeasured_table(catalog),
            "",
        ]
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        return 0 if DOC.exists() and DOC.read_text(encoding="utf-8") == text else 1
    DOC.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
