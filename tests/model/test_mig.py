"""Model concurrency: MIG slices and shared GPUs (``inferencesize.sharing``), by hand."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inferencesize.estimate import Candidate
from inferencesize.parallelism import Parallelism
from inferencesize.sharing import gpu_share, mig_share, shared_gpu, shares_for, whole_gpus
from inferencesize.specs.hardware import MigProfiles
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
    """k instances on 1/k of a GPU each never serve more than one whole-GPU instance at the
    same total concurrency: each reads its own copy of the weights every step."""
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
        for batch in (1, 8, 64):
            one = est.point(res, ISL, OSL, batch, "inflight")
            many = est.point(whole, ISL, OSL, batch * share.per_gpu, "inflight")
            assert one is not None and many is not None
            assert share.per_gpu * one.requests_per_s <= many.requests_per_s
        # a decode step reads every weight once at the slice's share of the HBM bandwidth
        one = est.point(res, ISL, OSL, 1, "inflight")
        assert one is not None
        floor = res.memory.weights_bytes / (share.memory * gpu.hbm_bandwidth_bytes_per_s)
        assert one.itl_s >= floor
