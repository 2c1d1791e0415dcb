"""The base of every catalog and scenario type, and the ceilings every number stays under.

A spec (:class:`Spec`) is a frozen object whose fields are declared as class annotations, as
pydantic models declare them. The classes themselves never import pydantic: their schema (the
annotation types of :mod:`inferencesize.specs.types`, :func:`Field` options, validators marked
with :func:`model_validator` / :func:`field_validator`) is turned into a pydantic model only
when data must be validated (:mod:`inferencesize.specs.schema`), and a spec already validated
is rebuilt from plain data without it (:func:`spec_to_data`, :func:`spec_from_data`). So a
command that finds its catalog in the cache pays neither for importing pydantic nor for
building ~30 models. A spec behaves as the frozen pydantic model it is validated by:
``model_validate``, ``model_dump``, ``model_copy``, ``model_fields``, ``model_fields_set``,
equality and hashing by field values.

Numbers are checked at the edge so that the math below never sees a value that overflows,
allocates without bound or takes long to plan: ``true`` is never a number (YAML's booleans are
not 1 and 0 here), no float is infinite or NaN, and each count has a ceiling far above any real
model, GPU or deployment (:data:`CEILINGS`, listed in docs/catalogs.md).
"""

from __future__ import annotations

import inspect
import math
import operator
import reprlib
from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from typing import Any, ClassVar, Literal, Self, TypeVar, cast

from inferencesize import vocabulary

#: Longest text field (ids, names, sources, descriptions) a catalog or scenario may state.
MAX_TEXT = 10_000

#: Transformer layers of one model (the largest published models have ~130).
MAX_LAYERS = 1_000
#: Attention heads (query or KV) of one layer.
MAX_HEADS = 100_000
#: Widths: hidden size, FFN and expert widths, head dimension, MLA ranks.
MAX_WIDTH = 1_000_000
#: Vocabulary entries.
MAX_VOCAB = 10_000_000
#: Experts of one MoE layer (routed or shared), and experts per token.
MAX_EXPERTS = 100_000
#: Tokens: context window, ISL, OSL, sliding windows, shared prefixes, KV caps, chunks.
MAX_TOKENS = 100_000_000
#: Parallel degrees (TP, PP, EP, attention DP, CP) and GPUs per node or NVLink domain.
MAX_PARALLEL = 4_096
#: Request rate a scenario may state: a billion requests/s, beyond any deployment (larger ones
#: overflow the instance counts).
MAX_RPS = 1e9
#: Batch sizes and instance or GPU counts in limits.
MAX_COUNT = 1_000_000_000
#: GPU memory: 1 PiB.
MAX_MEMORY_BYTES = 2.0**50
#: Bandwidths (HBM, scale-up, scale-out): 1 PB/s.
MAX_BANDWIDTH_BYTES_PER_S = 1e15
#: Dense peak throughput of one GPU: 1 ZFLOP/s.
MAX_FLOP_PER_S = 1e21
#: Power of one GPU or node: 1 GW.
MAX_WATTS = 1e9

#: Field kind -> (ceiling, how it reads in a message), for the documentation.
CEILINGS: dict[str, tuple[float, str]] = {
    "layers (num_layers, layer_types entries)": (MAX_LAYERS, "1,000"),
    "attention heads": (MAX_HEADS, "100,000"),
    "widths (hidden, FFN, expert, head_dim, MLA ranks)": (MAX_WIDTH, "1,000,000"),
    "vocabulary": (MAX_VOCAB, "10,000,000"),
    "experts": (MAX_EXPERTS, "100,000"),
    "tokens (context, ISL, OSL, windows, prefixes)": (MAX_TOKENS, "100,000,000"),
    "TP / PP / EP / attention DP / CP, GPUs per node": (MAX_PARALLEL, "4,096"),
    "batch sizes, GPU and instance counts": (MAX_COUNT, "1,000,000,000"),
    "GPU memory": (MAX_MEMORY_BYTES, "1 PiB"),
    "bandwidth": (MAX_BANDWIDTH_BYTES_PER_S, "1 PB/s"),
    "dense FLOP/s": (MAX_FLOP_PER_S, "1e21 FLOPS"),
    "power": (MAX_WATTS, "1 GW"),
}

