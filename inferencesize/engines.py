"""What a user names with ``--engine``: an engine (and version) -> the efficiency set of it.

``--engine`` takes an efficiency set id (``nim-2024``, ``trtllm-0.17``) or an engine name with
an optional version after ``@``: ``vllm``, ``sglang``, ``trtllm@0.17``, ``nim@1.8``. Each set
states the releases it describes (``releases``, else the versioned entries of ``engines``;
``specs.efficiency.releases``): ``vLLM 0.12-0.19``, ``TensorRT-LLM 0.17``, ``NIM 1.0``.

- A name with a version picks the set whose releases cover that minor version (two that do:
  the one whose own engine it is, then the newer). A version no set covers is an error that
  lists the releases there are: it is never served silently by another release's set.
- A name without a version picks, among the sets whose own engine it is (their first
  release), the newest; ``nim`` is thus ``nim-2024``, the NIM set, and not ``trtllm-0.17``,
  which predicts NIM 1.8 as well but is a TensorRT-LLM set.
- The names listed in messages are the names that resolve (:func:`names`).

Without ``--engine`` (nor ``--calibration``, nor a scenario's ``engine:``) the catalog's
default set is used, except on a GPU × precision it is not calibrated on where another set is
(:func:`auto_sets`, ``deployment.choose_efficiency``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from inferencesize.errors import UnknownIdError
from inferencesize.specs import EfficiencySet
from inferencesize.specs.efficiency import Release, Version, releases, static_batching

#: The names a user may type -> the engine's name as sets and measurements label it.
ENGINE_NAMES: dict[str, str] = {
    "trtllm": "TensorRT-LLM",
    "tensorrt-llm": "TensorRT-LLM",
    "trt-llm": "TensorRT-LLM",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "nim": "NIM",
}
#: The name shown for each engine in lists (the others are accepted as well).
_SHOWN = {"TensorRT-LLM": "trtllm"}

#: A version after '@': whole numbers separated by dots ('0.17', '1.8', '0.6.3', '2').
VERSION = re.compile(r"\d+(?:\.\d+)*")
#: What ``--engine`` takes, for messages.
FORMS = "NAME, NAME@VERSION (numbers separated by dots, e.g. vllm@0.6.3) or an efficiency set id"


def _claims(pool: Iterable[EfficiencySet]) -> dict[str, str]:
    """Engine name (lower case) -> as the sets write it, over every release of ``pool``."""
    return {r.name.lower(): r.name for s in pool for r in releases(s)}


def _typed(name: str) -> str:
    """What a user types for an engine the sets write ``name`` ('TensorRT-LLM' -> 'trtllm')."""
    return _SHOWN.get(name, name.lower())


def forms(s: EfficiencySet) -> str | None:
    """How ``--engine`` names this set's releases ('trtllm@0.17, nim@1.8', 'vllm@0.12 to
    0.19': any version from 0.12 to 0.19); None: only by its id."""
    found = [
        f"{_typed(r.name)}@{r.text().replace('-', ' to ')}"
        for r in releases(s)
        if " " not in r.name
    ]
    return ", ".join(found) or None


def names(pool: Iterable[EfficiencySet]) -> list[str]:
    """The engine names ``--engine`` resolves with these sets (an engine some set describes):
    ``nim``, ``sglang``, ``trtllm``, ``vllm`` with the shipped catalog."""
    claimed = _claims(pool)
    out = {_typed(name) for name in claimed.values()}
    return sorted(n for n in out if " " not in n)


