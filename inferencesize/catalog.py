"""Load and validate YAML catalogs (hardware, models, scenarios) with located, one-line errors.

Layout of a catalog root (the shipped one and every ``--catalog DIR``)::

    hardware/gpus/*.yaml      one GPU per file       (GpuSpec)
    hardware/systems/*.yaml   one server/rack a file (SystemSpec)
    hardware/efficiency/*.yaml fitted efficiency sets (performance model)
    models/*.yaml             one model per file     (ModelSpec)
    scenarios/*.yaml          one scenario per file  (ScenarioSpec)

Later roots override earlier ones by id. Loading is explicit (never at import time).

What a file validates to is kept between runs as plain data
(:mod:`inferencesize.catalog_cache`), so an unchanged catalog loads without PyYAML or pydantic
(the spec classes build their pydantic models only to validate: :mod:`inferencesize.specs`); a
file that does not validate is never kept, and reports the same error on every run.

Every file is read through :func:`read_bytes`: a regular file only (never a FIFO, device or
directory, so nothing blocks), at most :data:`MAX_FILE_BYTES`, UTF-8. YAML is checked before
PyYAML builds it (:func:`check_yaml_structure`): nesting deeper than :data:`MAX_YAML_DEPTH`
or aliases expanding past :data:`MAX_YAML_NODES` values are refused, and a key stated twice in
one mapping is an error (PyYAML would keep the last one silently).
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import functools
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from inferencesize.catalog_cache import FileCache, Memo, code_stamp, file_stamp
from inferencesize.engines import engine_efficiency
from inferencesize.errors import CatalogError, UnknownIdError
from inferencesize.io_kernels import kernel_tier, load_kernel_fit, merged_fit, read_kernel_fit
from inferencesize.kernel_step import KernelTier
from inferencesize.specs import (
    EfficiencySet,
    GpuSpec,
    ModelSpec,
    ScenarioSpec,
    SystemSpec,
    engine_set,
)
from inferencesize.specs.common import (
    SHOWN_CHARS,
    Spec,
    brief,
    clip,
    spec_from_data,
    spec_to_data,
)

if TYPE_CHECKING:
    import yaml
    from pydantic import ValidationError

ENV_CATALOG = "INFERSIZE_CATALOG"
KINDS: dict[str, tuple[str, type[Spec]]] = {
    "gpus": ("hardware/gpus", GpuSpec),
    "systems": ("hardware/systems", SystemSpec),
    "models": ("models", ModelSpec),
    "scenarios": ("scenarios", ScenarioSpec),
    "efficiency": ("hardware/efficiency", EfficiencySet),
}
DEFAULT_SCENARIO = "default"

S = TypeVar("S", bound=Spec)


@functools.cache
def builtin_root() -> Path:
    """The shipped catalog: inside the wheel (``_catalog``) or the source checkout's root."""
    here = Path(__file__).resolve().parent
    packaged = here / "_catalog"
    if (packaged / "hardware").is_dir():
        return packaged
    return here.parent


def display_path(path: Path) -> str:
    """A short path for messages: relative to the working directory or the catalog root."""
    cwd, root = Path.cwd(), builtin_root()
    if path.is_absolute():  # the common case needs no filesystem calls
        text = str(path)
        for prefix in (str(cwd).rstrip(os.sep) + os.sep, str(root).rstrip(os.sep) + os.sep):
            if text.startswith(prefix):
                return text[len(prefix) :]
    try:
        full = path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, an embedded NUL
        return str(path)
    for base in (cwd.resolve(), root.resolve()):
        try:
            return str(full.relative_to(base))
        except ValueError:
            continue
    return str(path)


#: Largest catalog, scenario, calibration or config.json file read (the largest shipped one
#: is a few KiB): a larger one is refused before it is read.
MAX_FILE_BYTES = 1 << 20
#: Largest data file read (measurements, traces, points, benchmark exports).
MAX_DATA_BYTES = 256 << 20

