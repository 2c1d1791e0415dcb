"""Accuracy regression guards against the published measurements in data/calibration.

Every row is predicted with the efficiency set of its engine generation
(``Catalog.efficiency_for``, as `validate` and benchmarks/fit_efficiency.py choose it). The bounds sit well above today's errors: they catch
a model or refit that gets clearly worse, not noise. Measured values are in the comments.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.estimate import Candidate, Estimator
from inferencesize.io_measurements import dedupe, read_measurements
from inferencesize.measured_map import map_measurements
from inferencesize.parallelism import Parallelism
from inferencesize.serving import inflight, static
from inferencesize.validation import (
    Prediction,
    Summary,
    estimator_chooser,
    mode_of,
    predict_all,
    summary_table,
)

REPO = Path(__file__).resolve().parents[2]
DATA = [
    REPO / "data/calibration/measurements.csv",
    REPO / "data/calibration/static_batching_sweep.csv",
]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def predictions(catalog: Catalog) -> tuple[list[Prediction], int, int]:
    rows = dedupe([m for path in DATA for m in read_measurements(path)])
    mapped, skipped = map_measurements(catalog, rows)
    preds = predict_all(estimator_chooser(catalog), mapped)
    return preds, len(rows), len(skipped)


@pytest.fixture(scope="module")
def table(predictions: tuple[list[Prediction], int, int]) -> dict[str, Summary]:
    preds = predictions[0]
    return summary_table(preds, lambda p: f"{p.mapped.m.source} {p.mapped.m.metric}")


def test_engine_selection(catalog: Catalog) -> None:
    pick = estimator_chooser(catalog)
    rows = dedupe([m for path in DATA for m in read_measurements(path)])
    chosen: dict[tuple[str, str, bool], set[str]] = {}
    for m in rows:
        static = mode_of(m) == "static"
        chosen.setdefault((m.source, m.engine_version, static), set()).add(pick(m).efficiency.id)
    by_source = {k: v.pop() for k, v in chosen.items() if len(v) == 1}
    assert len(by_source) == len(chosen)  # one set per source, engine version and batching
    versions = {(s, v): i for (s, v, _), i in by_source.items()}
    # the seed's static-batch example (TensorRT-LLM, no version) takes the static set
    assert by_source[("seed", "", True)] == "trtllm-0.9-static"
    assert {i for (s, _), i in versions.items() if s == "nvidia_dli_nim"} == {"nim-2024"}
    assert {i for (s, _), i in versions.items() if s == "nvidia_dli_trtllm_static"} == {
        "trtllm-0.9-static"
    }
    # each TensorRT-LLM perf-overview table is predicted by its own engine generation
    perf = {v: i for (s, v), i in versions.items() if s == "trtllm_perf_overview"}
    assert perf == {"0.14.0": "trtllm-0.14", "0.17": "trtllm-0.17"}
    assert catalog.efficiency_set().id == "nim-2024"


def test_nearly_every_row_is_predicted(predictions: tuple[list[Prediction], int, int]) -> None:
    preds, rows, skipped = predictions
    # today: 10,739 rows after dedupe, 8 skipped (no GPU stated, non-latency metrics), all
    # 10,731 mapped rows predicted
    assert rows > 10_000
    assert skipped <= 0.01 * rows
    assert len(preds) == rows - skipped


# (group, metric) -> (minimum rows, median APE bound, p90 APE bound); today's values in comments
BOUNDS = {
    # NIM in-flight serving (nim-2024), 469 rows per metric
    ("nvidia_dli_nim", "itl_ms_avg"): (400, 0.09, 0.25),  # median 7.1 %, p90 20.9 %
    ("nvidia_dli_nim", "e2e_ms_avg"): (400, 0.08, 0.23),  # median 6.4 %, p90 18.9 %
    ("nvidia_dli_nim", "req_per_s"): (400, 0.08, 0.22),  # median 6.2 %, p90 18.2 %
    ("nvidia_dli_nim", "output_tok_s_total"): (400, 0.08, 0.22),  # median 6.2 %, p90 18.2 %
    ("nvidia_dli_nim", "ttft_ms_avg"): (400, 0.20, 0.55),  # median 14.6 %, p90 43.4 %
    # TRT-LLM 0.9 static batching (trtllm-0.9-static), ~1,800-1,950 rows per metric; placeholder
    # weights: Mixtral's router sends every token to the same experts (fixed routing)
    # median 8.0 %, p90 27.2 %: H200 and GH200 share the H100's fitted shares (same die)
    ("nvidia_dli_trtllm_static", "prefill_ms"): (1500, 0.09, 0.30),
    ("nvidia_dli_trtllm_static", "itl_ms_avg"): (1500, 0.08, 0.25),  # median 5.7 %, p90 21.8 %
    ("nvidia_dli_trtllm_static", "e2e_ms_avg"): (1500, 0.08, 0.25),  # median 5.3 %, p90 18.8 %
    ("nvidia_dli_trtllm_static", "output_tok_s_total"): (1500, 0.08, 0.25),  # 5.2 %, 19.3 %
    # TRT-LLM 0.14 / 0.17 max-throughput tables, 848 rows, each with its own fitted set
    ("trtllm_perf_overview", "output_tok_s_total"): (700, 0.10, 0.26),  # median 7.3 %, p90 19.1 %
}


@pytest.mark.parametrize(("source", "metric"), list(BOUNDS))
def test_accuracy_bounds(table: dict[str, Summary], source: str, metric: str) -> None:
    min_rows, median_bound, p90_bound = BOUNDS[(source, metric)]
    summary = table[f"{source} {metric}"]
    assert summary.n >= min_rows
    assert summary.median_ape <= median_bound, f"median APE {summary.median_ape:.3f}"
    assert summary.p90_ape <= p90_bound, f"p90 APE {summary.p90_ape:.3f}"


# ---------------------------------------------------------------------------------------------
# Seed examples from the sizing talks
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "set_id",
    [
        # prefill 3.035 s (+16.7 %), decode 21.57 ms/token (−19.5 %)
        "nim-2024",
        # prefill 2.240 s (−13.8 %), decode 20.54 ms/token (−23.4 %)
        "trtllm-0.9-static",
    ],
)
def test_seed_llama2_70b_tp4_fp16_static_batch_8(catalog: Catalog, set_id: str) -> None:
    # Llama 70B, H100 SXM, TP4 FP16, static batch 8 of 3500-token prompts:
    # prefill of the batch 2.6 s, decode 26.8 ms per token (data/calibration seed rows)
    gpu, system = catalog.hardware("H100-SXM-80GB")
    cand = Candidate(catalog.model("Llama-2-70B"), gpu, system, "fp16", "fp16", Parallelism(4))
    res = Estimator(catalog.efficiency_set(set_id)).resolve(cand, 3500 + 1)
    assert res.deployment is not None and res.reason is None
    op = static(res.deployment, 3500, 1, 8)
    assert op.ttft_s == pytest.approx(2.6, rel=0.30)
    assert op.itl_s == pytest.approx(26.8e-3, rel=0.30)


def test_seed_llama3_8b_fp8_h100_at_25_clients(catalog: Catalog) -> None:
    # DLI nim.csv: Llama-3-8B FP8 TP1 on H100, 2000/200, 25 clients -> TTFT 489.5 ms,
    # 8.843 req/s per instance (70.7 req/s per DGX H100 of 8 instances).
    # Predicted today: TTFT 506.7 ms (+3.5 %), 8.677 req/s (−1.9 %), ITL 11.93 ms vs 11.73.
    gpu, system = catalog.hardware("h100-sxm")
    cand = Candidate(catalog.model("llama-3-8b"), gpu, system, "fp8", "fp8", Parallelism(1))
    res = Estimator(catalog.efficiency_set("nim-2024")).resolve(cand, 2200)
    assert res.deployment is not None and res.reason is None
    op = inflight(res.deployment, 2000, 200, 25, res.max_concurrency)
    assert op.ttft_s == pytest.approx(0.4895, rel=0.20)
    assert op.requests_per_s == pytest.approx(8.843, rel=0.15)
    assert 8 * op.requests_per_s == pytest.approx(70.7, rel=0.15)


def test_placeholder_weight_rows_use_fixed_expert_routing(catalog: Catalog, tmp_path: Path) -> None:
    # the same Mixtral decode measurement, once noted "fake weights" (TRT-LLM's benchmark
    # default) and once not: only the first is predicted with every token on the same experts
    src = Path(__file__).resolve().parents[2] / "data/calibration/static_batching_sweep.csv"
    lines = src.read_text().splitlines()
    row = next(x for x in lines if "Mixtral-8x7B" in x and ",itl_ms_avg," in x and ",64," in x)
    assert "fake weights" in row
    real = row.replace("fake weights", "real checkpoint")
    path = tmp_path / "two.csv"
    path.write_text("\n".join([lines[0], row, real]) + "\n")
    mapped, _ = map_measurements(catalog, read_measurements(path))
    est = Estimator(catalog.efficiency_set("trtllm-0.9-static"))
    fake_pred, real_pred = (p.predicted for p in predict_all(lambda _m: est, mapped))
    assert fake_pred < 0.8 * real_pred  # batch 64: ~2 experts read instead of ~8
    fixed = replace(est, fixed_routing=True, _costs={}, _deps={})
    assert fake_pred == pytest.approx(predict_all(lambda _m: fixed, mapped[1:])[0].predicted)


# ---------------------------------------------------------------------------------------------
# Held out: NIM 1.8.0 Llama-3.3-70B fp8 TP2 on 2 × H100 (NVIDIA's NIM benchmarking page), in
# no fit. Predicted with each engine generation's set.
# ---------------------------------------------------------------------------------------------


def held_out(catalog: Catalog, set_id: str) -> dict[str, list[float]]:
    """Signed relative errors per metric of the NIM 1.8 rows predicted with ``set_id``."""
    rows = read_measurements(REPO / "data/calibration/nim_perf_docs.csv")
    mapped, skipped = map_measurements(catalog, rows)
    assert not skipped and len(mapped) == 28
    est = Estimator(catalog.efficiency_set(set_id))
    errors: dict[str, list[float]] = {}
    for p in predict_all(lambda m: est, mapped):
        errors.setdefault(p.mapped.m.metric, []).append(p.predicted / p.mapped.m.value - 1)
    return errors


def test_newest_engine_set_predicts_held_out_nim_1_8(catalog: Catalog) -> None:
    """trtllm-0.17 (fitted to max-throughput tables only) on NIM 1.8 latency tables, today:
    ITL +3.6…+7.2 %, output tok/s −3.6…−6.3 %, TTFT −4.8…+39.8 % (median |error| 9.9 %)."""
    errors = held_out(catalog, "trtllm-0.17")
    assert max(abs(e) for e in errors["itl_ms_avg"]) < 0.10
    assert max(abs(e) for e in errors["output_tok_s_total"]) < 0.10
    ttft = sorted(abs(e) for e in errors["ttft_ms_avg"])
    assert ttft[len(ttft) // 2] < 0.15
    assert ttft[-1] < 0.45


def test_engine_generations_order_on_a_newer_engine(catalog: Catalog) -> None:
    """The newer the set's engine, the closer its ITL to NIM 1.8's (median |error| today:
    trtllm-0.17 4.4 %, trtllm-0.14 15.1 %, nim-2024 29.8 %)."""
    median = {
        s: sorted(abs(e) for e in held_out(catalog, s)["itl_ms_avg"])[4]
        for s in ("trtllm-0.17", "trtllm-0.14", "nim-2024")
    }
    assert median["trtllm-0.17"] < median["trtllm-0.14"] < median["nim-2024"]
