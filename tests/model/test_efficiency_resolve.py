"""Which fitted efficiency a GPU × precision gets from a set, and the origin it reports.

A GPU the set has no entry for takes the entries of its ``efficiency_like`` GPU (same compute
die, SM count and power class: H200 SXM and GH200 → H100 SXM), else the set's defaults.
"""

from __future__ import annotations

from dataclasses import MISSING, fields

import numpy as np
import pytest

from inferencesize.calibration import GLOBAL_PARAMS, PER_GPU_PARAMS
from inferencesize.catalog import Catalog, load_catalog
from inferencesize.deployment import resolve_efficiency
from inferencesize.roofline import Efficiency
from inferencesize.specs.efficiency import (
    PARAMETERS,
    EfficiencyEntry,
    EfficiencySet,
    EfficiencyValues,
)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_h200_uses_the_h100_entry_of_nim_2024(catalog: Catalog) -> None:
    eset = catalog.efficiency_set("nim-2024")
    h100, _ = resolve_efficiency(eset, catalog.gpu("h100-sxm"), "fp8")
    h200, origin = resolve_efficiency(eset, catalog.gpu("h200-sxm"), "fp8")
    assert h200 == h100
    assert origin == "nim-2024: h100-sxm fp8 (not calibrated on h200-sxm; same compute die)"


def test_own_entry_wins_over_the_like_gpu(catalog: Catalog) -> None:
    eset = catalog.efficiency_set("trtllm-0.14")  # fits h200-sxm fp8 itself
    own = next(e for e in eset.entries if e.gpu == "h200-sxm" and e.precision == "fp8")
    eff, origin = resolve_efficiency(eset, catalog.gpu("h200-sxm"), "fp8")
    assert (eff.compute, eff.memory) == (own.compute, own.memory)
    assert origin == "trtllm-0.14: h200-sxm fp8"


def test_a_precision_the_gpu_lacks_comes_from_the_like_gpu(catalog: Catalog) -> None:
    # trtllm-0.14 fits the H200 at fp8 only: its bf16 runs on the same tensor cores as the
    # H100's bf16, which the set did fit.
    eset = catalog.efficiency_set("trtllm-0.14")
    h100, _ = resolve_efficiency(eset, catalog.gpu("h100-sxm"), "bf16")
    eff, origin = resolve_efficiency(eset, catalog.gpu("h200-sxm"), "bf16")
    assert eff == h100
    assert origin.startswith("trtllm-0.14: h100-sxm bf16 (not calibrated on h200-sxm")


def test_defaults_when_neither_gpu_is_calibrated(catalog: Catalog) -> None:
    eset = catalog.efficiency_set("nim-2024")
    eff, origin = resolve_efficiency(eset, catalog.gpu("b200"), "fp8")
    assert (eff.compute, eff.memory) == (eset.defaults.compute, eset.defaults.memory)
    assert origin == "nim-2024 defaults (not calibrated on b200)"


def test_like_gpu_without_a_matching_entry_falls_back_to_defaults(catalog: Catalog) -> None:
    entry = EfficiencyEntry(gpu="h100-sxm", precision="fp8", compute=0.5, memory=0.7)
    eset = EfficiencySet(
        id="lab",
        engine="lab engine",
        source="hand-written",
        defaults=catalog.efficiency_set("nim-2024").defaults,
        entries=[entry],
    )
    eff, origin = resolve_efficiency(eset, catalog.gpu("h200-sxm"), "bf16")
    assert (eff.compute, eff.memory) == (eset.defaults.compute, eset.defaults.memory)
    assert origin == "lab defaults (not calibrated on h200-sxm)"
    eff, origin = resolve_efficiency(eset, catalog.gpu("h200-sxm"), "fp8")
    assert (eff.compute, eff.memory) == (0.5, 0.7)


def test_shipped_like_gpus_share_the_compute_peaks(catalog: Catalog) -> None:
    """The link is only physical if the compute is the same: equal dense peaks per precision."""
    linked = [g for g in catalog.gpus.values() if g.efficiency_like]
    assert {g.id for g in linked} >= {"h200-sxm", "gh200", "gh200-144gb", "a100-sxm-40gb"}
    for gpu in linked:
        like = catalog.gpu(gpu.efficiency_like or "")
        for precision in ("bf16", "fp16", "fp8", "int8"):
            assert gpu.dense_flops.get(precision) == like.dense_flops.get(precision), gpu.id


def test_one_table_names_every_efficiency_parameter() -> None:
    """specs.efficiency.PARAMETERS is the one list: the catalog fields, the step math's
    ``Efficiency`` and the fit's bounds all carry exactly its names."""
    names = [p.name for p in PARAMETERS]
    assert len(set(names)) == len(names)
    assert set(names) == set(EfficiencyValues.model_fields)
    assert set(names) == {f.name for f in fields(Efficiency)}
    fitted = {p.name for p in PARAMETERS if p.fit is not None}
    assert set(GLOBAL_PARAMS) | set(PER_GPU_PARAMS) == fitted
    assert set(PER_GPU_PARAMS) == {"compute", "memory"}
    for p in PARAMETERS:
        assert p.meaning and p.origin in ("hardware", "engine", "benchmark")
        assert EfficiencyValues.model_fields[p.name].description == p.meaning
        if p.fit is not None:  # the fit never leaves what a catalog may state
            low, high = p.fit
            assert low < high
            assert low >= p.valid.get("ge", -np.inf) and low > p.valid.get("gt", -np.inf)
            assert high <= p.valid.get("le", np.inf)
    # optional parameters have a neutral default in the step math; the others none
    defaults = {f.name for f in fields(Efficiency) if f.default is not MISSING}
    assert {p.name for p in PARAMETERS if p.optional} <= defaults