_FILE_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def read_bytes(path: Path, expected: str, limit: int = MAX_FILE_BYTES) -> tuple[str, bytes]:
    """(shown path, content) of a regular file of at most ``limit`` bytes; every failure is a
    located CatalogError. A FIFO, device or socket is refused before it is opened (nothing
    blocks), and the file opened is checked again, so a swap in between changes nothing."""
    shown = display_path(path)
    try:
        _check_kind(os.stat(path).st_mode, shown, expected)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
        try:
            info = os.fstat(fd)
            _check_kind(info.st_mode, shown, expected)
            if info.st_size > limit:
                raise CatalogError(
                    shown, "", f"is larger than {_size_text(limit)}, too large for {expected}"
                )
            chunks: list[bytes] = []
            size = 0
            while size <= limit:  # st_size is 0 for /proc files: read to the limit, not to it
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise CatalogError(shown, "", "file not found") from None
    except (OSError, ValueError) as err:  # ValueError: a NUL in the path
        why = getattr(err, "strerror", None) or str(err)
        raise CatalogError(shown, "", f"cannot be read ({why})") from None
    if size > limit:
        raise CatalogError(
            shown, "", f"is larger than {_size_text(limit)}, too large for {expected}"
        )
    return shown, b"".join(chunks)


def _check_kind(mode: int, shown: str, expected: str) -> None:
    if stat.S_ISDIR(mode):
        raise CatalogError(shown, "", f"is a directory, expected {expected}")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise CatalogError(shown, "", f"is {kind}, expected {expected}")


def read_text(
    path: Path, expected: str, limit: int = MAX_FILE_BYTES, encoding: str = "utf-8"
) -> tuple[str, str]:
    """(shown path, UTF-8 text) of a file; every failure is a located CatalogError."""
    shown, data = read_bytes(path, expected, limit)
    try:
        return shown, data.decode(encoding)
    except UnicodeDecodeError:
        raise CatalogError(shown, "", "is not UTF-8 text") from None


#: Deepest nesting of mappings and lists a YAML file may have (catalog files need 4).
MAX_YAML_DEPTH = 64
#: Most values (scalars, mappings, lists) a YAML file may stand for once its aliases are
#: expanded: a "billion laughs" file of a few lines stands for 10^9.
MAX_YAML_NODES = 100_000

# Anything that may stand before a block collection on its line: indentation, the indicators
# "- ", "? ", ": ", a document start, anchors and tags.
_LINE_PREFIX = re.compile(r"^(?:[ \t]|(?:[-?:]|---)(?=[ \t]|$)|[&!][^ \t]*(?=[ \t]|$))*", re.M)


# Where an alias may stand: a '*' that starts a node (after whitespace or a flow indicator) and
# is followed by a name; '4 * 8' in a text is none.
_ALIAS = re.compile(r"(?:^|(?<=[\s\[{,:]))\*(?=[^\s\]},])")


@functools.cache
def _yaml() -> SimpleNamespace:
    """PyYAML and the loader built on it, imported on first use (a command that finds its
    catalog in the cache reads no YAML): ``yaml``, ``safe_loader`` (libyaml's when PyYAML has
    it), ``Loader`` (with the strict constructor) and ``DuplicateKey``."""
    import yaml

    safe_loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _DuplicateKey(yaml.YAMLError):
        def __init__(self, key: object, mark: Any, first: Any) -> None:
            super().__init__(f"duplicate key {brief(key)}")
            self.key, self.mark, self.first = key, mark, first

    class _StrictConstructor(yaml.constructor.SafeConstructor):
        """SafeConstructor that refuses a key stated twice in one mapping (merge keys aside) and
        turns a value it cannot build (a 5,000-digit integer, a 13th month) into a located error."""

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, Any] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                        key_node, yaml.ScalarNode
                    ):
                        continue
                    key = self.construct_object(key_node)
                    try:
                        first = seen.setdefault(key, key_node.start_mark)
                    except TypeError:
                        continue
                    if first is not key_node.start_mark:
                        raise _DuplicateKey(key, key_node.start_mark, first)
            return super().construct_mapping(node, deep)

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except (ValueError, OverflowError) as err:  # int('9' * 5000), date(2024, 13, 1)
                text = str(getattr(node, "value", ""))
                if "integer string conversion" in str(err):
                    problem = f"a number of {len(text):,} digits is too long to read"
                else:
                    problem = f"cannot read {brief(text)}: {clip(str(err))}"
                raise yaml.constructor.ConstructorError(
                    None, None, problem, node.start_mark
                ) from None

    class _Loader(_StrictConstructor, safe_loader):  # type: ignore[misc]
        """The safe loader (libyaml's parser when PyYAML has it) with :class:`_StrictConstructor`."""

    return SimpleNamespace(
        yaml=yaml, safe_loader=safe_loader, Loader=_Loader, DuplicateKey=_DuplicateKey
    )


