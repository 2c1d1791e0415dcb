"""Which efficiency set a measured engine gets (``specs.efficiency.engine_set``).

A set's ``engines`` entry with a version ('TensorRT-LLM 0.17') claims that engine's releases
nearest the version; one without a version is a substring of the row's label and wins outright.
"""

from __future__ import annotations

import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.specs import EfficiencySet, engine_set, names_engine


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _sets(catalog: Catalog, **engines: list[str]) -> list[EfficiencySet]:
    base = catalog.efficiency_set("nim-2024")
    return [
        base.model_copy(update={"id": ident, "engines": listed, "default": False})
        for ident, listed in engines.items()
    ]


def _pick(sets: list[EfficiencySet], engine: str, version: str = "") -> str | None:
    chosen = engine_set(sets, engine, version)
    return None if chosen is None else chosen.id


def test_nearest_version_of_the_named_engine(catalog: Catalog) -> None:
    sets = _sets(catalog, old=["Engine 0.9"], mid=["Engine 0.14.0"], new=["engine v0.17"])
    assert _pick(sets, "Engine", "0.14.0") == "mid"  # its own version
    assert _pick(sets, "Engine", "0.12") == "mid"  # 2 from 0.14, 3 from 0.9
    assert _pick(sets, "Engine", "0.11") == "old"  # 2 from 0.9, 3 from 0.14
    assert _pick(sets, "Engine", "0.19.1") == "new"  # newer than any: the newest
    assert _pick(sets, "Engine", "1.0") == "new"  # a major release counts as far newer
    assert _pick(sets, "Engine", "0.2") == "old"
    assert _pick(sets, "Engine v0.15") == "mid"  # the version may sit in the engine text


def test_a_tie_goes_to_the_newer_release(catalog: Catalog) -> None:
    sets = _sets(catalog, a=["Engine 1.0"], b=["Engine 1.8"])
    assert _pick(sets, "Engine", "1.4") == "b"
    assert _pick(sets, "Engine", "1.3") == "a"


def test_an_entry_without_version_is_a_substring_and_wins(catalog: Catalog) -> None:
    sets = _sets(catalog, versioned=["TensorRT-LLM 0.14"], static=["gptSessionBenchmark"])
    label = "TensorRT-LLM (gptSessionBenchmark, static batching)"
    assert _pick(sets, label, "0.14.0") == "static"
    assert _pick(sets, "TensorRT-LLM", "0.14.0") == "versioned"


def test_no_match_is_none_for_the_caller_default(catalog: Catalog) -> None:
    sets = _sets(catalog, nim=["NIM 1.0"], trt=["TensorRT-LLM 0.17"])
    assert _pick(sets, "vLLM", "0.6.3") is None  # an engine no set names
    assert _pick(sets, "NIM (TRT-LLM backend)") is None  # named, but no version to compare
    assert _pick(sets, "minimal server", "1.0") is None  # 'nim' only as a whole word


def test_the_engine_named_first_decides(catalog: Catalog) -> None:
    sets = _sets(catalog, nim=["NIM 1.0"], trt=["TensorRT-LLM 0.17"])
    assert _pick(sets, "NIM (TensorRT-LLM backend)", "1.0.3") == "nim"
    assert _pick(sets, "TensorRT-LLM (served by NIM)", "0.17") == "trt"


def test_names_engine(catalog: Catalog) -> None:
    [nim] = _sets(catalog, nim=["NIM 1.0", "static batching"])
    assert names_engine(nim, "NIM/GenAI-Perf sample")
    assert names_engine(nim, "NIM", "1.8.0")  # any version of a listed engine
    assert names_engine(nim, "TensorRT-LLM (static batching)")
    assert not names_engine(nim, "TensorRT-LLM", "0.17")


def test_shipped_sets_by_engine(catalog: Catalog) -> None:
    cases = {
        ("NIM (TRT-LLM backend)", "NIM llama3 1.0.x (2024)"): "nim-2024",  # the DLI course rows
        ("NIM (TRT-LLM backend)", ""): "nim-2024",  # no version: the default set
        ("NIM", "1.8.0"): "trtllm-0.17",  # the held-out NIM 1.8.0 table (engines_source)
        ("NIM", "1.3.0"): "nim-2024",
        ("TensorRT-LLM", "0.14.0"): "trtllm-0.14",
        ("TensorRT-LLM", "0.15.0"): "trtllm-0.14",
        ("TensorRT-LLM", "0.16.0"): "trtllm-0.17",
        ("TensorRT-LLM", "0.19.0"): "trtllm-0.17",
        ("TensorRT-LLM (gptSessionBenchmark, static batching)", "0.9.0"): "trtllm-0.9-static",
        ("TensorRT-LLM", "1.0.0rc3"): "trtllm-1.x",
        ("TensorRT-LLM", "1.2.0rc6.post2"): "trtllm-1.x",
        ("TensorRT-LLM", ""): "nim-2024",  # no version: the default set
        ("vLLM", "0.19.0"): "vllm-2026",  # the set lists 'vLLM' without a version: every vLLM
        ("vLLM", "0.6.3"): "vllm-2026",
        ("SGLang", "0.5.9"): "sglang-2026",
        ("TGI", "3.0"): "nim-2024",  # an engine no set names: the default set
    }
    got = {key: catalog.efficiency_for(*key).id for key in cases}
    assert got == cases
    assert catalog.efficiency_set("trtllm-0.17").engines_source  # the NIM claim has its reason