_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 2
#: Longest value shown in a message.
SHOWN_CHARS = 80


def brief(value: object) -> str:
    """``repr(value)`` for a message, at most :data:`SHOWN_CHARS` characters: a value from a
    file may be a megabyte of text, a number of thousands of digits or a deep structure."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"<a number of about {digits:,} digits>"
    text = _REPR.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def clip(text: str, limit: int = 2 * SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters (a message that may quote a file's content)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- declaring fields


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


#: The default of a required field.
REQUIRED: Any = _Missing()


class FieldSpec:
    """A field's default and the options of ``pydantic.Field`` (alias, description,
    constraints), as :func:`Field` recorded them."""

    __slots__ = ("default", "options")

    def __init__(self, default: Any, options: dict[str, Any]) -> None:
        self.default = default
        self.options = options

    @property
    def alias(self) -> str | None:
        alias: str | None = self.options.get("alias")
        return alias


def Field(default: Any = REQUIRED, **options: Any) -> Any:
    """A field's default and ``pydantic.Field`` options, recorded without importing pydantic
    (the schema hands them to pydantic: :mod:`inferencesize.specs.schema`)."""
    return FieldSpec(default, options)


F = TypeVar("F")
#: Attribute that marks a validator: (kind, positional arguments, keyword arguments).
VALIDATOR_MARK = "__spec_validator__"


def _mark(obj: Any, mark: tuple[str, tuple[Any, ...], dict[str, Any]]) -> None:
    setattr(getattr(obj, "__func__", obj), VALIDATOR_MARK, mark)


def model_validator(*, mode: Literal["before", "after", "wrap", "plain"]) -> Callable[[F], F]:
    """``pydantic.model_validator``, applied when the schema is built."""

    def mark(fn: F) -> F:
        _mark(fn, ("model", (), {"mode": mode}))
        return fn

    return mark


def field_validator(
    field: str, /, *fields: str, mode: Literal["before", "after", "wrap", "plain"] = "after"
) -> Callable[[F], F]:
    """``pydantic.field_validator``, applied when the schema is built."""

    def mark(fn: F) -> F:
        _mark(fn, ("field", (field, *fields), {"mode": mode}))
        return fn

    return mark


# --------------------------------------------------------------------------- the base class


class FrozenSpecError(AttributeError):
    """A field of a spec was assigned: specs are frozen."""


class _SpecType(type):
    """Metaclass of specs: ``model_fields`` is a property of the class, as on pydantic models."""

    @property
    def model_fields(cls) -> dict[str, Any]:
        """The pydantic ``FieldInfo`` of every field (builds the schema)."""
        from inferencesize.specs.schema import model_of

        fields: dict[str, Any] = model_of(cast("type[Spec]", cls)).model_fields
        return fields


#: Every spec class by ``module:qualified name`` (plain data names its class this way).
_CLASSES: dict[str, type[Spec]] = {}


class Spec(metaclass=_SpecType):
    """Base of every catalog and scenario type: frozen, no unknown keys, aliases accepted,
    finite floats only, text of bounded length (the schema's configuration)."""

    __slots__ = ("__dict__", "_fields_set")
    #: field name -> its declaration, in declaration order (base classes' fields first)
    __spec_fields__: ClassVar[dict[str, FieldSpec]] = {}
    _fields_set: set[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls.__spec_fields__)
        for name, annotation in inspect.get_annotations(cls).items():
            if "ClassVar" in str(annotation):
                continue
            value = cls.__dict__.get(name, REQUIRED)
            fields[name] = value if isinstance(value, FieldSpec) else FieldSpec(value, {})
            if value is not REQUIRED:
                delattr(cls, name)  # as on pydantic models: the default is not a class attribute
        cls.__spec_fields__ = fields
        _CLASSES[f"{cls.__module__}:{cls.__qualname__}"] = cls

    def __init__(self, **data: Any) -> None:
        """Validate ``data`` (field names or aliases), as a pydantic model's constructor does."""
        made = type(self).model_validate(data)
        object.__setattr__(self, "__dict__", made.__dict__)
        object.__setattr__(self, "_fields_set", made._fields_set)

    @classmethod
    def _of(cls, values: dict[str, Any], fields_set: set[str]) -> Self:
        """An instance holding ``values`` (every field, already valid): no validation."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "__dict__", values)
        object.__setattr__(obj, "_fields_set", fields_set)
        return obj

    # ---- pydantic's model API
    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
    ) -> Self:
        """Validate ``obj`` (a mapping, or an instance); raises ``pydantic.ValidationError``."""
        if isinstance(obj, cls):
            return obj
        from inferencesize.specs.schema import validate

        return validate(cls, obj, strict=strict, from_attributes=from_attributes, context=context)

    @property
    def model_fields_set(self) -> set[str]:
        """The fields given when the spec was validated (or updated by ``model_copy``)."""
        return self._fields_set

    def model_dump(
        self,
        *,
        mode: str = "python",
        by_alias: bool | None = None,
        exclude_unset: bool = False,
        exclude_none: bool = False,
        **options: Any,
    ) -> dict[str, Any]:
        """The fields as plain Python data, nested specs as mappings and the vocabulary's words
        as their values (pydantic's ``model_dump``; other modes and options go to pydantic
        itself)."""
        if mode != "python" or any(options.values()):
            from inferencesize.specs.schema import to_model

            out: dict[str, Any] = to_model(self).model_dump(
                mode=mode,
                by_alias=by_alias,
                exclude_unset=exclude_unset,
                exclude_none=exclude_none,
                **options,
            )
            return out
        return _dump(self, bool(by_alias), exclude_unset, exclude_none)

    def model_dump_json(self, **options: Any) -> str:
        """pydantic's ``model_dump_json``."""
        from inferencesize.specs.schema import to_model

        text: str = to_model(self).model_dump_json(**options)
        return text

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied (not validated), as pydantic's ``model_copy``."""
        import copy

        values = dict(self.__dict__)
        if deep:
            memo: dict[int, Any] = {}
            values = {
                k: (v if update and k in update else copy.deepcopy(v, memo))
                for k, v in values.items()
            }
        fields_set = set(self._fields_set)
        if update:
            values.update(update)
            fields_set.update(update.keys())
        return type(self)._of(values, fields_set)

    # ---- a frozen value
    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenSpecError(f"{type(self).__name__} is frozen: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise FrozenSpecError(f"{type(self).__name__} is frozen: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Spec):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        names = tuple(type(self).__spec_fields__)
        if not names:
            return 0
        return hash(operator.itemgetter(*names)(self.__dict__))

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._repr_fields(', ')})"

    def __str__(self) -> str:
        return self._repr_fields(" ")

    def _repr_fields(self, sep: str) -> str:
        return sep.join(f"{k}={v!r}" for k, v in self.__dict__.items())

    def __getstate__(self) -> tuple[dict[str, Any], set[str]]:
        return self.__dict__, self._fields_set

    def __setstate__(self, state: tuple[dict[str, Any], set[str]]) -> None:
        object.__setattr__(self, "__dict__", dict(state[0]))
        object.__setattr__(self, "_fields_set", set(state[1]))