def yaml_bound(text: str) -> int:
    """An upper bound on the nesting depth of a YAML text, from its characters alone: block
    collections nest by strictly deeper columns (an indentless list in a mapping aside), so at
    most 2 per column that can start one; each flow collection needs a '[' or '{' of its own."""
    widest = max((len(m.group()) for m in _LINE_PREFIX.finditer(text)), default=0)
    return 2 * (widest + 1) + text.count("[") + text.count("{")


def check_yaml_structure(text: str, shown: str) -> None:
    """Refuse, before PyYAML builds anything, a YAML text nested deeper than
    :data:`MAX_YAML_DEPTH` or whose aliases expand past :data:`MAX_YAML_NODES` values.

    Reads the event stream (PyYAML's parser keeps an explicit stack, it does not recurse) and
    stops at the first excess; texts that :func:`yaml_bound` proves shallow and that have no
    alias skip it.
    """
    if yaml_bound(text) <= MAX_YAML_DEPTH and not _ALIAS.search(text):
        return
    yaml = _yaml().yaml
    # per open collection: [anchor, values before it, its depth, deepest depth within]
    stack: list[list[Any]] = []
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, depth of the subtree)
    nodes = 0
    for event in _events(text, shown):
        depth = len(stack)
        if isinstance(event, yaml.CollectionStartEvent):
            nodes += 1
            stack.append([event.anchor, nodes - 1, depth + 1, depth + 1])
            reached = depth + 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, before, level, deepest = stack.pop()
            if stack:
                stack[-1][3] = max(stack[-1][3], deepest)
            if anchor is not None:
                anchors[anchor] = (nodes - before, deepest - level + 1)
            continue
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor is not None:
                anchors[event.anchor] = (1, 0)
            continue
        elif isinstance(event, yaml.AliasEvent):
            count, below = anchors.get(event.anchor or "", (1, 0))
            nodes += count
            reached = depth + below
            if stack:
                stack[-1][3] = max(stack[-1][3], reached)
        else:
            continue
        mark = event.start_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark else shown
        if reached > MAX_YAML_DEPTH:
            raise _too_deep(where)
        if nodes > MAX_YAML_NODES:
            raise CatalogError(
                where,
                "",
                f"YAML aliases expand to more than {MAX_YAML_NODES:,} values; write the values"
                " out instead of repeating aliases",
            )


def _too_deep(where: str) -> CatalogError:
    return CatalogError(
        where,
        "",
        f"nested deeper than {MAX_YAML_DEPTH} levels of mappings and lists"
        " (a catalog or scenario file needs fewer than 10)",
    )


def _events(text: str, shown: str) -> Iterator[yaml.Event]:
    """PyYAML's parse events; libyaml's own nesting limit reads as ours."""
    parts = _yaml()
    yaml = parts.yaml
    try:
        yield from yaml.parse(text, Loader=parts.safe_loader)
    except yaml.MarkedYAMLError as err:
        if "nesting depth" not in str(err.problem):
            raise
        mark = err.problem_mark
        raise _too_deep(f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark else shown) from None


