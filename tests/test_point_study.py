"""The application work of the point commands (estimate, simulate, validate, calibrate), called
as the commands call it: candidates from flags, the simulated workload and batching, the
simulator's statistics, the accuracy record of measurement files, the calibration flags."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from inferencesize.calibration_study import RunFill, _fill
from inferencesize.errors import UsageError
from inferencesize.io_measurements import GENAI_SOURCE, Measurement
from inferencesize.point_estimate import (
    DISAGG_RECORD_KEYS,
    PointFlags,
    estimate_disaggregated,
    estimate_point,
    point_candidate,
)
from inferencesize.simulate import PROMPT_STEP_TOKENS
from inferencesize.simulate.stats import distribution
from inferencesize.simulation_study import (
    CHUNK_TOKENS,
    DEFAULT_REQUEST_BATCH,
    Serving,
    prepare_simulation,
    run_policy,
    simulation_workload,
)
from inferencesize.validation_study import measured_rows, validate_rows
from inferencesize.vocabulary import PERCENTILES, Batching, Router, Statistic
from tests.shipped import catalog

FIXTURES = Path(__file__).parent / "fixtures" / "perf"
FLAGS = PointFlags("llama-3-8b", "h100-sxm", "fp8", None, None, None, None)


# ------------------------------------------------------------------------------- estimate


def test_a_candidate_from_flags_sets_attention_dp_and_goes_on_a_server_when_wider() -> None:
    one = point_candidate(catalog(), FLAGS, 1, 1, 1)
    assert (one.par.tp, one.par.dp, one.system) == (1, 1, None)  # a bare GPU, one of it
    wide = point_candidate(catalog(), FLAGS, 8, 2, 1, dp=1)  # 16 GPUs: wider than a server
    assert wide.system is not None and wide.system.id.startswith(("dgx-", "hgx-"))
    dp = point_candidate(catalog(), FLAGS, 1, 1, 1, dp=4)
    assert dp.par.dp == 4 and dp.par.gpus == 4
    pool = point_candidate(catalog(), FLAGS, 1, 1, 1, spans=True)  # a disaggregated pool
    assert pool.system is not None


def test_an_open_loop_point_reports_every_percentile_of_the_vocabulary_in_order() -> None:
    found = estimate_point(
        catalog(), FLAGS, (1, 1, 1, 1), 2000, 200, 1, Batching.INFLIGHT, 4.0, 1.0
    )
    rec = found.record
    assert rec["stable"] is True and rec["arrivals"] == "poisson"
    for name in ("ttft", "itl", "e2e"):
        values = [rec[f"{name}_ms_{s}"] for s in PERCENTILES]
        assert values == sorted(values)  # p50 <= p90 <= p95 <= p99
    # a request waits at least its own prefill: the median TTFT is at least the closed-loop
    # TTFT of a lone request (concurrency 1, no queue)
    alone = estimate_point(
        catalog(), FLAGS, (1, 1, 1, 1), 2000, 200, 1, Batching.INFLIGHT, None, 1.0
    )
    assert rec["ttft_ms_p50"] >= 0.99 * alone.record["ttft_ms"]


def test_a_disaggregated_point_counts_both_pools_gpus() -> None:
    flags = replace(FLAGS, model="llama-3.1-70b")
    found = estimate_disaggregated(
        catalog(), flags, (4, 1, 1, 1, 1), (4, 1, 1, 1, 3), 2000, 200, 32
    )
    rec = found.record
    assert tuple(rec) == DISAGG_RECORD_KEYS
    assert rec["gpus"] == 4 * 1 + 4 * 3
    assert (rec["prefill"]["instances"], rec["decode"]["instances"]) == (1, 3)


# ------------------------------------------------------------------------------- simulate


def test_the_workload_takes_exactly_one_kind_of_traffic() -> None:
    with pytest.raises(UsageError, match="exactly one of"):
        simulation_workload(1.0, 1.0, 4, None, 10, 100, 10, 0.0, 0.0, 0)
    with pytest.raises(UsageError, match="exactly one of"):
        simulation_workload(None, 1.0, None, None, 10, 100, 10, 0.0, 0.0, 0)


@pytest.mark.parametrize(
    ("rate", "cv", "concurrency", "words"),
    [
        (2.0, 1.0, None, "Poisson 2 req/s"),
        (2.0, 3.0, None, "gamma 2 req/s, cv 3"),
        (None, 1.0, 5, "closed loop, 5 clients"),
    ],
)
def test_the_workload_says_what_its_arrivals_are(
    rate: float | None, cv: float, concurrency: int | None, words: str
) -> None:
    wl, shown = simulation_workload(rate, cv, concurrency, None, 50, 300, 30, 0.0, 0.0, 1)
    assert shown == words
    assert wl.n == 50 and set(wl.isl.tolist()) == {300} and set(wl.osl.tolist()) == {30}
    assert (wl.arrival_s is None) == (concurrency is not None)


def test_each_policy_batches_by_its_own_defaults_within_the_kv_budget() -> None:
    wl, shown = simulation_workload(3.0, 1.0, None, None, 60, 500, 50, 0.0, 0.0, 2)
    sim = prepare_simulation(catalog(), FLAGS, (1, 1, 1, 1), wl, shown)
    kv = sim.kv.max_sequences
    assert kv > DEFAULT_REQUEST_BATCH  # an 8B model in fp8 on 80 GB holds many 550-token seqs
    serving = Serving(None, 0.01, None, 1, Router.LEAST_LOADED, 2, 0.1)
    for policy, batch, step in [
        ("inflight", kv, PROMPT_STEP_TOKENS),
        ("chunked", kv, CHUNK_TOKENS),
        ("static", DEFAULT_REQUEST_BATCH, PROMPT_STEP_TOKENS),
    ]:
        rec, res = run_policy(sim, policy, serving)
        assert (rec["batching"], rec["max_batch"]) == (policy, batch)
        assert rec["step_tokens"] == (step if policy != "static" else None)
        assert rec["requests"] == len(res.arrival_s) == 60
        assert list(rec["ttft_ms"]) == [s.value for s in Statistic]
    stated = replace(serving, max_batch=10 * kv)  # a stated batch beyond the KV cache is capped
    assert run_policy(sim, "inflight", stated)[0]["max_batch"] == kv


def test_a_distribution_holds_the_mean_and_each_percentile_of_the_vocabulary() -> None:
    values = np.arange(1.0, 101.0)  # 1 … 100
    d = distribution(np.append(values, np.nan))  # NaN (one-token answers' ITL) left out
    assert d.at(Statistic.MEAN) == 50.5
    # linear interpolation between order statistics: the q quantile of 1 … 100 is 1 + 99 q
    for s in PERCENTILES:
        assert s.fraction is not None
        assert d.at(s) == pytest.approx(1 + 99 * s.fraction)
    assert np.isnan(distribution(np.array([np.nan])).at(Statistic.P99))


# ------------------------------------------------------------------------------- validate


def test_every_row_read_is_predicted_or_listed_with_why() -> None:
    measured = measured_rows(catalog(), [FIXTURES / "measurements_small.csv"], None, None)
    rec = validate_rows(measured).record
    assert rec["rows"] == len(measured.rows) > 0
    assert rec["predicted"] + len(rec["unmapped"]) == rec["rows"]
    assert sum(g["n"] for g in rec["by_metric"]) == rec["predicted"]
    assert sum(r["rows"] for r in rec["unmapped_by_reason"]) == len(rec["unmapped"])


# ------------------------------------------------------------------------------ calibrate


def _row(**cells: object) -> Measurement:
    base = dict(
        row=2, source="x", model="", gpu="", num_gpus=None, precision="", kv_precision="",
        tp=None, pp=None, ep=None, isl=None, osl=None, concurrency="", metric="ttft_ms_avg",
        value=1.0, unit="ms", engine="", engine_version="",
    )  # fmt: skip
    return Measurement(**{**base, **cells})  # type: ignore[arg-type]


def test_the_flags_fill_a_csv_rows_blanks_but_replace_a_genai_perf_exports_cells() -> None:
    fill = RunFill("llama-3-8b", 2, 1000, 100, 8)
    stated = _fill(_row(model="mistral-7b", tp=1, isl=500.0), fill, "h100-sxm", "fp8")
    assert (stated.model, stated.tp, stated.isl) == ("mistral-7b", 1, 500.0)  # kept
    assert (stated.osl, stated.concurrency) == (100.0, "8")  # blanks filled
    assert (stated.gpu, stated.precision) == ("h100-sxm", "fp8")
    export = _fill(_row(source=GENAI_SOURCE, model="my-deployment", tp=1), fill, "h100-sxm", "fp8")
    assert (export.model, export.tp, export.isl) == ("llama-3-8b", 2, 1000.0)  # flags win
