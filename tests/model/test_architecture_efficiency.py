"""Efficiencies by architecture, trust labels, --engine names and the all-reduce barrier.

A GPU no set measured takes the lowest shares fitted on its architecture (same-architecture),
an architecture never measured the lowest of the set (datasheet): never flattering defaults.
"""

from __future__ import annotations

import math

import pytest

from inferencesize.calibration import conservative, with_conservative
from inferencesize.catalog import Catalog, load_catalog
from inferencesize.comm import Link, allreduce_latency
from inferencesize.deployment import efficiency_resolution
from inferencesize.engines import engine_efficiency, parse
from inferencesize.errors import UnknownIdError
from inferencesize.estimate import Candidate, Estimator
from inferencesize.latency import decode_step, per_token_decode_s, prefill
from inferencesize.parallelism import Parallelism
from inferencesize.specs import EfficiencySet
from inferencesize.specs.efficiency import EfficiencyEntry


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _set(catalog: Catalog, entries: list[EfficiencyEntry]) -> EfficiencySet:
    base = catalog.efficiency_set("nim-2024")
    return base.model_copy(update={"id": "lab", "entries": entries})


def test_every_shipped_gpu_states_its_architecture(catalog: Catalog) -> None:
    missing = [g.id for g in catalog.gpus.values() if g.architecture is None]
    assert missing == []
    assert catalog.gpu("h200-sxm").architecture == catalog.gpu("h100-sxm").architecture
    assert catalog.gpu("b300").architecture == "blackwell"
    assert catalog.gpu("mi300x").architecture == "cdna3"


def test_conservative_takes_the_lowest_share_of_an_architecture() -> None:
    # two Hopper GPUs measured: the architecture entry takes the lower compute (0.4, of b) and
    # the lower memory (0.6, of a) separately; the defaults the lowest of all GPUs.
    entries = [
        EfficiencyEntry(gpu="a", precision="fp8", compute=0.5, memory=0.6, points=10),
        EfficiencyEntry(gpu="b", precision="fp8", compute=0.4, memory=0.9, points=5),
        EfficiencyEntry(gpu="c", precision="bf16", compute=0.7, memory=0.5, points=3),
    ]
    archs, floor = conservative(entries, {"a": "hopper", "b": "hopper", "c": "ampere"})
    hopper = next(e for e in archs if e.architecture == "hopper")
    assert (hopper.precision, hopper.compute, hopper.memory, hopper.points) == ("fp8", 0.4, 0.6, 15)
    assert floor == {"compute": 0.4, "memory": 0.5}
    # a GPU of unknown architecture contributes to the floor only
    archs, _ = conservative(entries, {"a": None, "b": None, "c": "ampere"})
    assert [e.architecture for e in archs] == ["ampere"]


def test_resolution_order_and_trust(catalog: Catalog) -> None:
    eset = with_conservative(
        _set(
            catalog,
            [
                EfficiencyEntry(gpu="h100-sxm", precision="fp8", compute=0.5, memory=0.7),
                EfficiencyEntry(gpu="h100-sxm", precision="fp16", compute=0.55, memory=0.75),
                EfficiencyEntry(gpu="a100-sxm-80gb", precision="bf16", compute=0.6, memory=0.65),
            ],
        ),
        {g.id: g.architecture for g in catalog.gpus.values()},
    )
    own = efficiency_resolution(eset, catalog.gpu("h100-sxm"), "fp8")
    assert own.trust == "calibrated" and own.values["compute"] == 0.5
    # int4 weight-only computes on the 16-bit units: the H100's fp16 entry, not measured at int4
    unit = efficiency_resolution(eset, catalog.gpu("h100-sxm"), "int4")
    assert unit.trust == "same-architecture" and unit.values["compute"] == 0.55
    like = efficiency_resolution(eset, catalog.gpu("h200-sxm"), "fp8")  # efficiency_like
    assert like.trust == "same-architecture" and like.values["memory"] == 0.7
    arch = efficiency_resolution(eset, catalog.gpu("h100-pcie"), "fp8")  # no like: Hopper
    assert arch.trust == "same-architecture"
    assert (arch.values["compute"], arch.values["memory"]) == (0.5, 0.7)
    assert "hopper architecture" in arch.origin
    sheet = efficiency_resolution(eset, catalog.gpu("b200"), "fp8")  # no Blackwell measured
    assert sheet.trust == "datasheet"
    assert (sheet.values["compute"], sheet.values["memory"]) == (0.5, 0.65)  # the lowest