def read_yaml(path: Path) -> dict[str, Any]:
    """Read one YAML mapping with the safe loader (libyaml's when PyYAML has it: ~10× faster,
    which matters because every command loads the whole catalog); every failure is a located
    CatalogError."""
    shown, text = read_text(path, "a YAML file")
    return parse_yaml(text, shown)


def parse_yaml(text: str, shown: str) -> dict[str, Any]:
    """The YAML mapping in ``text`` (read from ``shown``), checked as the module says."""
    parts = _yaml()
    yaml = parts.yaml
    try:
        check_yaml_structure(text, shown)
        data = yaml.load(text, Loader=parts.Loader)
    except parts.DuplicateKey as err:
        where = f"{shown}:{err.mark.line + 1}:{err.mark.column + 1}"
        raise CatalogError(
            where,
            clip(err.key) if isinstance(err.key, str) else brief(err.key),
            f"duplicate key (first stated on line {err.first.line + 1}); state each key once",
        ) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark else shown
        problem = clip((err.problem or "invalid YAML").strip())
        if isinstance(err, yaml.constructor.ConstructorError):  # well-formed, but not data
            raise CatalogError(where, "", f"YAML error: {problem}") from None
        raise CatalogError(where, "", f"YAML syntax error: {problem}") from None
    except yaml.YAMLError as err:
        raise CatalogError(shown, "", f"YAML error: {clip(str(err))}") from None
    except RecursionError:  # only without libyaml, below MAX_YAML_DEPTH on a small stack
        raise CatalogError(shown, "", "nested too deeply to read") from None
    if data is None:
        raise CatalogError(shown, "", "is empty, expected a YAML mapping of fields")
    if not isinstance(data, dict):
        raise CatalogError(shown, "", f"expected a YAML mapping of fields, got a {_kind(data)}")
    return data


def _kind(value: object) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


_FIELD_PREFIX = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\[\]]*): (.*)$", re.S)


def _field_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + clip(str(part), SHOWN_CHARS)
    return out


