"""The application layer: one resolved study, precedence tool defaults < scenario < flags."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from shipped import catalog as shipped_catalog

from inferencesize.catalog import Catalog
from inferencesize.errors import CatalogError
from inferencesize.specs.scenario import DEFAULT_HARDWARE
from inferencesize.study import apply_overrides, is_question, resolve


@pytest.fixture(name="catalog")
def _catalog() -> Catalog:
    return shipped_catalog()


QUESTION = {"model": "llama-3-8b", "isl": 1000, "osl": 200, "peak_rps": 10.0, "ttft_ms": 800.0}


def test_bare_command_answers_the_default_example(catalog: Catalog) -> None:
    study = resolve(catalog, None, {})
    assert study.spec.id == "default"
    assert study.origins["tp"] == "scenario"  # the example pins its split
    # the engine is not part of the question: naming it keeps the example
    assert not is_question({"engine": "nim-2024"})


def test_question_flags_start_from_an_empty_question(catalog: Catalog) -> None:
    study = resolve(catalog, None, QUESTION)
    s = study.spec
    assert s.id is None
    assert (s.tp, s.pp, s.ep, s.precision) == ("auto", "auto", "auto", "auto")
    assert tuple(s.hardware) == DEFAULT_HARDWARE
    for key in ("hardware", "precision", "tp", "pp", "ep", "percentile"):
        assert study.origins[key] == "default"
    assert study.origins["batching"] == "default"


@pytest.mark.parametrize("missing", ["model", "isl", "osl"])
def test_a_missing_part_of_the_question_is_named_with_its_flag(
    catalog: Catalog, missing: str
) -> None:
    flags = {k: v for k, v in QUESTION.items() if k != missing}
    with pytest.raises(CatalogError) as err:
        resolve(catalog, None, flags)
    assert err.value.field == missing
    assert f"--{missing}" in str(err.value)


def test_missing_traffic_is_named(catalog: Catalog) -> None:
    flags = {k: v for k, v in QUESTION.items() if k != "peak_rps"}
    with pytest.raises(CatalogError, match="--mean-rps or --peak-rps"):
        resolve(catalog, None, flags)


def test_a_flag_replaces_the_files_alternative_of_the_same_thing() -> None:
    data = {"peak_rps": 200, "isl_words": 300, "daily": {"hourly_rps": [1] * 24}}
    apply_overrides(data, {"mean_rps": 20.0, "isl": 1000})
    assert data == {"mean_rps": 20.0, "isl": 1000}


def test_flags_merge_into_nested_blocks_key_by_key() -> None:
    data = {"techniques": {"speculative": {"draft": "a", "acceptance": 0.7}}}
    apply_overrides(data, {"techniques.speculative.draft_tokens": 3})
    assert data["techniques"]["speculative"] == {"draft": "a", "acceptance": 0.7, "draft_tokens": 3}


def test_flags_override_the_scenario_file(catalog: Catalog) -> None:
    study = resolve(catalog, "default", {"tp": [1, 2], "mean_rps": 50.0})
    assert study.spec.tp == [1, 2]
    assert study.spec.peak_rps is None and study.spec.mean_rps == 50.0
    assert study.origins["tp"] == "flag"
    assert study.shown.endswith("(with flags)")


def _plan_key(study):  # type: ignore[no-untyped-def]
    r = study.plan(top=0)
    p = r.chosen
    assert p is not None
    return (p.candidate.label(), p.instances, p.servers, p.gpus, p.point, len(r.rejected))


def test_flag_form_and_yaml_form_give_the_same_answer(catalog: Catalog, tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump({**QUESTION, "hardware": ["dgx-h100"]}), encoding="utf-8")
    from_file = resolve(catalog, str(path), {})
    from_flags = resolve(catalog, None, {**QUESTION, "hardware": ["dgx-h100"]})
    assert from_file.spec == from_flags.spec
    assert _plan_key(from_file) == _plan_key(from_flags)


def test_native_precisions_follow_the_gpu(catalog: Catalog) -> None:
    assert catalog.gpu("a100-sxm-80gb").native_precisions() == ["bf16"]
    assert catalog.gpu("h100-sxm").native_precisions() == ["bf16", "fp8"]
    assert catalog.gpu("b200").native_precisions() == ["bf16", "fp8", "fp4"]


def test_an_fp8_less_gpu_plans_in_16_bit_by_default(catalog: Catalog) -> None:
    study = resolve(catalog, None, {**QUESTION, "hardware": ["dgx-a100"]})
    p = study.plan().chosen
    assert p is not None and p.candidate.precision == "bf16"


def test_every_command_of_a_study_shares_its_deployment(catalog: Catalog) -> None:
    """Verify, plot and sweep take the study's estimator: its KV cap and techniques."""
    study = resolve(catalog, "streaming-kv-cap", {})
    assert study.estimator.kv_cap != (0, 0)
    result = study.plan(top=0)
    p = result.chosen
    assert p is not None
    res = study.estimator.resolve(p.candidate, study.isl + study.osl)
    # the chosen load fits the KV capacity of the capped deployment, not the uncapped one
    assert p.point.concurrency <= res.max_concurrency
    curves = study.rate_curves(result)
    assert curves and curves[0].chosen