def test_shipped_defaults_never_flatter_an_unmeasured_gpu(catalog: Catalog) -> None:
    for eset in catalog.efficiency.values():
        fitted = [e for e in eset.entries if e.gpu is not None]
        if not fitted:
            continue
        assert eset.defaults.compute == min(e.compute for e in fitted if e.compute)
        assert eset.defaults.memory == min(e.memory for e in fitted if e.memory)


def _candidate(catalog: Catalog, gpu: str, precision: str = "fp8") -> Candidate:
    model = catalog.model("llama-3.1-70b")
    par = Parallelism(2)
    return Candidate(model, catalog.gpu(gpu), None, precision, "fp8", par)


@pytest.mark.parametrize("set_id", ["nim-2024", "trtllm-0.17", "vllm-2026"])
@pytest.mark.parametrize("gpu", ["b200", "mi300x", "h100-pcie", "h20", "l4", "gaudi3"])
def test_unmeasured_gpu_is_never_faster_than_its_datasheet_roofline(
    catalog: Catalog, set_id: str, gpu: str
) -> None:
    est = Estimator(catalog.efficiency_set(set_id))
    cand = _candidate(catalog, gpu)
    res = est.resolve(cand, 2000)
    assert res.deployment is not None
    dep = res.deployment
    c = dep.costs
    # decode of 1 sequence: at least the weights (one GPU's share) at datasheet bandwidth
    weights = c.dense_linear_params * dep.weight_bytes_per_param / cand.par.tp
    assert per_token_decode_s(dep, 1, 1000) >= weights / dep.hbm_bytes_per_s
    # prefill of 8k tokens: at least the linear FLOPs at datasheet peak
    flops = 2 * 8192 * c.active_linear_params / cand.par.tp
    assert prefill(dep, 1, 8192).total_s >= flops / dep.peak_flops


@pytest.mark.parametrize("set_id", ["nim-2024", "trtllm-0.17", "vllm-2026", "trtllm-1.x"])
def test_unmeasured_gpu_never_beats_a_measured_one_with_better_figures(
    catalog: Catalog, set_id: str
) -> None:
    """H100 PCIe (Hopper, lower FLOP/s and bandwidth than the H100 SXM) is never predicted
    faster than a measured Hopper GPU: it takes its architecture's lowest shares."""
    eset = catalog.efficiency_set(set_id)
    est = Estimator(eset)
    measured = [
        g
        for g in catalog.gpus.values()
        if g.architecture == "hopper"
        and efficiency_resolution(eset, g, "fp8").trust == "calibrated"
    ]
    pcie = catalog.gpu("h100-pcie")
    assert efficiency_resolution(eset, pcie, "fp8").trust != "calibrated"
    for g in measured:
        assert g.hbm_bandwidth_bytes_per_s >= pcie.hbm_bandwidth_bytes_per_s
        slow = est.resolve(_candidate(catalog, "h100-pcie"), 2000).deployment
        fast = est.resolve(_candidate(catalog, g.id), 2000).deployment
        assert slow is not None and fast is not None
        for batch in (1, 32):
            assert per_token_decode_s(slow, batch, 1500) >= per_token_decode_s(
                fast, batch, 1500
            ) * (1 - 1e-9)
        assert prefill(slow, 4, 2000).total_s >= prefill(fast, 4, 2000).total_s * (1 - 1e-9)


