"""A trace's binned ISL/OSL distribution (``length_mix``) and the open-loop model sized for it
(``openloop.steps``, ``openloop.point``): hand-computed bins and occupancy-weighted lengths,
one length reproducing the fixed-length model to the bit, a longer prompt tail at the same
mean raising the TTFT tail, and KV slots counted at the occupancy-weighted reservation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.deployment import default_kv_precision
from inferencesize.estimate import Candidate, Estimator
from inferencesize.latency import Deployment, prefill
from inferencesize.length_mix import LengthMix, length_mix
from inferencesize.openloop.point import QUANTILES, point
from inferencesize.openloop.steps import STEP_TOKENS, steps
from inferencesize.parallelism import Parallelism


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _cand(catalog: Catalog) -> Candidate:
    gpu, system = catalog.hardware("h100-sxm")
    model = catalog.model("llama-3.1-8b")
    return Candidate(model, gpu, system, "fp8", default_kv_precision("fp8"), Parallelism(1))


def _dep(catalog: Catalog) -> Deployment:
    res = Estimator(catalog.efficiency_set("nim-2024")).resolve(_cand(catalog), 1200)
    assert res.deployment is not None
    return res.deployment


def test_bins_and_occupancy_weighted_lengths_by_hand() -> None:
    # ISL quantiles (lower) of 100, 100, 300, 1000 at 0.25 … 0.999: 100, 100, 300, 300 …
    # -> edges 100, 300: prompt bins {100, 100}, {300}, {1000}; OSL edges 10 (median), 30
    mix = length_mix([100, 100, 300, 1000], [10, 30, 10, 50])
    assert mix.prompt_probs == (0.5, 0.25, 0.25)
    assert mix.prompt_isl == (100.0, 300.0, 1000.0)
    assert sorted(zip(mix.isl, mix.osl, mix.probs, strict=True)) == [
        (100.0, 10.0, 0.25),
        (100.0, 30.0, 0.25),
        (300.0, 10.0, 0.25),
        (1000.0, 50.0, 0.25),
    ]
    assert sum(mix.probs) == pytest.approx(1.0)
    # Σosl = 100, Σosl·isl = 1000 + 3000 + 3000 + 50000, Σosl² = 100 + 900 + 100 + 2500
    assert mix.kv_tokens == pytest.approx((57_000 + 3_600) / 100)  # 606, not 375 + 25
    assert mix.decode_context == pytest.approx(570 + 36 / 2)  # 588, not 375 + 12.5
    assert (mix.isl_mean, mix.osl_mean) == (375.0, 25.0)


def test_in_bin_means_and_probabilities_of_a_skewed_trace() -> None:
    rng = np.random.default_rng(3)
    isl = np.maximum(1, rng.lognormal(6.5, 1.0, 20_000)).astype(int)
    osl = np.maximum(1, rng.lognormal(4.5, 0.8, 20_000)).astype(int)
    mix = length_mix(isl, osl)
    p = np.array(mix.probs)
    assert p.sum() == pytest.approx(1.0) and (p > 0).all()
    # the cells' means recover the trace's means; the prompt bins ascend and resolve the tail
    assert float(p @ np.array(mix.isl)) == pytest.approx(isl.mean())
    assert float(p @ np.array(mix.osl)) == pytest.approx(osl.mean())
    assert list(mix.prompt_isl) == sorted(mix.prompt_isl)
    assert mix.prompt_probs[-1] == pytest.approx(0.001, abs=2e-4)  # above the 99.9th
    assert mix.prompt_isl[-1] > np.quantile(isl, 0.999)


@pytest.mark.parametrize("bad", [([], []), ([0, 5], [1, 1]), ([5, 5], [1, -2])])
def test_no_requests_or_a_length_below_one_is_an_error(bad: tuple[list[int], list[int]]) -> None:
    with pytest.raises(ValueError):
        length_mix(*bad)


def test_one_length_is_one_cell_exactly() -> None:
    mix = length_mix([1155] * 7, [211] * 7)
    assert mix.cells == 1 and mix.probs == (1.0,)
    assert mix.kv_tokens == 1155 + 211 and mix.decode_context == 1155 + 211 / 2


def test_one_length_reproduces_the_fixed_length_model_exactly(catalog: Catalog) -> None:
    dep = _dep(catalog)
    mixed = replace(dep, lengths=length_mix([1000] * 5, [200] * 5))
    a, b = steps(dep, 1000, 200, 64, STEP_TOKENS), steps(mixed, 1000, 200, 64, STEP_TOKENS)
    assert np.array_equal(a.prompt_s, b.prompt_s) and np.array_equal(a.decode_s, b.decode_s)
    pa, pb = point(a, 3.0, 1.0, QUANTILES), point(b, 3.0, 1.0, QUANTILES)
    for metric in ("ttft_q", "itl_q", "e2e_q"):
        assert dict(getattr(pa, metric)) == dict(getattr(pb, metric))
    assert (pa.ttft_s, pa.itl_s, pa.e2e_s) == (pb.ttft_s, pb.itl_s, pb.e2e_s)


def _two_lengths(short: int, long: int, share: float, osl: int = 200) -> LengthMix:
    n_long = round(1000 * share)
    return length_mix([short] * (1000 - n_long) + [long] * n_long, [osl] * 1000)


def test_a_longer_prompt_tail_at_the_same_mean_raises_the_ttft_tail(catalog: Catalog) -> None:
    dep = _dep(catalog)
    flat = replace(dep, lengths=length_mix([1000] * 10, [200] * 10))
    tailed = replace(dep, lengths=_two_lengths(500, 5500, 0.1))  # mean 1000 too
    assert tailed.lengths is not None and tailed.lengths.isl_mean == 1000
    for rate in (0.5, 5.0):
        a = point(steps(flat, 1000, 200, 64, STEP_TOKENS), rate, 1.0, QUANTILES)
        b = point(steps(tailed, 1000, 200, 64, STEP_TOKENS), rate, 1.0, QUANTILES)
        assert b.ttft_q[0.99] > a.ttft_q[0.99]
        # at a vanishing rate the 99th percentile is the long prompt's prefill alone
    alone = point(steps(tailed, 1000, 200, 64, STEP_TOKENS), 1e-4, 1.0, QUANTILES)
    assert alone.ttft_q[0.99] == pytest.approx(
        float(prefill(dep, 1, 5500).total_s) + dep.handoff_s, rel=0.02
    )
    assert alone.ttft_q[0.5] == pytest.approx(
        float(prefill(dep, 1, 500).total_s) + dep.handoff_s, rel=0.02
    )


def test_prompt_steps_cost_the_mixture_over_prompt_bins(catalog: Catalog) -> None:
    dep = _dep(catalog)
    tailed = replace(dep, lengths=_two_lengths(500, 5500, 0.1))
    st = steps(tailed, 1000, 200, 64, STEP_TOKENS)
    for k in (1, st.per_step):
        want = 0.9 * float(prefill(dep, k, 500).total_s) + 0.1 * float(
            prefill(dep, k, 5500).total_s
        )
        assert float(st.prompt_s[k]) == pytest.approx(want)
    assert float(st.prompt_s[1]) >= float(prefill(dep, 1, 1000).total_s)  # superlinear
    # each bin's own prompt against the mean one: zero on average
    assert float(np.dot(st.own_p, st.own_s)) == pytest.approx(0.0, abs=1e-12)


def test_kv_slots_are_counted_at_the_occupancy_weighted_reservation(catalog: Catalog) -> None:
    est = Estimator(catalog.efficiency_set("nim-2024"))
    # long answers hold their KV longer: 90 % at 500/100, 10 % at 500/1900 (mean 500/280)
    mix = length_mix([500] * 1000, [100] * 900 + [1900] * 100)
    assert mix.kv_tokens == pytest.approx(500 + (900 * 100**2 + 100 * 1900**2) / 280_000)
    fixed = est.resolve(_cand(catalog), 780)
    weighted = replace(est, lengths=mix).resolve(_cand(catalog), 780)
    same = est.resolve(_cand(catalog), mix.kv_tokens)
    assert weighted.max_concurrency == same.max_concurrency < fixed.max_concurrency
