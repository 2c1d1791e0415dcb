"""An efficiency set that names ``kernels``: its GEMMs, attention and all-reduces come from
the measured kernels of the shipped tier, its shares of the datasheet no longer matter."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.errors import CatalogError
from inferencesize.estimate import Candidate, Estimator
from inferencesize.latency import Deployment, decode_step, prefill
from inferencesize.parallelism import Parallelism
from inferencesize.specs import EfficiencySet


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _kernel_set(catalog: Catalog, **defaults: Any) -> EfficiencySet:
    base = catalog.efficiency_set("vllm-2026")
    values = base.defaults.model_copy(update=defaults)
    return base.model_copy(update={"kernels": "VLLM", "defaults": values})


def _deployment(est: Estimator, catalog: Catalog, gpu: str = "h100-sxm", tp: int = 1) -> Deployment:
    cand = Candidate(
        catalog.model("llama-3.1-70b"), catalog.gpu(gpu), None, "fp8", "fp8", Parallelism(tp)
    )
    res = est.resolve(cand, 2048.0)
    assert res.deployment is not None
    return res.deployment


def test_the_datasheet_shares_no_longer_move_a_kernel_sets_step(catalog: Catalog) -> None:
    tier = catalog.kernel_tier(_kernel_set(catalog))
    slow = Estimator(_kernel_set(catalog, compute=0.25, memory=0.2), kernel_tier=tier)
    fast = Estimator(_kernel_set(catalog, compute=0.85, memory=0.95), kernel_tier=tier)
    for batch in (1.0, 64.0):
        a = decode_step(_deployment(slow, catalog), batch, 2048.0).total_s
        b = decode_step(_deployment(fast, catalog), batch, 2048.0).total_s
        assert a == pytest.approx(b, rel=1e-12)
    # ... while the set without kernels moves with them
    plain = catalog.efficiency_set("vllm-2026")
    low = plain.model_copy(
        update={"entries": [], "defaults": plain.defaults.model_copy(update={"memory": 0.2})}
    )
    high = plain.model_copy(
        update={"entries": [], "defaults": plain.defaults.model_copy(update={"memory": 0.9})}
    )
    a = decode_step(_deployment(Estimator(low), catalog), 1.0, 2048.0).total_s
    b = decode_step(_deployment(Estimator(high), catalog), 1.0, 2048.0).total_s
    assert a > 2.0 * b


def test_a_decode_step_streams_the_weights_at_the_measured_share(catalog: Catalog) -> None:
    kset = _kernel_set(catalog, step_overhead_s=0.0, layer_overhead_s=0.0, seq_overhead_s=0.0)
    dep = _deployment(Estimator(kset, kernel_tier=catalog.kernel_tier(kset)), catalog)
    assert dep.kernels is not None
    step = decode_step(dep, 1.0, 2048.0)
    weights_s = 70e9 / (dep.hbm_bytes_per_s * dep.kernels.gemm.eta_mem)  # ~70 GB of fp8
    # one sequence: the weights once at the measured share, plus launches and a small cache
    assert weights_s * 0.9 < float(step.gemm_s) < weights_s * 1.25
    # a long prefill is math-bound: far above its weights' streaming time
    assert float(prefill(dep, 1.0, 8192.0).gemm_s) > 3 * weights_s


def test_a_kernel_set_pays_the_request_handoff_on_one_gpu_too(catalog: Catalog) -> None:
    kset = _kernel_set(catalog, handoff_s=0.01)
    est = Estimator(kset, kernel_tier=catalog.kernel_tier(kset))
    assert _deployment(est, catalog, tp=1).handoff_s == 0.01
    assert _deployment(est, catalog, tp=2).handoff_s == 0.01
    plain = Estimator(catalog.efficiency_set("vllm-2026"))
    assert _deployment(plain, catalog, tp=1).handoff_s == 0.0


def test_a_gpu_without_kernels_borrows_its_architecture(catalog: Catalog) -> None:
    kset = _kernel_set(catalog)
    est = Estimator(kset, kernel_tier=catalog.kernel_tier(kset))
    dep = _deployment(est, catalog, gpu="h20")
    assert dep.kernels is not None
    assert "same architecture" in dep.kernels.origin


def test_a_kernel_set_without_a_tier_is_refused(catalog: Catalog) -> None:
    with pytest.raises(ValueError, match="kernel tier"):
        _deployment(Estimator(_kernel_set(catalog)), catalog)
    assert catalog.kernel_tier(catalog.efficiency_set("vllm-2026")) is None


def test_your_catalogs_kernels_add_to_and_override_the_shipped_ones(tmp_path: Any) -> None:
    entry = {
        "family": "gemm",
        "gpu": "h100_sxm",
        "catalog_id": "h100-sxm",
        "engine": "VLLM",
        "dtype": "fp8",
        "params": {
            "eta_max": 0.5,
            "m_half": 1.0,
            "n_half": 1.0,
            "k_half": 1.0,
            "eta_mem": 0.5,
            "launch_s": 1e-6,
        },
    }
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "fit.json").write_text(json.dumps({"entries": [entry]}))
    mine = load_catalog([tmp_path])
    kset = _kernel_set(mine)
    tier = mine.kernel_tier(kset)
    shipped = load_catalog().kernel_tier(kset)
    assert tier is not None and shipped is not None
    assert tier.gemm[("h100-sxm", "VLLM", "fp8")].eta_mem == 0.5
    assert shipped.gemm[("h100-sxm", "VLLM", "fp8")].eta_mem != 0.5
    assert len(tier.gemm) == len(shipped.gemm)  # one entry replaced, the rest kept


def test_a_set_naming_kernels_of_no_engine_is_a_catalog_error(tmp_path: Any) -> None:
    base = load_catalog().efficiency_set("vllm-2026")
    data = base.model_dump(exclude_none=True) | {"id": "mine", "kernels": "vllm"}
    (tmp_path / "hardware" / "efficiency").mkdir(parents=True)
    (tmp_path / "hardware" / "efficiency" / "mine.yaml").write_text(json.dumps(data))
    with pytest.raises(CatalogError, match="kernels"):
        load_catalog([tmp_path])