def test_estimate_record_carries_trust(catalog: Catalog) -> None:
    from inferencesize.estimate import record

    est = Estimator(catalog.efficiency_set("nim-2024"))
    for gpu, trust in (("h100-sxm", "calibrated"), ("h200-sxm", "same-architecture")):
        res = est.resolve(_candidate(catalog, gpu), 1200)
        rec = record(res, 1000, 200, 1, "inflight", None, "nim-2024")
        assert rec["trust"] == trust


def test_engine_names_and_versions(catalog: Catalog) -> None:
    """A name resolves to its own engine's set; a version to the set whose releases cover it
    (engines.py); a version no set covers is an error listing the releases there are."""
    sets = list(catalog.efficiency.values())
    assert parse("trtllm@0.17") == ("TensorRT-LLM", "0.17")
    assert parse("vLLM") == ("vLLM", "")
    assert parse("nim-2024") is None
    assert engine_efficiency(sets, "nim-2024").id == "nim-2024"  # set ids keep working
    assert engine_efficiency(sets, "trtllm@0.14").id == "trtllm-0.14"
    assert engine_efficiency(sets, "trtllm@0.17.1").id == "trtllm-0.17"  # any 0.17.x
    assert engine_efficiency(sets, "trtllm").id == "trtllm-1.x"  # no version: the newest
    assert engine_efficiency(sets, "trtllm@1.0").id == "trtllm-1.x"  # 1.0-1.2
    assert engine_efficiency(sets, "trtllm@1.2").id == "trtllm-1.x"
    # nim: the NIM set (the default), not trtllm-0.17, a TensorRT-LLM set that also
    # predicts NIM 1.8 (its engines_source)
    assert engine_efficiency(sets, "nim").id == "nim-2024" == catalog.efficiency_set().id
    assert engine_efficiency(sets, "nim@1.0").id == "nim-2024"
    assert engine_efficiency(sets, "nim@1.8.0").id == "trtllm-0.17"
    assert engine_efficiency(sets, "vllm").id == "vllm-2026"
    assert engine_efficiency(sets, "vllm@0.12").id == "vllm-2026"  # both ends of 0.12-0.19
    assert engine_efficiency(sets, "vllm@0.19.1").id == "vllm-2026"
    assert engine_efficiency(sets, "sglang@0.5").id == "sglang-2026"
    with pytest.raises(UnknownIdError, match="unknown engine 'tgi'"):
        engine_efficiency(sets, "tgi")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "vllm@0.6",
            "'vllm@0.6': no efficiency set describes vLLM 0.6; the sets describe vLLM"
            " 0.12-0.19 (vllm-2026): name one of those versions or a set id, or fit one to your"
            " measurements with `infersize calibrate`",
        ),
        (
            "vllm@0.20",
            "'vllm@0.20': no efficiency set describes vLLM 0.20; the sets describe vLLM"
            " 0.12-0.19 (vllm-2026): name one of those versions or a set id, or fit one to your"
            " measurements with `infersize calibrate`",
        ),
        (
            "trtllm@0.16",  # between two sets' releases: neither describes it
            "'trtllm@0.16': no efficiency set describes TensorRT-LLM 0.16; the sets describe"
            " TensorRT-LLM 0.14 (trtllm-0.14), 0.17 (trtllm-0.17), 1.0-1.2 (trtllm-1.x): name"
            " one of those versions or a set id, or fit one to your measurements with"
            " `infersize calibrate`",
        ),
        (
            "nim@2",
            "'nim@2': no efficiency set describes NIM 2; the sets describe NIM 1.0 (nim-2024),"
            " 1.8 (trtllm-0.17): name one of those versions or a set id, or fit one to your"
            " measurements with `infersize calibrate`",
        ),
        (
            "atom",  # no set describes it: not a name that is listed, nor one that resolves
            "unknown engine 'atom': name one of nim, sglang, trtllm, vllm (optionally @version)"
            " or an efficiency set id (nim-2024, sglang-2026, trtllm-0.14, trtllm-0.17,"
            " trtllm-0.9-static, trtllm-1.x, vllm-2026)",
        ),
    ],
)
def test_engine_errors(catalog: Catalog, text: str, message: str) -> None:
    with pytest.raises(UnknownIdError) as err:
        engine_efficiency(catalog.efficiency.values(), text)
    assert str(err.value) == message


