"""What a user names with ``--engine``: an engine (and version) -> the efficiency set of it.

``--engine`` takes an efficiency set id (``nim-2024``, ``trtllm-0.17``: the old ids keep
working) or an engine name with an optional version after ``@``: ``vllm``, ``sglang``,
``trtllm@0.17``, ``nim@1.8``. A name picks the sets that list that engine (their
``engines``); a version picks the one whose version of it is nearest (a tie goes to the newer,
``specs.efficiency.engine_set``); no version picks the newest. Without ``--engine`` the
catalog's default set is used (``Catalog.efficiency_set``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from inferencesize.errors import UnknownIdError
from inferencesize.specs import EfficiencySet
from inferencesize.specs.efficiency import claimed_version, engine_set, names_engine

#: The names a user may type -> the engine's name as sets and measurements label it.
ENGINE_NAMES: dict[str, str] = {
    "trtllm": "TensorRT-LLM",
    "tensorrt-llm": "TensorRT-LLM",
    "trt-llm": "TensorRT-LLM",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "nim": "NIM",
    "atom": "ATOM",
}


#: A version after '@': whole numbers separated by dots ('0.17', '1.8', '0.6.3', '2').
VERSION = re.compile(r"\d+(?:\.\d+)*")
#: What ``--engine`` takes, for messages.
FORMS = "NAME, NAME@VERSION (numbers separated by dots, e.g. vllm@0.6.3) or an efficiency set id"


def parse(text: str) -> tuple[str, str] | None:
    """'trtllm@0.17' -> ('TensorRT-LLM', '0.17'); 'vllm' -> ('vLLM', ''); None: not a name.
    UnknownIdError for a name with a version that is not numbers separated by dots, or with
    more than one '@' ('vllm@abc', 'vllm@1.0@2.0', 'vllm@')."""
    name, at, version = text.strip().partition("@")
    engine = ENGINE_NAMES.get(name.strip().lower())
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


def _newest(sets: list[EfficiencySet], engine: str) -> EfficiencySet:
    """The set claiming the highest version of ``engine`` (unversioned claims count as 0.0)."""
    return max(sets, key=lambda s: claimed_version(s, engine) or (0, 0))


def engine_efficiency(sets: Iterable[EfficiencySet], text: str) -> EfficiencySet:
    """The efficiency set ``--engine text`` names (module docstring); UnknownIdError naming
    what exists when nothing matches."""
    pool = list(sets)
    by_id = {s.id: s for s in pool}
    if text in by_id:
        return by_id[text]
    parsed = parse(text)
    if parsed is None:
        names = ", ".join(sorted({*ENGINE_NAMES} - {"tensorrt-llm", "trt-llm"}))
        raise UnknownIdError(
            f"unknown engine {text!r}: name one of {names} (optionally @version) or an"
            f" efficiency set id ({', '.join(sorted(by_id))})"
        )
    engine, version = parsed
    mine = [s for s in pool if claimed_version(s, engine) or names_engine(s, engine)]
    if not mine:
        raise UnknownIdError(
            f"no efficiency set describes {engine} yet: fit one to your measurements with"
            f" `infersize calibrate`, or name a set ({', '.join(sorted(by_id))})"
        )
    if version:
        found = engine_set(mine, engine, version)
        if found is not None:
            return found
    return _newest(mine, engine)