def _dump(spec: Spec, by_alias: bool, exclude_unset: bool, exclude_none: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    values = spec.__dict__
    for name, declared in type(spec).__spec_fields__.items():
        if exclude_unset and name not in spec._fields_set:
            continue
        value = values[name]
        if exclude_none and value is None:
            continue
        key = (declared.alias or name) if by_alias else name
        out[key] = _dump_value(value, by_alias, exclude_unset, exclude_none)
    return out


def _dump_value(value: Any, by_alias: bool, exclude_unset: bool, exclude_none: bool) -> Any:
    if isinstance(value, Spec):
        return _dump(value, by_alias, exclude_unset, exclude_none)
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(_dump_value(v, by_alias, exclude_unset, exclude_none) for v in value)
    if isinstance(value, dict):
        return {k: _dump_value(v, by_alias, exclude_unset, exclude_none) for k, v in value.items()}
    if isinstance(value, StrEnum):  # a word of the vocabulary as a scenario spells it
        return value.value
    return value


# --------------------------------------------------------------------------- as plain data

_SCALARS = (str, int, float, bool, type(None))
#: The vocabulary's enums a spec field may hold, by class name.
_WORDS: dict[str, type[StrEnum]] = {
    w.__name__: w
    for w in (
        vocabulary.Statistic,
        vocabulary.Arrivals,
        vocabulary.Mode,
        vocabulary.Objective,
        vocabulary.CostBasis,
        vocabulary.Batching,
        vocabulary.Router,
    )
}


def spec_to_data(spec: Spec) -> dict[str, Any] | None:
    """A validated spec as JSON-ready data that :func:`spec_from_data` turns back into an equal
    spec, or None when a value has no exact JSON form (a tuple, a date, a non-string key).

    A spec is ``{"s": "module:Class", "u": fields given (a bit per field, in declaration
    order), "v": [field values in declaration order]}``, a mapping ``{"d": {...}}``, a word of
    the vocabulary ``{"e": "Class", "v": its value}``; lists, text, numbers, booleans and None
    are themselves."""
    try:
        data: dict[str, Any] = _to_data(spec)
    except _NoData:
        return None
    return data


class _NoData(Exception):
    pass


def _to_data(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if _WORDS.get(kind.__name__) is kind:
        return {"e": kind.__name__, "v": value.value}
    if kind is list:
        return [_to_data(v) for v in value]
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise _NoData
        return {"d": {k: _to_data(v) for k, v in value.items()}}
    if isinstance(value, Spec):
        name = f"{kind.__module__}:{kind.__qualname__}"
        if _CLASSES.get(name) is not kind:
            raise _NoData
        names = list(kind.__spec_fields__)
        if list(value.__dict__) != names:
            raise _NoData
        given = sum(1 << i for i, n in enumerate(names) if n in value._fields_set)
        return {"s": name, "u": given, "v": [_to_data(v) for v in value.__dict__.values()]}
    raise _NoData


def spec_from_data(data: Any, expected: type[Spec]) -> Any:
    """The spec (of class ``expected``) that :func:`spec_to_data` made ``data`` of; ValueError
    when ``data`` is not that (a cache written by another version, or damaged)."""
    spec = _from_data(data)
    if type(spec) is not expected:
        raise ValueError(f"plain data of a {type(spec).__name__}, expected a {expected.__name__}")
    return spec


def _from_data(data: Any) -> Any:
    kind = type(data)
    if kind in _SCALARS:
        return data
    if kind is list:
        return [v if type(v) in _SCALARS else _from_data(v) for v in data]
    if kind is not dict:
        raise ValueError(f"unexpected {kind.__name__} in plain spec data")
    if len(data) == 2 and "e" in data:
        word = _WORDS.get(data["e"]) if type(data["e"]) is str else None
        if word is None or type(data.get("v")) is not str:
            raise ValueError("unexpected word in plain spec data")
        return word(data["v"])
    if len(data) == 1:
        items = data.get("d")
        if type(items) is not dict:
            raise ValueError("unexpected mapping in plain spec data")
        return {k: v if type(v) in _SCALARS else _from_data(v) for k, v in items.items()}
    name, given, values = data.get("s"), data.get("u"), data.get("v")
    cls = _CLASSES.get(name) if type(name) is str else None
    if (
        len(data) != 3
        or cls is None
        or type(given) is not int
        or type(values) is not list
        or len(values) != len(cls.__spec_fields__)
    ):
        raise ValueError("plain spec data does not match its class")
    names = cls.__spec_fields__.keys()
    fields = {
        n: v if type(v) in _SCALARS else _from_data(v) for n, v in zip(names, values, strict=True)
    }
    return cls._of(fields, {n for i, n in enumerate(names) if given >> i & 1})
