"""Model concurrency: MIG slices and shared GPUs (``inferencesize.sharing``), by hand."""

from __future__ import annotations

import pytest
from loose_plan import plan_loose
from pydantic import ValidationError

from inferencesize.daily import daily_plan
from inferencesize.estimate import Candidate
from inferencesize.parallelism import Parallelism
from inferencesize.planner import Limits, PlanResult, at_peak
from inferencesize.sharing import gpu_share, mig_share, shared_gpu, shares_for, whole_gpus
from inferencesize.specs.hardware import MigProfiles
from inferencesize.sweep import choose
from inferencesize.units import GIB
from tests.shipped import catalog, estimator

ISL, OSL = 128.0, 128.0


def test_h100_2g_20gb_slice_gets_two_sevenths_of_the_sms_and_a_quarter_of_the_hbm() -> None:
    gpu = catalog().gpu("h100-sxm")
    share = mig_share(gpu, "2g.20gb")
    assert (share.per_gpu, share.compute, share.memory) == (3, 2 / 7, 2 / 8)
    sliced = shared_gpu(gpu, share)
    assert sliced.dense_flops.fp8 == pytest.approx(1979e12 * 2 / 7)  # 565.4 TFLOPS
    assert sliced.dense_flops.bf16 == pytest.approx(989.5e12 * 2 / 7)
    assert sliced.hbm_bandwidth_bytes_per_s == pytest.approx(3.35e12 / 4)  # 837.5 GB/s
    assert sliced.memory_bytes == pytest.approx(20 * GIB)
    assert sliced.scale_up_bandwidth_bytes_per_s == 0.0  # no NVLink inside a slice
    assert sliced.id == gpu.id  # the same kernels: the same fitted efficiencies


@pytest.mark.parametrize(
    ("gpu_id", "profile", "per_gpu", "memory_gib", "bandwidth"),
    [
        ("a100-sxm-40gb", "1g.5gb", 7, 5.0, 1.555e12 / 8),
        ("a100-sxm-80gb", "3g.40gb", 2, 40.0, None),
        ("h100-sxm", "1g.10gb", 7, 10.0, 3.35e12 / 8),
        ("h100-sxm", "1g.20gb", 4, 20.0, 3.35e12 / 4),
        ("h200-sxm", "1g.18gb", 7, 141 / 8, 4.8e12 / 8),
        ("h200-sxm", "3g.71gb", 2, 70.5, 4.8e12 / 2),
    ],
)
def test_published_profiles(
    gpu_id: str, profile: str, per_gpu: int, memory_gib: float, bandwidth: float | None
) -> None:
    gpu = catalog().gpu(gpu_id)
    share = mig_share(gpu, profile)
    sliced = shared_gpu(gpu, share)
    assert share.per_gpu == per_gpu
    assert sliced.memory_bytes == pytest.approx(memory_gib * GIB)
    if bandwidth is not None:
        assert sliced.hbm_bandwidth_bytes_per_s == pytest.approx(bandwidth)
    g = int(profile.split("g.")[0])
    assert share.compute == pytest.approx(g / 7)


def test_every_mig_table_fits_its_gpu_and_a_gpu_without_mig_has_none() -> None:
    tables = {g.id: g.mig_profiles for g in catalog().gpus.values() if g.mig_profiles}
    assert {"a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h200-sxm"} <= set(tables)
    for table in tables.values():
        assert table.source
        for p in table.profiles.values():
            assert p.compute_slices * p.instances <= table.compute_slices
            assert p.memory_slices * p.instances <= table.memory_slices
    assert catalog().gpu("l40s").mig_profiles is None
    with pytest.raises(KeyError):
        mig_share(catalog().gpu("l40s"), "1g.10gb")


def test_a_table_that_oversubscribes_the_gpu_is_refused() -> None:
    with pytest.raises(ValidationError, match="more slices than the GPU has"):
        MigProfiles.model_validate(
            {
                "compute_slices": 7,
                "memory_slices": 8,
                "profiles": {"2g.20gb": {"compute_slices": 2, "memory_slices": 2, "instances": 4}},
                "source": "test",
            }
        )


def test_k_processes_on_a_gpu_each_get_one_kth() -> None:
    share = gpu_share(4)
    assert (share.per_gpu, share.compute, share.memory) == (4, 0.25, 0.25)
    assert share.label() == "4 per GPU"
    assert mig_share(catalog().gpu("h100-sxm"), "2g.20gb").label() == "mig 2g.20gb ×3/GPU"
    with pytest.raises(ValueError):
        gpu_share(0)


def test_gpus_are_counted_whole() -> None:
    three = mig_share(catalog().gpu("h100-sxm"), "2g.20gb")
    assert whole_gpus(6, three) == 2
    assert whole_gpus(7, three) == 3  # a third GPU holding one slice is still a GPU
    assert whole_gpus(1, three) == 1
    assert whole_gpus(5, None, 2) == 10