def test_frontier_and_plan_share_the_kv_cap(catalog: Catalog) -> None:
    """The capped deployment holds 8x the sequences of the uncapped one; the frontier sweeps
    the chosen candidate up to the capped capacity, as the plan does."""
    from inferencesize.estimate import Estimator

    study = resolve(catalog, "streaming-kv-cap", {})
    p = study.plan(top=0).chosen
    assert p is not None
    seq = study.isl + study.osl
    capped = study.estimator.resolve(p.candidate, seq).max_concurrency
    uncapped = Estimator(study.efficiency).resolve(p.candidate, seq).max_concurrency
    assert capped > 4 * uncapped
    fr = study.frontier()
    mine = [i for i, c in enumerate(fr.candidates) if c == p.candidate]
    assert mine
    top = fr.concurrency[fr.candidate_index == mine[0]].max()
    assert uncapped < top <= capped


def test_an_offline_batch_replaces_traffic_limits_and_arrivals() -> None:
    data = {
        "peak_rps": 10.0,
        "ttft_ms": 800.0,
        "itl_ms": 40.0,
        "arrivals": "poisson",
        "latency_stat": "p95",
    }
    apply_overrides(data, {"offline.requests": 1e6, "offline.deadline_h": 8.0})
    assert data == {"offline": {"requests": 1e6, "deadline_h": 8.0}}
    # and a limit or a rate given as a flag replaces a file's offline block
    data = {"offline": {"requests": 1e6, "deadline_h": 8.0}}
    apply_overrides(data, {"peak_rps": 3.0, "ttft_ms": 500.0})
    assert data == {"peak_rps": 3.0, "ttft_ms": 500.0}
    # one volume replaces the other, the deadline stays
    data = {"offline": {"requests": 1e6, "deadline_h": 8.0}}
    apply_overrides(data, {"offline.tokens_per_day": 1e9})
    assert data == {"offline": {"tokens_per_day": 1e9, "deadline_h": 8.0}}


def test_offline_study_sizes_for_the_batch_rate(catalog: Catalog) -> None:
    flags = {"model": "llama-3-8b", "isl": 1000, "osl": 200}
    batch = resolve(catalog, None, {**flags, "offline.requests": 7.2e5, "offline.deadline_h": 2.0})
    assert batch.offline is not None and batch.peak_rps == pytest.approx(100.0)
    assert batch.limits.active() == []
    daily = resolve(catalog, None, {**flags, "offline.tokens_per_day": 1.2e3 * 86_400})
    assert daily.peak_rps == pytest.approx(1.0)  # 86,400 requests of 1,200 tokens in a day
    assert resolve(catalog, None, {**flags, "peak_rps": 5.0, "ttft_ms": 300.0}).offline is None
