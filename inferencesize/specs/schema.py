"""The pydantic models that validate specs, built from the spec classes on first use.

For each :class:`~inferencesize.specs.common.Spec` class, :func:`model_of` builds (once) a
frozen pydantic model of the same name, fields, aliases, defaults, constraints and validators:
its annotations are read in the spec's module with the types of
:mod:`inferencesize.specs.types`, ``Field`` is pydantic's and the spec classes they name are
their models. Validation (:func:`validate`) runs the model and turns its result into spec
instances (:func:`to_plain`); :func:`to_model` goes back, for pydantic's rarer dumps.
"""

from __future__ import annotations

import builtins
import inspect
import sys
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict

from inferencesize.specs import types
from inferencesize.specs.common import MAX_TEXT, REQUIRED, VALIDATOR_MARK, Spec

S = TypeVar("S", bound=Spec)


class _Model(BaseModel):
    """Base of every spec model: frozen, no unknown keys, aliases accepted, finite floats only,
    text of bounded length."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        allow_inf_nan=False,
        str_max_length=MAX_TEXT,
    )


_MODELS: dict[type[Spec], type[BaseModel]] = {}
_SPECS: dict[type[BaseModel], type[Spec]] = {}


def model_of(cls: type[Spec]) -> type[BaseModel]:
    """The pydantic model of spec class ``cls`` (built on first use)."""
    model = _MODELS.get(cls)
    if model is None:
        model = _build(cls)
        _MODELS[cls] = model
        _SPECS[model] = cls
    return model


class _Names(Mapping[str, Any]):
    """The names a spec's annotations are read with: pydantic's ``Field``, the spec's module
    (its spec classes as their models), then :mod:`inferencesize.specs.types`."""

    def __init__(self, module: dict[str, Any]) -> None:
        self.module = module

    def __getitem__(self, name: str) -> Any:
        if name == "Field":
            return pydantic.Field
        if name in self.module:
            value = self.module[name]
            if isinstance(value, type) and issubclass(value, Spec):
                return model_of(value)
            return value
        if name in vars(types):
            return vars(types)[name]
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.module)

    def __len__(self) -> int:
        return len(self.module)


def _build(cls: type[Spec]) -> type[BaseModel]:
    bases = tuple(model_of(b) for b in cls.__bases__ if issubclass(b, Spec) and b is not Spec)
    names = _Names(vars(sys.modules[cls.__module__]))
    scope = {"__builtins__": builtins}
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
    }
    own = inspect.get_annotations(cls)
    for name, declared in cls.__spec_fields__.items():
        if name not in own:
            continue  # a base class's field
        annotation = own[name]
        if isinstance(annotation, str):
            annotation = eval(annotation, scope, names)
        annotations[name] = annotation
        options = dict(declared.options)
        factory = options.get("default_factory")
        if isinstance(factory, type) and issubclass(factory, Spec):
            options["default_factory"] = model_of(factory)
        if options:
            given = {} if declared.default is REQUIRED else {"default": declared.default}
            namespace[name] = pydantic.Field(**given, **options)
        elif declared.default is not REQUIRED:
            namespace[name] = declared.default
    namespace["__annotations__"] = annotations
    for attr, value in cls.__dict__.items():
        if (attr.startswith("__") and attr.endswith("__")) or attr in annotations:
            continue  # the class's own machinery; fields were declared above
        mark = getattr(getattr(value, "__func__", value), VALIDATOR_MARK, None)
        if mark is not None:
            kind, args, kwargs = mark
            decorator: Any = (
                pydantic.model_validator if kind == "model" else pydantic.field_validator
            )
            value = decorator(*args, **kwargs)(value)
        namespace[attr] = value
    model: type[BaseModel] = type(cls.__name__, bases or (_Model,), namespace)
    return model


def validate(
    cls: type[S],
    obj: Any,
    *,
    strict: bool | None = None,
    from_attributes: bool | None = None,
    context: Any | None = None,
) -> S:
    """``obj`` validated as a ``cls``; raises ``pydantic.ValidationError``."""
    model = model_of(cls)
    done = model.model_validate(
        to_model(obj), strict=strict, from_attributes=from_attributes, context=context
    )
    spec: S = to_plain(done)
    return spec


def to_plain(value: Any) -> Any:
    """``value`` with every pydantic model instance in it turned into its spec."""
    if isinstance(value, BaseModel):
        cls = _SPECS[type(value)]
        fields = {k: to_plain(v) for k, v in value.__dict__.items()}
        return cls._of(fields, set(value.model_fields_set))
    kind = type(value)
    if kind is list or kind is tuple:
        return kind(to_plain(v) for v in value)
    if kind is dict:
        return {k: to_plain(v) for k, v in value.items()}
    return value


def to_model(value: Any) -> Any:
    """``value`` with every spec in it turned into an instance of its pydantic model."""
    if isinstance(value, Spec):
        model = model_of(type(value))
        fields = {k: to_model(v) for k, v in value.__dict__.items()}
        return model.model_construct(_fields_set=set(value.model_fields_set), **fields)
    kind = type(value)
    if kind is list or kind is tuple:
        return kind(to_model(v) for v in value)
    if kind is dict:
        return {k: to_model(v) for k, v in value.items()}
    return value