def _weights(model: str, hardware: str, precision: str) -> float:
    gpu, system = catalog().hardware(hardware)
    cand = Candidate(catalog().model(model), gpu, system, precision, "fp8", Parallelism())
    res = estimator().resolve(cand, ISL + OSL)
    assert res.memory is not None
    return res.memory.weights_bytes


def test_a_small_model_gets_the_slices_it_fits_and_a_big_one_none() -> None:
    gpu = catalog().gpu("h100-sxm")
    small = _weights("llama-3-8b", "h100-sxm", "fp8")  # 8.5 GiB of FP8 weights
    assert 8 * GIB < small < 9 * GIB
    names = {s.name for s in shares_for(gpu, small)}
    # half of a slice must hold the weights: 10 GiB slices of 20 GiB, not 1g.10gb (5 GiB)
    assert names == {"1g.20gb", "2g.20gb", "3g.40gb", "1/2", "1/3", "1/4"}
    big = _weights("llama-3-70b", "h100-sxm", "fp8")  # ~65 GiB: only a whole GPU
    assert shares_for(gpu, big) == []


def test_a_slice_candidate_resolves_on_its_share_and_is_no_free_lunch() -> None:
    """While reading the weights dominates a step (light loads), k instances on shares of a
    GPU serve less than one whole-GPU instance at the same total concurrency: each reads its
    own copy of the weights every step."""
    gpu, system = catalog().hardware("dgx-h100")
    model = catalog().model("llama-3-8b")
    est = estimator()
    whole = est.resolve(Candidate(model, gpu, system, "fp8", "fp8", Parallelism()), ISL + OSL)
    assert whole.memory is not None
    for share in shares_for(gpu, whole.memory.weights_bytes):
        cand = Candidate(model, gpu, system, "fp8", "fp8", Parallelism(), share)
        res = est.resolve(cand, ISL + OSL)
        assert res.reason is None and res.memory is not None
        assert res.memory.capacity_bytes == pytest.approx(share.memory * gpu.memory_bytes)
        assert share.label() in cand.label()
        for batch in (1, 8):
            one = est.point(res, ISL, OSL, batch, "inflight")
            many = est.point(whole, ISL, OSL, batch * share.per_gpu, "inflight")
            assert one is not None and many is not None
            assert share.per_gpu * one.requests_per_s <= many.requests_per_s
        # a decode step reads every weight once at the slice's share of the HBM bandwidth
        one = est.point(res, ISL, OSL, 1, "inflight")
        assert one is not None
        floor = res.memory.weights_bytes / (share.memory * gpu.hbm_bandwidth_bytes_per_s)
        assert one.itl_s >= floor


def _plan(model: str, peak_rps: float, share_gpus: bool = True) -> PlanResult:
    """Short prompts (128 in, 128 out) on a DGX H100 in FP8 under TTFT ≤ 300 ms, ITL ≤ 30 ms."""
    return plan_loose(
        catalog().model(model),
        [catalog().hardware("dgx-h100")],
        ["fp8"],
        ISL,
        OSL,
        peak_rps,
        Limits(ttft_s=0.3, itl_s=0.03),
        estimator(),
        share_gpus=share_gpus,
    )