def parse(text: str, pool: Iterable[EfficiencySet] = ()) -> tuple[str, str] | None:
    """'trtllm@0.17' -> ('TensorRT-LLM', '0.17'); 'vllm' -> ('vLLM', ''); None: not an engine
    name (an alias, or an engine a set of ``pool`` describes). UnknownIdError for a name with
    a version that is not numbers separated by dots, or with more than one '@' ('vllm@abc',
    'vllm@1.0@2.0', 'vllm@')."""
    name, at, version = text.strip().partition("@")
    key = name.strip().lower()
    engine = ENGINE_NAMES.get(key) or _claims(pool).get(key)
    if engine is None:
        return None
    version = version.strip()
    if at and not VERSION.fullmatch(version):
        raise UnknownIdError(f"{text!r}: {_bad_version(version)}; give {FORMS}")
    return engine, version


def _bad_version(version: str) -> str:
    if "@" in version:
        return "at most one '@'"
    if not version:
        return "no version after '@'"
    return f"version {version!r} is not numbers separated by dots"


def _minor(version: str) -> Version:
    """'0.6.3' -> (0, 6); '2' -> (2, 0)."""
    parts = [int(p) for p in version.split(".")]
    return (parts[0], parts[1] if len(parts) > 1 else 0)


def _of(s: EfficiencySet, engine: str) -> list[Release]:
    return [r for r in releases(s) if r.name.lower() == engine.lower()]


def _own(s: EfficiencySet, engine: str) -> bool:
    """Whether ``engine`` is the set's own engine (its first release), not one it also
    predicts (``engines_source``)."""
    found = releases(s)
    return bool(found) and found[0].name.lower() == engine.lower()


def _rank(s: EfficiencySet, engine: str) -> tuple[bool, Version]:
    """Own engine first, then the newest release of it."""
    return (_own(s, engine), max(r.last for r in _of(s, engine)))


def covered(pool: Iterable[EfficiencySet], engine: str) -> str:
    """The releases of ``engine`` the sets describe, for messages:
    '0.14 (trtllm-0.14), 0.17 (trtllm-0.17), 1.0-1.2 (trtllm-1.x)'."""
    found = sorted((r.first, r.text(), s.id) for s in pool for r in _of(s, engine))
    return ", ".join(f"{text} ({ident})" for _, text, ident in found)


def engine_efficiency(sets: Iterable[EfficiencySet], text: str) -> EfficiencySet:
    """The efficiency set ``--engine text`` names (module docstring); UnknownIdError naming
    what exists when nothing matches."""
    pool = list(sets)
    by_id = {s.id: s for s in pool}
    if text in by_id:
        return by_id[text]
    parsed = parse(text, pool)
    ids = ", ".join(sorted(by_id))
    if parsed is None:
        listed = names(pool)
        what = f"one of {', '.join(listed)} (optionally @version) or " if listed else ""
        raise UnknownIdError(
            f"unknown engine {text!r}: name {what}an efficiency set id ({ids or 'none loaded'})"
        )
    engine, version = parsed
    mine = [s for s in pool if _of(s, engine)]
    if not mine:
        raise UnknownIdError(
            f"no efficiency set describes {engine} yet: fit one to your measurements with"
            f" `infersize calibrate`, or name a set ({ids})"
        )
    if version:
        wanted = _minor(version)
        mine = [s for s in mine if any(r.covers(wanted) for r in _of(s, engine))]
        if not mine:
            raise UnknownIdError(
                f"{text!r}: no efficiency set describes {engine} {version}; the sets describe"
                f" {engine} {covered(pool, engine)}: name one of those versions or a set id,"
                " or fit one to your measurements with `infersize calibrate`"
            )
    return max(mine, key=lambda s: _rank(s, engine))


def auto_sets(pool: Iterable[EfficiencySet], default: EfficiencySet) -> tuple[EfficiencySet, ...]:
    """The sets a GPU × precision the default set is not calibrated on may take when no
    engine is named: every other in-flight batching set, by id (a static-batching set
    answers another question: ``deployment.choose_efficiency`` picks among these)."""
    return tuple(
        sorted((s for s in pool if s.id != default.id and not static_batching(s)), key=_id)
    )


def _id(s: EfficiencySet) -> str:
    return s.id