def test_every_listed_engine_name_resolves(catalog: Catalog) -> None:
    """The names messages list are the names that work, each with every release listed."""
    from inferencesize.engines import names
    from inferencesize.specs.efficiency import releases

    sets = list(catalog.efficiency.values())
    listed = names(sets)
    assert listed == ["nim", "sglang", "trtllm", "vllm"]
    for name in listed:
        assert engine_efficiency(sets, name).id
    for s in sets:
        for r in releases(s):
            alias = {"TensorRT-LLM": "trtllm"}.get(r.name, r.name.lower())
            for version in {r.first, r.last}:
                got = engine_efficiency(sets, f"{alias}@{version[0]}.{version[1]}")
                assert any(x.covers(version) for x in releases(got) if x.name == r.name)


def test_an_engine_a_user_set_describes_resolves_by_its_name(catalog: Catalog) -> None:
    """A user's set that lists its releases makes its engine a name (no alias needed)."""
    base = catalog.efficiency_set("vllm-2026")
    mine = base.model_copy(
        update={"id": "my-atom", "engines": ["ATOM"], "releases": ["ATOM 0.3-0.4"]}
    )
    sets = [*catalog.efficiency.values(), mine]
    assert engine_efficiency(sets, "atom@0.4").id == "my-atom"
    assert engine_efficiency(sets, "ATOM").id == "my-atom"
    with pytest.raises(UnknownIdError, match=r"describe ATOM 0.3-0.4 \(my-atom\)"):
        engine_efficiency(sets, "atom@0.2")


def test_allreduce_alpha_grows_with_barrier_depth() -> None:
    link = Link("nvlink", 450e9, 8e-6)
    assert allreduce_latency(1, link) == 0.0  # one GPU: no collective
    assert allreduce_latency(2, link) == 8e-6  # the fitted two-GPU cost
    assert allreduce_latency(8, link) == pytest.approx(3 * 8e-6)
    # a 72-GPU NVLink domain pays log2(72) ≈ 6.17 alphas, not 71
    assert allreduce_latency(72, link) == pytest.approx(math.log2(72) * 8e-6)


def test_decode_allreduce_time_at_tp8_is_log_deep(catalog: Catalog) -> None:
    """One sequence of Llama-3.1-70B (80 layers, hidden 8192) at TP8: 2 all-reduces per layer of
    8192 · 2 bytes, each log2(8) = 3 alphas plus 2 · 7/8 of the message over the link."""
    est = Estimator(catalog.efficiency_set("nim-2024"))
    model, gpu = catalog.model("llama-3.1-70b"), catalog.gpu("h100-sxm")
    res = est.resolve(Candidate(model, gpu, None, "fp8", "fp8", Parallelism(8)), 2000)
    assert res.deployment is not None
    dep = res.deployment
    alpha, link = dep.eff.comm_latency_s, dep.tp_link
    one = 3 * alpha + 2 * 7 / 8 * 8192 * 2 / (link.bytes_per_s * dep.eff.comm)
    comm = decode_step(dep, 1, 1500).comm_s
    assert comm == pytest.approx(2 * 80 * one, rel=1e-9)
    # a ring's n − 1 = 7 alphas per all-reduce would cost 2 · 80 · 4 · alpha more
    assert 2 * 80 * 7 * alpha - 2 * 80 * 3 * alpha == pytest.approx(640 * alpha)