def test_shared_plans_count_whole_gpus_and_whole_servers() -> None:
    res = _plan("llama-3-8b", 30.0)
    shared = [p for p in res.feasible if p.candidate.share is not None]
    assert {p.candidate.share.name for p in shared if p.candidate.share} >= {"2g.20gb", "1/2"}
    for p in shared:
        assert p.candidate.share is not None and p.candidate.par == Parallelism()
        assert p.gpus == -(-p.instances // p.candidate.share.per_gpu)  # ceil
        assert p.servers == -(-p.gpus // 8)
        assert p.capacity_rps >= 30.0


def test_low_traffic_on_shares_takes_one_gpu_and_the_whole_gpu_wins_the_tie() -> None:
    """One request a second: every plan needs one GPU, so the whole-GPU instance (simpler to
    run, more headroom) is chosen; the MIG plans are listed beside it."""
    res = _plan("llama-3-8b", 1.0)
    assert res.chosen is not None and res.chosen.candidate.share is None
    assert res.chosen.gpus == 1
    mig = [p for p in res.feasible if p.candidate.share and p.candidate.share.kind == "mig"]
    assert mig and all(p.gpus == 1 and p.servers == 1 for p in mig)
    assert "mig 2g.20gb ×3/GPU" in {p.candidate.share.label() for p in mig if p.candidate.share}


def test_a_shared_plan_is_chosen_when_it_needs_fewer_gpus() -> None:
    """100 req/s: a whole-GPU instance holds ~360 sequences at the TTFT limit and its
    per-sequence host work (sampling, detokenising) is paid in one process; two processes on
    one GPU pay it in parallel, each for half the sequences, and together serve the peak on one
    GPU where whole-GPU instances need two."""
    res = _plan("llama-3-8b", 100.0)
    alone = _plan("llama-3-8b", 100.0, share_gpus=False)
    assert res.chosen is not None and alone.chosen is not None
    whole = min(p.gpus for p in res.feasible if p.candidate.share is None)
    assert whole == alone.chosen.gpus
    assert res.chosen.candidate.share is not None
    assert res.chosen.gpus < whole
    assert res.chosen.servers <= alone.chosen.servers


def test_whenever_a_shared_plan_is_chosen_it_is_smaller() -> None:
    for peak in (1.0, 10.0, 60.0, 100.0, 250.0):
        res, alone = _plan("llama-3-8b", peak), _plan("llama-3-8b", peak, share_gpus=False)
        assert res.chosen is not None and alone.chosen is not None
        # what it pays for, then the GPUs it uses (the rank before whole-GPU-first)
        mine, whole = res.chosen.prefix()[:-1], alone.chosen.prefix()[:-1]
        assert mine <= whole
        if res.chosen.candidate.share is not None:
            assert mine < whole


def test_more_traffic_never_fewer_gpus() -> None:
    gpus = [_plan("llama-3-8b", peak).chosen for peak in (1.0, 20.0, 60.0, 100.0, 200.0, 400.0)]
    counts = [p.gpus for p in gpus if p is not None]
    assert len(counts) == 6 and counts == sorted(counts)


def test_a_big_model_never_gets_gpu_shares() -> None:
    res = _plan("llama-3-70b", 5.0)
    alone = _plan("llama-3-70b", 5.0, share_gpus=False)
    labels = [p.candidate.label() for p in res.feasible] + [r.candidate for r in res.rejected]
    assert not any("per GPU" in label for label in labels)
    assert res.summary is not None and alone.summary is not None
    assert res.summary.candidates == alone.summary.candidates


def test_an_explicit_tp_above_one_searches_no_shares() -> None:
    res = plan_loose(
        catalog().model("llama-3-8b"),
        [catalog().hardware("dgx-h100")],
        ["fp8"],
        ISL,
        OSL,
        10.0,
        Limits(ttft_s=0.3, itl_s=0.03),
        estimator(),
        tps=[2],
        share_gpus=True,
    )
    assert all(p.candidate.share is None for p in res.feasible)


def test_a_day_on_shared_gpus_counts_whole_gpus_each_hour() -> None:
    """Instances at 10 req/s each, three to a GPU: an hour needing n instances runs
    ceil(n / 3) GPUs, on ceil(GPUs / 8) DGX servers."""
    gpu, system = catalog().hardware("dgx-h100")
    hourly = [5.0, 25.0, 70.0, 240.0] * 6
    alone = daily_plan(hourly, 10.0, 1, 8, ISL, OSL, gpu=gpu, system=system)
    shared = daily_plan(hourly, 10.0, 1, 8, ISL, OSL, gpu=gpu, system=system, instances_per_gpu=3)
    for one, three in zip(alone.hours, shared.hours, strict=True):
        assert three.instances == one.instances
        assert three.gpus == -(-one.instances // 3)
        assert three.servers == -(-three.gpus // 8)
    assert shared.fixed_gpus == -(-alone.fixed_instances // 3)


@pytest.mark.parametrize("peak", [1.0, 60.0, 100.0, 250.0])
def test_a_sweep_chooses_the_plan_the_planner_chooses(peak: float) -> None:
    """The sweep's vectorised ranking (``sweep.choose``) sizes shared plans on whole GPUs
    and breaks ties as the planner does."""
    once = _plan("llama-3-8b", 1.0)
    direct = _plan("llama-3-8b", peak)
    assert direct.chosen is not None
    pick = int(choose(once.feasible, [peak])[0])
    assert at_peak(once.feasible[pick], peak, ISL, OSL, estimator()) == direct.chosen


def test_open_loop_branch_and_bound_keeps_the_shared_plans_of_the_exhaustive_search() -> None:
    args = (catalog().model("llama-3-8b"), [catalog().hardware("dgx-h100")], ["fp8"], ISL, OSL)
    for peak in (5.0, 100.0):
        found = [
            plan_loose(
                *args,
                peak,
                Limits(ttft_s=0.3, itl_s=0.03),
                estimator(),
                share_gpus=True,
                arrivals="poisson",
                prune=prune,
            )
            for prune in (False, True)
        ]
        assert found[0].chosen == found[1].chosen
        assert found[0].alternatives == found[1].alternatives
        assert any(p.candidate.share for p in found[1].alternatives)
