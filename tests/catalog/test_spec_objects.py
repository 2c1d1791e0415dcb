"""Specs are plain frozen objects that behave as the pydantic models validating them: the same
dumps, fields and errors; their plain data (the cache's form) reads back as an equal spec; and
importing them loads neither pydantic nor PyYAML."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from itertools import product
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from inferencesize.catalog import KINDS, builtin_root, read_yaml
from inferencesize.specs import DenseFlops, EfficiencyValues, GpuSpec, ModelSpec, ScenarioSpec
from inferencesize.specs.common import FrozenSpecError, Spec, spec_from_data, spec_to_data
from inferencesize.specs.schema import model_of, to_model

SHIPPED = [
    (path, cls)
    for sub, cls in KINDS.values()
    for path in sorted((builtin_root() / sub).glob("*.y*ml"))
]


def _id(item: tuple[Path, type[Spec]]) -> str:
    return f"{item[0].parent.name}/{item[0].stem}"


@pytest.fixture(scope="module", params=SHIPPED, ids=[_id(s) for s in SHIPPED])
def shipped(request: pytest.FixtureRequest) -> tuple[Spec, BaseModel]:
    """A shipped catalog file as a spec and as its pydantic model's instance."""
    path, cls = request.param
    data = read_yaml(path)
    return cls.model_validate(data), model_of(cls).model_validate(data)


def test_dumps_are_the_pydantic_models_dumps(shipped: tuple[Spec, BaseModel]) -> None:
    spec, model = shipped
    for by_alias, unset, none in product((False, True), repeat=3):
        options = {"by_alias": by_alias, "exclude_unset": unset, "exclude_none": none}
        assert spec.model_dump(**options) == model.model_dump(**options)
        assert list(spec.model_dump(**options)) == list(model.model_dump(**options))
    assert spec.model_dump(mode="json") == model.model_dump(mode="json")
    assert spec.model_dump_json() == model.model_dump_json()
    assert spec.model_fields_set == model.model_fields_set
    assert to_model(spec) == model


def test_plain_data_reads_back_as_an_equal_spec(shipped: tuple[Spec, BaseModel]) -> None:
    spec, _ = shipped
    data = spec_to_data(spec)
    assert data is not None
    back = spec_from_data(json.loads(json.dumps(data)), type(spec))
    assert type(back) is type(spec) and back == spec
    assert back.model_fields_set == spec.model_fields_set
    assert back.model_dump(exclude_unset=True) == spec.model_dump(exclude_unset=True)
    assert repr(back) == repr(spec)


def test_copies_and_pickles_are_equal(shipped: tuple[Spec, BaseModel]) -> None:
    spec, _ = shipped
    for other in (copy.copy(spec), copy.deepcopy(spec), pickle.loads(pickle.dumps(spec))):
        assert other == spec and other.model_fields_set == spec.model_fields_set


def _gpu() -> GpuSpec:
    path = builtin_root() / "hardware" / "gpus"
    return GpuSpec.model_validate(read_yaml(next(iter(sorted(path.glob("*.yaml"))))))


def test_specs_are_frozen_and_copied_with_updates() -> None:
    gpu = _gpu()
    with pytest.raises(FrozenSpecError):
        gpu.name = "other"  # type: ignore[misc]
    with pytest.raises(FrozenSpecError):
        del gpu.name
    renamed = gpu.model_copy(update={"name": "Renamed"})
    assert renamed.name == "Renamed" and gpu.name != "Renamed"
    assert "name" in renamed.model_fields_set
    assert renamed.model_copy() == renamed and renamed != gpu


def test_equal_specs_hash_equal() -> None:
    a = DenseFlops.model_validate({"bf16": "989 TFLOPS"})
    b = DenseFlops(bf16="989 TFLOPS")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != DenseFlops(bf16="1 TFLOPS")
    assert a != model_of(DenseFlops).model_validate({"bf16": "989 TFLOPS"})  # not a spec


def test_constructors_and_model_validate_validate() -> None:
    with pytest.raises(ValidationError, match="num_kv_heads: must divide"):
        ModelSpec.model_validate(
            {
                "id": "m",
                "name": "M",
                "num_layers": 2,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_attention_heads": 8,
                "num_kv_heads": 3,
                "head_dim": 8,
                "vocab_size": 100,
                "max_context": 1024,
                "tie_embeddings": False,
                "attention": "GQA",
                "source": "test",
            }
        )
    with pytest.raises(ValidationError):
        DenseFlops(bf16=True)  # a boolean is not a number
    with pytest.raises(ValidationError):
        EfficiencyValues(compute=2.0)  # a share above 1
    values = EfficiencyValues(compute=0.5)
    assert values.compute == 0.5 and values.model_fields_set == {"compute"}
    assert EfficiencyValues.model_validate(values) is values


def test_model_fields_are_the_pydantic_models() -> None:
    for cls in (GpuSpec, ModelSpec, ScenarioSpec, EfficiencyValues):
        assert list(cls.model_fields) == list(model_of(cls).model_fields)
    assert GpuSpec.model_fields["memory_bytes"].alias == "memory"


def test_values_without_an_exact_json_form_are_not_plain_data() -> None:
    gpu = _gpu()
    assert spec_to_data(gpu.model_copy(update={"aliases": ("a",)})) is None
    assert spec_to_data(gpu.model_copy(update={"not_a_field": 1})) is None
    assert spec_to_data(gpu) is not None


@pytest.mark.parametrize(
    "data",
    [
        None,
        "text",
        [],
        {"d": []},
        {"s": "inferencesize.specs.hardware:NoSuchSpec", "u": 0, "v": []},
        {"s": "inferencesize.specs.hardware:DenseFlops", "u": 0, "v": [None] * 6},
        {"s": "inferencesize.specs.hardware:DenseFlops", "u": "0", "v": [None] * 7},
        {"s": "inferencesize.specs.hardware:DenseFlops", "u": 0, "v": [None] * 7, "x": 1},
        {"s": "inferencesize.specs.hardware:DenseFlops", "u": 0, "v": [None] * 6 + [{"x": 1}]},
    ],
)
def test_damaged_plain_data_is_refused(data: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        spec_from_data(data, DenseFlops)


def test_importing_the_specs_and_the_loader_loads_neither_pydantic_nor_yaml() -> None:
    code = (
        "import sys, inferencesize.catalog, inferencesize.specs;"
        "print(sorted(m for m in ('pydantic', 'yaml') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
