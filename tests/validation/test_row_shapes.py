"""Each published deployment shape maps to the split the row states, or to a stated reason.

Hand-read rows in the conventions of shared/calibration: aggregated rows on num_gpus = TP × PP
× attention DP with ``attention_dp=N, moe_tp=M, moe_ep=E`` in the notes; disaggregated rows
written ``P:tpAxW D:tpBxV``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from measurement_row import row

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.io_measurements import Measurement, marked_duplicates, stated_precision
from inferencesize.measured_map import map_measurements
from inferencesize.measured_shape import WORKERS_NOT_STATED, Pool, parse_pool, row_shape
from inferencesize.parallelism import Parallelism
from inferencesize.techniques import MEASURED_MTP_ACCEPTANCE, MEASURED_MTP_DRAFT_TOKENS
from inferencesize.validation import deployment_kind, estimator_chooser, predict_all


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


DP8 = "aggregated, one instance on 8 GPUs; attention_dp=8, moe_tp=1, moe_ep=8; per-rank batch"


def test_attention_dp_row_reads_dp_from_the_notes() -> None:
    # 8 GPUs = tp 1 × attention DP 8; experts in 8 EP groups, each whole (moe_tp 1 = 8 · 1 / 8)
    shape = row_shape("1", 1, 1, "8", 8, 8, DP8)
    assert shape.aggregated == Parallelism(tp=1, pp=1, ep=8, dp=8)
    # TP 16 with experts 4 × 4 (moe_tp 4 · moe_ep 4 = 16 GPUs): no attention DP
    notes = "attention_dp=1, moe_tp=4, moe_ep=4"
    assert row_shape("16", 16, 1, "4", 4, 16, notes).aggregated == Parallelism(16, 1, 4, 1)


def test_attention_dp_row_whose_sizes_disagree_is_not_mapped() -> None:
    # 8 × 1 × 1 ≠ 16 GPUs
    assert row_shape("1", 1, 1, "8", 8, 16, DP8).problem == "num_gpus ≠ TP × PP × attention DP"
    # without attention DP in the notes num_gpus may count a server of TP2 instances
    assert row_shape("2", 2, 1, "", None, 8, "").aggregated == Parallelism(2)
    # moe_tp 2 × ep 8 = 16 ≠ dp 8 × tp 1
    bad = DP8.replace("moe_tp=1", "moe_tp=2")
    assert "MoE TP × EP ≠ attention DP × TP" in str(row_shape("1", 1, 1, "8", 8, 8, bad).problem)


def test_disaggregated_row_reads_both_pools() -> None:
    notes = "disaggregated prefill/decode; attention_dp P:8 D:1; moe_tp P:1 D:8; per-worker"
    shape = row_shape("P:tp1x1 D:tp8x4", None, 1, "P:8 D:1", None, 40, notes)
    assert shape.prefill == Pool(Parallelism(tp=1, pp=1, ep=8, dp=8), workers=1)
    assert shape.decode == Pool(Parallelism(tp=8, pp=1, ep=1, dp=1), workers=4)
    assert shape.prefill.gpus + shape.decode.gpus == 40


def test_disaggregated_row_without_worker_counts_says_so() -> None:
    shape = row_shape("P:tp8 D:tp8", None, 1, "P:8 D:8", None, None, "attention_dp P:1 D:1")
    assert shape.problem == WORKERS_NOT_STATED
    assert shape.aggregated is None and shape.prefill is None


def test_likely_precision_reads_as_the_precision_named() -> None:
    assert stated_precision("bf16 (likely: no precision or quant mode given)") == "bf16"
    assert stated_precision("fp8") == "fp8"


def test_dynamo_row_is_its_engine_with_version_not_stated() -> None:
    m = row("ttft_ms_avg", engine="Dynamo+TensorRT-LLM (disagg)", engine_version="0.8.1.post2")
    assert m.served_engine == ("TensorRT-LLM", "")
    sglang = row("ttft_ms_avg", engine="SGLang (disagg)", engine_version="0.5.8")
    assert sglang.served_engine == ("SGLang", "0.5.8")
    dashed = row("ttft_ms_avg", engine="dynamo-sglang", engine_version="0.4.0")
    assert dashed.served_engine == ("sglang", "")
    assert row("ttft_ms_avg", engine="Dynamo").served_engine == ("Dynamo", "1.0")


def test_tpot_row_is_the_closed_loop_mean_gap_between_tokens(catalog: Catalog) -> None:
    """TPOT = (E2E − TTFT) / (OSL − 1) of the same point, predicted."""
    rows = [row(metric) for metric in ("tpot_ms_avg", "ttft_ms_avg", "e2e_ms_avg", "itl_ms_avg")]
    mapped, skipped = map_measurements(catalog, rows)
    assert not skipped
    tpot, ttft, e2e, itl = (p.predicted for p in predict_all(estimator_chooser(catalog), mapped))
    assert tpot == pytest.approx((e2e - ttft) / (200 - 1), rel=1e-9)
    assert tpot == itl


def test_attention_dp_row_predicts_on_its_split(catalog: Catalog) -> None:
    m = row(
        "tpot_ms_avg",
        model="DeepSeek-R1",
        gpu="B200-180GB",
        num_gpus=8,
        tp=1,
        ep=8,
        tp_cell="1",
        ep_cell="8",
        notes=DP8,
    )
    [mapped], skipped = map_measurements(catalog, [m])
    assert not skipped
    assert mapped.candidate.par == Parallelism(tp=1, pp=1, ep=8, dp=8)
    assert mapped.candidate.par.gpus == 8


@pytest.mark.parametrize(
    ("text", "par", "workers"),
    [
        ("tp4x2", Parallelism(4), 2),
        ("tp8", Parallelism(8), 1),
        ("tp1dp8ep8x3", Parallelism(tp=1, ep=8, dp=8), 3),
        ("TP2PP2x1", Parallelism(tp=2, pp=2), 1),
    ],
)
def test_pool_notation(text: str, par: Parallelism, workers: int) -> None:
    assert parse_pool(text) == Pool(par, workers)


@pytest.mark.parametrize("text", ["tp0x1", "tp4x0", "ep8tp1", "4x2", "tp4 x2", ""])
def test_pool_notation_rejects(text: str) -> None:
    assert parse_pool(text) is None


def dsr1(notes: str) -> Measurement:
    return row(
        "tpot_ms_avg",
        model="DeepSeek-R1",
        gpu="B200-180GB",
        num_gpus=8,
        tp=8,
        tp_cell="8",
        isl=1024.0,
        osl=1024.0,
        concurrency="32",
        engine="SGLang",
        engine_version="0.5.9",
        notes=notes,
    )


def test_mtp_row_predicts_with_one_draft_head_accepted_85_percent(catalog: Catalog) -> None:
    """One MTP module accepted 85 % of the time (DeepSeek-V3 report): 1 + 0.85 tokens per
    step. A step that verifies two tokens costs at least a plain step, so the TPOT falls, by
    at most 1.85×."""
    assert (MEASURED_MTP_DRAFT_TOKENS, MEASURED_MTP_ACCEPTANCE) == (1, 0.85)
    rows = [dsr1("aggregated; spec_decoding=mtp"), dsr1("aggregated; spec_decoding=none")]
    mapped, skipped = map_measurements(catalog, rows)
    assert not skipped
    mtp, plain = (p.predicted for p in predict_all(estimator_chooser(catalog), mapped))
    assert plain / 1.85 <= mtp < plain


def test_speculative_row_with_an_unstated_draft_model_is_listed(catalog: Catalog) -> None:
    mapped, skipped = map_measurements(catalog, [dsr1("spec_decoding=draft_model")])
    assert mapped == []
    assert [why for _, why in skipped] == [
        "speculative decoding 'draft_model': the draft model is not stated"
    ]


def test_a_marked_duplicate_counts_once_when_its_twin_is_read() -> None:
    twin = row("tpot_ms_avg", source="inferencemax")
    marked = row(
        "tpot_ms_avg", source="aic_silicon_sample", notes="likely duplicate of inferencemax"
    )
    kept, dropped = marked_duplicates([twin, marked])
    assert kept == [twin]
    assert dropped == [(marked, "likely duplicate of a row of inferencemax (counted once)")]
    # alone, the marked row is the only copy of its point
    assert marked_duplicates([marked]) == ([marked], [])


def test_fp4_on_a_gpu_without_fp4_units_runs_weight_only(catalog: Catalog) -> None:
    """gpt-oss-120b's MXFP4 on Hopper: 4-bit weights, GEMMs on the 16-bit units; on
    Blackwell the FP4 units compute it."""
    pick = estimator_chooser(catalog)
    hopper = row("tpot_ms_avg", model="gpt-oss-120b", gpu="H200-SXM-141GB", precision="fp4")
    blackwell = replace(hopper, gpu="B200-180GB")
    assert pick(hopper).techniques.weight_only
    assert not pick(blackwell).techniques.weight_only
    mapped, skipped = map_measurements(catalog, [hopper])
    assert not skipped
    [pred] = predict_all(pick, mapped)
    assert pred.predicted > 0


def test_a_bare_gpu_across_servers_runs_on_its_reference_server(catalog: Catalog) -> None:
    """TP16 on 'B200-180GB': two DGX B200 (NVLink inside, one NIC per GPU between them); TP8
    fits one server and keeps the bare GPU."""
    wide = dsr1("aggregated, one instance on 16 GPUs; attention_dp=1, moe_tp=16, moe_ep=1")
    wide = replace(wide, num_gpus=16, tp=16, tp_cell="16")
    narrow = dsr1("aggregated, one instance on 8 GPUs; attention_dp=1, moe_tp=8, moe_ep=1")
    mapped, skipped = map_measurements(catalog, [wide, narrow])
    assert not skipped
    assert [x.candidate.hardware_id for x in mapped] == ["dgx-b200", "b200"]
    assert mapped[0].candidate.par.gpus == 16
    # the server of an H200 SXM is the DGX H200 (its id does not repeat the GPU's)
    h200 = replace(wide, gpu="H200-SXM-141GB")
    [on_dgx], _ = map_measurements(catalog, [h200])
    assert on_dgx.candidate.hardware_id == "dgx-h200"


def test_deployment_kind_names_the_shape(catalog: Catalog) -> None:
    dp8 = replace(dsr1(DP8), num_gpus=8, tp=1, ep=8, tp_cell="1", ep_cell="8")
    tp16 = replace(dsr1("attention_dp=1, moe_tp=16, moe_ep=1"), num_gpus=16, tp=16, tp_cell="16")
    mtp = dsr1("spec_decoding=mtp")
    mapped, skipped = map_measurements(catalog, [dp8, tp16, mtp])
    assert not skipped
    assert [deployment_kind(x) for x in mapped] == [
        "one instance, attention DP",
        "one instance, across servers",
        "one instance, MTP",
    ]


def test_inferencemax_rows_are_predicted_at_their_mean_lengths(catalog: Catalog) -> None:
    """bench_serving --random-range-ratio 0.8: lengths uniform in 80-100 % of the nominal
    ones, 0.9 on average: a 2000 / 200 InferenceMAX row is the 1800 / 180 point."""
    imax = row("ttft_ms_avg", source="inferencemax")
    lab = row("ttft_ms_avg", isl=1800.0, osl=180.0)
    mapped, skipped = map_measurements(catalog, [imax, lab])
    assert not skipped
    assert (mapped[0].m.isl, mapped[0].m.osl) == (1800.0, 180.0)
    a, b = (p.predicted for p in predict_all(estimator_chooser(catalog), mapped))
    assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("flag", ["dp-attn: true", "dp_attention=True", "enable_attention_dp: yes"])
def test_attention_dp_switched_on_without_a_size_spans_the_tp_ranks(flag: str) -> None:
    """SGLang --enable-dp-attention (dp = tp), TensorRT-LLM enable_attention_dp: attention
    data parallel over the 8 ranks, attention TP 1; the experts over all 8 in 8 EP groups."""
    shape = row_shape("8", 8, 1, "8", 8, 8, f"image x; {flag}; nightly")
    assert shape.aggregated == Parallelism(tp=1, pp=1, ep=8, dp=8)


def test_attention_dp_switched_off_keeps_tp() -> None:
    assert row_shape("8", 8, 1, "8", 8, 8, "dp-attn: false").aggregated == Parallelism(8, 1, 8)


def test_a_static_row_of_an_unnamed_engine_takes_the_static_set(catalog: Catalog) -> None:
    """Llama-2-70B TP4 batch 8 prefill (the seed's TensorRT-LLM example, no version): static
    batching, so the set fitted to static batching; the same engine serving in flight keeps
    the default set."""
    pick = estimator_chooser(catalog)
    static = row("prefill_ms", engine="TensorRT-LLM", engine_version="", concurrency="8")
    inflight = row("ttft_ms_avg", engine="TensorRT-LLM", engine_version="")
    assert "static batching" in pick(static).efficiency.engines
    assert pick(inflight).efficiency.id == catalog.efficiency_for("TensorRT-LLM", "").id