def format_validation_error(err: ValidationError, model: type[Any]) -> tuple[str, str]:
    """The first error of a pydantic ValidationError as (field path, problem); ``model`` is the
    spec class (or pydantic model) that raised it.

    Unknown keys come first: a misspelt key also makes its real name "missing", and the
    did-you-mean hint is the useful message.
    """
    errors = sorted(err.errors(), key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    if first["type"] == "literal_error":  # `auto | [1, 2]`: the list branch says what is wrong
        first = next(
            (e for e in errors if e["loc"][:1] == first["loc"][:1] and e["type"] == "value_error"),
            first,
        )
    loc = [p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    # Drop union branch tags that pydantic puts in loc (e.g. 'list[...]', "literal['auto']").
    loc = [p for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("literal")))]
    path = _field_path(loc)
    kind = first["type"]
    msg = str(first["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    match = _FIELD_PREFIX.match(msg)
    if match:
        path = f"{path}.{match.group(1)}" if path else match.group(1)
        msg = match.group(2)
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        guess = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        msg = "unknown key" + (f" (did you mean '{guess[0]}'?)" if guess else "")
        msg += f"; allowed: {', '.join(allowed)}" if not guess else ""
    elif kind == "missing":
        msg = "required field is missing"
    elif kind == "string_pattern_mismatch":
        pattern = str((first.get("ctx") or {}).get("pattern", ""))
        hint = _PATTERN_HINTS.get(pattern, f"must match {pattern}")
        msg = f"{hint} (got {brief(first.get('input'))})"
    elif kind != "value_error":
        # pydantic's own wording ("Input should be greater than 0"): lower-case, show the value
        msg = f"{msg[0].lower()}{msg[1:]} (got {brief(first.get('input'))})"
    msg = clip(msg, 4 * SHOWN_CHARS)  # a validator's message may quote a long value
    more = len(err.errors()) - 1
    if more:
        msg += f" (+{more} more error{'s' if more > 1 else ''})"
    return path, msg


_PATTERN_HINTS = {
    "^[a-z0-9][a-z0-9._-]*$": "must be lowercase letters, digits, '.', '_' or '-',"
    " starting with a letter or digit",
}


def _allowed_keys(model: type[Any], loc: Sequence[int | str]) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", {})
        info = next((f for n, f in fields.items() if part in (n, f.alias)), None)
        if info is None:
            return []
        current = _model_in(info.annotation)
    fields = getattr(current, "model_fields", {})
    return sorted(f.alias or n for n, f in fields.items())


def _model_in(annotation: Any) -> Any:
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def parse_spec(
    model: type[S], data: dict[str, Any], shown: str, context: dict[str, Any] | None = None
) -> S:
    """Validate a mapping against a spec model, raising a located CatalogError; ``context``
    goes to the model's validators (e.g. ``{"traffic": False}`` for a scenario without rates).

    A mapping validated before (the same JSON, the same context, the same code) is rebuilt from
    the plain data kept in the cache (:class:`~inferencesize.catalog_cache.Memo`): a bare
    ``infersize plan`` resolves its scenario without pydantic."""
    memo = Memo(_code())
    key = Memo.key(f"{model.__module__}:{model.__qualname__}", data, context)
    found = memo.get(key) if key is not None else None
    if found is not None:
        try:
            cached: S = spec_from_data(found, model)
            return cached
        except (ValueError, TypeError, RecursionError):  # damaged: validate again
            pass
    spec = _validate(model, data, shown, context)
    if key is not None:
        memo.put(key, spec_to_data(spec))
    return spec


def _validate(
    model: type[S], data: dict[str, Any], shown: str, context: dict[str, Any] | None = None
) -> S:
    from pydantic import ValidationError

    try:
        return model.model_validate(data, context=context)
    except ValidationError as err:
        path, msg = format_validation_error(err, model)
        raise CatalogError(shown, path, msg) from None


#: Source files whose code decides what a file or mapping validates to: the schemas, the
#: quantity parser and this loader (relative to the package), and the libraries that parse
#: and validate.
_CODE = ("specs", "units.py", "vocabulary.py", "catalog.py")
_LIBRARIES = ("pydantic", "pydantic_core", "yaml")


@functools.cache
def _code() -> str:
    """What the cache keys its entries on besides the data: the size and modification time of
    :data:`_CODE` and of the libraries' package files (an edit or an upgrade makes the cached
    entries stale)."""
    import importlib.util

    here = Path(__file__).parent
    paths: list[str] = []
    for name in _CODE:
        path = here / name
        if path.suffix == ".py":
            paths.append(str(path))
        else:
            with contextlib.suppress(OSError):
                paths += sorted(str(p) for p in path.iterdir() if p.suffix == ".py")
    for library in _LIBRARIES:
        try:
            spec = importlib.util.find_spec(library)
        except (ImportError, ValueError):
            spec = None
        paths.append(str(spec.origin) if spec is not None and spec.origin else library)
    return code_stamp(paths)


def load_file(path: Path, model: type[S]) -> S:
    return parse_spec(model, read_yaml(path), display_path(path))


def suggest(name: str, choices: Iterable[str] | dict[str, str], what: str) -> UnknownIdError:
    """An UnknownIdError naming the closest ids.

    ``choices`` is a list of ids, or a mapping of searchable names (ids and aliases) to ids.
    """
    names = dict(choices) if isinstance(choices, dict) else {c: c for c in choices}
    by_lower = {k.lower(): v for k, v in names.items()}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=6, cutoff=0.5)
    ids = list(dict.fromkeys(by_lower[c] for c in close))[:3]
    pool = sorted(set(names.values()))
    hint = f"; did you mean {', '.join(ids)}?" if ids else f"; known: {', '.join(pool[:12])}"
    if not ids and len(pool) > 12:
        hint += ", … (infersize catalog list)"
    return UnknownIdError(f"unknown {what} '{clip(name, SHOWN_CHARS)}'{hint}")


@dataclass
class Catalog:
    """All catalog entries by id, with the file each came from and alias lookup."""

    gpus: dict[str, GpuSpec] = field(default_factory=dict)
    systems: dict[str, SystemSpec] = field(default_factory=dict)
    models: dict[str, ModelSpec] = field(default_factory=dict)
    scenarios: dict[str, ScenarioSpec] = field(default_factory=dict)
    efficiency: dict[str, EfficiencySet] = field(default_factory=dict)
    files: dict[tuple[str, str], str] = field(default_factory=dict)
    roots: list[Path] = field(default_factory=list)

    def entries(self, kind: str) -> dict[str, Any]:
        table: dict[str, Any] = getattr(self, kind)
        return table

    def _find(self, kind: str, name: str) -> Any:
        """The entry by id or alias, or None (no suggestions computed)."""
        table = self.entries(kind)
        if name in table:
            return table[name]
        wanted = _norm(name)
        for key, spec in table.items():
            if _norm(key) == wanted or any(
                _norm(a) == wanted for a in getattr(spec, "aliases", [])
            ):
                return spec
        return None

    def _lookup(self, kind: str, name: str, what: str) -> Any:
        found = self._find(kind, name)
        if found is None:
            raise suggest(name, _names(self.entries(kind)), what)
        return found

    def kernel_tier(self, *sets: EfficiencySet) -> KernelTier | None:
        """The shipped kernel tier (``data/kernels/fit.json``), with the entries of each of
        your catalog directories' ``kernels/fit.json`` (``infersize calibrate --kernels``)
        added and preferred, and this catalog's architectures: what an efficiency set that
        names ``kernels`` predicts with; None when none of ``sets`` names it (no file read)."""
        if not any(s.kernels for s in sets):
            return None
        fit = load_kernel_fit()
        for root in self.roots:  # a catalog of your own: its kernels/fit.json adds and overrides
            path = root / "kernels" / "fit.json"
            if root != builtin_root() and path.is_file():
                fit = merged_fit(fit, read_kernel_fit(path))
        return kernel_tier(fit, {g.id: g.architecture for g in self.gpus.values()})

    def gpu(self, name: str) -> GpuSpec:
        spec: GpuSpec = self._lookup("gpus", name, "GPU")
        return spec

    def system(self, name: str) -> SystemSpec:
        spec: SystemSpec = self._lookup("systems", name, "system")
        return spec

    def model(self, name: str) -> ModelSpec:
        spec: ModelSpec = self._lookup("models", name, "model")
        return spec

    def scenario(self, name: str) -> ScenarioSpec:
        spec: ScenarioSpec = self._lookup("scenarios", name, "scenario")
        return spec

    def efficiency_set(self, name: str | None = None) -> EfficiencySet:
        """An efficiency set by id, or the default one."""
        if name is not None:
            spec: EfficiencySet = self._lookup("efficiency", name, "efficiency set")
            return spec
        defaults = [s for s in self.efficiency.values() if s.default]
        if defaults:
            return defaults[-1]
        if self.efficiency:
            return next(iter(self.efficiency.values()))
        raise UnknownIdError("no efficiency set in the catalog (hardware/efficiency/*.yaml)")

    def efficiency_for(self, engine: str, version: str = "") -> EfficiencySet:
        """The set of a measured engine ('TensorRT-LLM', '0.19'), else the default set
        (``specs.efficiency.engine_set`` says how engines are matched)."""
        return engine_set(self.efficiency.values(), engine, version) or self.efficiency_set()

    def hardware(self, name: str) -> tuple[GpuSpec, SystemSpec | None]:
        """A GPU id or a system id -> (GPU, system or None)."""
        system: SystemSpec | None = self._find("systems", name)
        if system is not None:
            return self.gpu(system.gpu), system
        gpu: GpuSpec | None = self._find("gpus", name)
        if gpu is not None:
            return gpu, None
        names = {**_names(self.gpus), **_names(self.systems)}
        raise suggest(name, names, "hardware (GPU or system)")

    def file_of(self, kind: str, ident: str) -> str:
        return self.files.get((kind, ident), f"<{kind}:{ident}>")


def _names(table: dict[str, Any]) -> dict[str, str]:
    """Searchable names (ids and aliases) -> id."""
    names = {ident: ident for ident in table}
    for ident, spec in table.items():
        names.update({alias: ident for alias in getattr(spec, "aliases", [])})
    return names


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def catalog_roots(extra: Sequence[Path] = ()) -> list[Path]:
    """The built-in root, then ``INFERSIZE_CATALOG`` roots, then ``--catalog`` roots."""
    roots = [builtin_root()]
    env = os.environ.get(ENV_CATALOG, "")
    roots += [Path(p) for p in env.split(os.pathsep) if p]
    roots += list(extra)
    return roots


def load_catalog(extra: Sequence[Path] = (), *, include_builtin: bool = True) -> Catalog:
    """Load every catalog root in order; later roots override earlier ones by id."""
    roots = catalog_roots(extra) if include_builtin else list(extra)
    catalog = Catalog(roots=roots)
    for index, root in enumerate(roots):
        if not root.is_dir():
            where = "--catalog" if index >= len(roots) - len(extra) else ENV_CATALOG
            raise CatalogError(str(root), "", f"catalog directory not found (from {where})")
        _load_root(catalog, root)
    _check_references(catalog)
    return catalog


def _load_root(catalog: Catalog, root: Path) -> None:
    for kind, (sub, model) in KINDS.items():
        folder = root / sub
        if not folder.is_dir():
            continue
        seen: dict[str, str] = {}
        cache = FileCache(folder, _code())
        for path in _yaml_files(folder):
            shown = display_path(path)
            spec = _load_cached(cache, path, model, shown)
            ident = getattr(spec, "id", None) or path.stem
            if ident in seen:
                raise CatalogError(shown, "id", f"duplicate id '{ident}' (also in {seen[ident]})")
            seen[ident] = shown
            if kind == "scenarios" and getattr(spec, "id", None) is None:
                spec = spec.model_copy(update={"id": ident})
            catalog.entries(kind)[ident] = spec
            catalog.files[(kind, ident)] = shown
        cache.save()


def _yaml_files(folder: Path) -> list[Path]:
    """The files of ``folder`` named ``*.y*ml``, in name order (``sorted(folder.glob(...))``
    without pathlib's per-entry cost); none when the folder cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if fnmatch.fnmatchcase(e.name, "*.y*ml")]
    except OSError:
        return []
    return [folder / name for name in sorted(names)]


def _load_cached(cache: FileCache, path: Path, model: type[S], shown: str) -> S:
    """The spec of one catalog file: from the cache while the file is unchanged, else read
    and validated (and kept)."""
    stamp = file_stamp(path)  # before reading: an edit meanwhile is never cached as this
    found = cache.get(path, stamp)
    if found is not None:
        try:
            cached: S = spec_from_data(found, model)
            return cached
        except (ValueError, TypeError, RecursionError):  # damaged: read it again
            pass
    spec = _validate(model, read_yaml(path), shown)
    cache.put(path, stamp, spec_to_data(spec))
    return spec


def _check_references(catalog: Catalog) -> None:
    for ident, system in catalog.systems.items():
        if system.gpu not in catalog.gpus:
            err = suggest(system.gpu, _names(catalog.gpus), "GPU")
            raise CatalogError(catalog.file_of("systems", ident), "gpu", str(err))
    for ident, gpu in catalog.gpus.items():
        like = gpu.efficiency_like
        if like is None or (like in catalog.gpus and like != ident):
            continue
        why = (
            "names the GPU itself"
            if like == ident
            else str(suggest(like, _names(catalog.gpus), "GPU"))
        )
        raise CatalogError(catalog.file_of("gpus", ident), "efficiency_like", why)


#: A hardware option as the catalog finds it: a GPU, alone or in a system.
Hardware = tuple[GpuSpec, SystemSpec | None]


class Found(NamedTuple):
    """What :func:`check_scenario` looked up, so that nothing looks it up again: the model and
    the hardware options (each id once, in the order stated) of a single-model scenario, or
    of each pipeline stage (``stages``; then ``model`` is the first stage's, ``hardware``
    empty)."""

    model: ModelSpec
    hardware: list[Hardware]
    stages: list[tuple[ModelSpec, list[Hardware]]]


def check_scenario(
    catalog: Catalog, scenario: ScenarioSpec, shown: str, model: ModelSpec | None = None
) -> Found:
    """Cross-field checks that need the catalog; returns what they looked up (:class:`Found`).
    ``model``: the scenario's model where it was looked up already (the first check of a
    question's fields)."""
    if scenario.engine is not None:
        try:  # a set id or an engine name[@version], as --engine takes it
            engine_efficiency(catalog.efficiency.values(), scenario.engine)
        except UnknownIdError as err:
            raise CatalogError(shown, "engine", str(err)) from None
    if scenario.pipeline is not None:
        stages = _check_pipeline(catalog, scenario, shown)
        return Found(stages[0][0], [], stages)
    assert scenario.model is not None  # the schema requires it without a pipeline
    if model is None or model.id != scenario.model:
        try:
            model = catalog.model(scenario.model)
        except UnknownIdError as err:
            raise CatalogError(shown, "model", str(err)) from None
    hardware = _hardware(catalog, scenario.hardware, shown, "hardware")
    total = scenario.input_tokens + scenario.output_tokens
    if total > model.max_context:
        raise CatalogError(
            shown,
            "isl",
            f"ISL + OSL = {scenario.input_tokens} + {scenario.output_tokens} = {total} tokens "
            f"exceeds {model.id}'s context window of {model.max_context}",
        )
    return Found(model, hardware, [])


def _hardware(
    catalog: Catalog,
    names: list[str],
    shown: str,
    field: str,
    seen: dict[str, Hardware] | None = None,
) -> list[Hardware]:
    """The hardware options ``names`` (the scenario's ``field``), each once, in the order first
    stated; each id looked up once (``seen``: those looked up already, updated)."""
    seen = {} if seen is None else seen
    for i, name in enumerate(names):
        try:
            if name not in seen:
                seen[name] = catalog.hardware(name)
        except UnknownIdError as err:
            raise CatalogError(shown, f"{field}[{i}]", str(err)) from None
    return [seen[name] for name in dict.fromkeys(names)]


def _check_pipeline(
    catalog: Catalog, scenario: ScenarioSpec, shown: str
) -> list[tuple[ModelSpec, list[Hardware]]]:
    """Every stage's model and hardware exist and its ISL + OSL fits the model's window;
    returns each stage's model and hardware options (its own, else the scenario's)."""
    stages: list[tuple[ModelSpec, list[Hardware]]] = []
    models: dict[str, ModelSpec] = {}  # each id looked up once, whichever stages name it
    hardware_found: dict[str, Hardware] = {}
    for i, stage in enumerate(scenario.pipeline or []):
        where = f"pipeline[{i}]"
        try:
            if stage.model not in models:
                models[stage.model] = catalog.model(stage.model)
            model = models[stage.model]
        except UnknownIdError as err:
            raise CatalogError(shown, f"{where}.model", str(err)) from None
        if stage.hardware is not None:
            hardware = _hardware(
                catalog, stage.hardware, shown, f"{where}.hardware", hardware_found
            )
        else:
            hardware = _hardware(catalog, scenario.hardware, shown, "hardware", hardware_found)
        if stage.isl + stage.osl > model.max_context:
            raise CatalogError(
                shown,
                f"{where}.isl",
                f"ISL + OSL = {stage.isl} + {stage.osl} = {stage.isl + stage.osl} tokens "
                f"exceeds {model.id}'s context window of {model.max_context}",
            )
        stages.append((model, hardware))
    return stages
