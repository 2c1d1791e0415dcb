"""Efficiency sets: fitted fractions of peak and overheads for the performance model.

An efficiency set belongs to an engine generation (say which). Entries are per GPU and
precision (or per GPU for every precision); what no entry states comes from ``defaults``.

:data:`PARAMETERS` is the one table of the parameters: name, physical meaning, origin, the
range a catalog may state and the bounds the fit (``calibration``) may choose. The fields of
:class:`EfficiencyValues`, ``calibration.GLOBAL_PARAMS`` / ``PER_GPU_PARAMS`` and
:data:`OPTIONAL_PARAMS` are read from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from inferencesize.specs.common import Field, Spec, model_validator
from inferencesize.units import COMPUTE_PRECISION

if TYPE_CHECKING:  # annotation types: read by the schema (specs.schema), never imported here
    from inferencesize.specs.types import Float, NonNegativeInt, Source

Origin = Literal["hardware", "engine", "benchmark"]
_FRACTION: dict[str, float] = {"gt": 0.0, "le": 1.0}
_SECONDS: dict[str, float] = {"ge": 0.0, "le": 1.0}


@dataclass(frozen=True)
class Parameter:
    """One efficiency parameter of the performance model."""

    name: str
    meaning: str  # what it is, physically (the catalog field's description)
    origin: Origin  # the GPU architecture, the engine (and version), or the benchmark's clients
    valid: dict[str, float] = field(default_factory=dict)  # constraints on a stated value
    fit: tuple[float, float] | None = None  # bounds of the joint fit; None: stated, not fitted
    per_gpu: bool = False  # fitted per GPU × precision (else one value for the whole set)
    optional: bool = False  # a set's defaults may leave it out (the model's neutral default)


#: The parameters in fit order (per GPU first, then the set-wide ones).
PARAMETERS: tuple[Parameter, ...] = (
    Parameter(
        "compute",
        "large-GEMM share of dense peak (fitted within 0.25-0.85: cuBLAS / CUTLASS large GEMMs"
        " reach 60-80 % of it; outside, a fit is compensating a missing term, not measuring"
        " GEMMs)",
        "hardware",
        _FRACTION,
        (0.25, 0.85),
        per_gpu=True,
    ),
    Parameter(
        "memory",
        "share of HBM bandwidth (fitted within 0.2-0.95: streaming kernels reach about 90 % of"
        " the datasheet figure, never all of it)",
        "hardware",
        _FRACTION,
        (0.2, 0.95),
        per_gpu=True,
    ),
    Parameter(
        "attention", "prefill attention share of 16-bit peak", "hardware", _FRACTION, (0.1, 1.0)
    ),
    Parameter(
        "gemm_m_half",
        "GEMM rows (tokens) at half of the large-GEMM efficiency",
        "hardware",
        {"ge": 0.0},
        (0.0, 2048.0),
    ),
    Parameter(
        "step_overhead_s",
        "fixed cost of every forward step (scheduling, kernel launches)",
        "engine",
        _SECONDS,
        (0.0, 0.05),
    ),
    Parameter(
        "kv_items_half",
        "decode attention streams the KV cache at memory · n / (n + this) for n"
        " (sequence, KV head) pairs per GPU; optional, default 0 (always at memory)",
        "engine",
        {"ge": 0.0},
        (0.0, 2048.0),
        optional=True,
    ),
    Parameter(
        "layer_overhead_s",
        "cost per layer of every step (kernel launches and syncs not hidden)",
        "engine",
        _SECONDS,
        (0.0, 2e-4),
    ),
    Parameter(
        "comm_latency_s",
        "latency (alpha) of one collective between two GPUs on NVLink (PCIe: twice); an"
        " all-reduce over n GPUs pays it log2(n) times. Fitted within 1-20 µs: small-message"
        " all-reduces on NVLink take ~5-60 µs at 8 GPUs (engines' one-shot kernels to NCCL's"
        " ring with framework overhead)",
        "hardware",
        _SECONDS,
        (1e-6, 2e-5),
    ),
    Parameter("comm", "share of link bandwidth", "hardware", _FRACTION, (0.2, 1.0)),
    Parameter(
        "prefill_sync",
        "share of arrivals in step with a cohort (closed-loop clients of one"
        " length), which is prefilled in two batched steps; the rest arrive out of step and"
        " wait for the step in progress and the prompts sharing theirs. Above 1 it also"
        " scales the cohort's wait (its prompt steps carry more than the bare prefill)",
        "benchmark",
        {"ge": 0.0, "le": 2.0},
        (0.0, 2.0),
    ),
    Parameter(
        "cohort_tokens",
        "prompt tokens over which a cohort thins out: B − 1 other clients come"
        " back as (B − 1) / (1 + (B − 1) ISL / cohort_tokens) in step",
        "benchmark",
        {"gt": 0.0},
        (1024.0, 1e6),
    ),
    Parameter(
        "arrival_spread_s",
        "spread of a cohort's re-sends: a share t / (t + this) of it is in step"
        " with a lone prompt step of t seconds; optional, default 0 (all in step)",
        "benchmark",
        _SECONDS,
        (0.0, 1.0),
        optional=True,
    ),
    Parameter(
        "seq_overhead_s",
        "host-side cost per sequence in a step (sampling, detokenising,"
        " streaming), for every decode and prompt it holds; optional, default 0",
        "engine",
        _SECONDS,
        (0.0, 5e-4),
        optional=True,
    ),
    Parameter(
        "handoff_s",
        "request hand-off of an instance on more than one GPU (the orchestrator"
        " passes the request to the worker ranks and its first token back), added once to"
        " TTFT; optional, default 0",
        "engine",
        _SECONDS,
        (0.0, 0.05),
        optional=True,
    ),
    Parameter(
        "launch_share",
        "share of a measured kernel's fixed cost (its launch) the engine's steps pay: CUDA"
        " graphs replay a step's kernels without the host launching each (1: every call"
        " launched as measured); sets with a kernel tier only; optional, default 1",
        "engine",
        {"gt": 0.0, "le": 1.0},
        (0.02, 1.0),
        optional=True,
    ),
    Parameter(
        "kv_read_min_bytes",
        "decode attention reads the KV cache at no fewer than this many bytes per"
        " element's worth of time (2: an 8-bit cache is dequantised at the 16-bit rate);"
        " optional, default 0 (stored bytes)",
        "engine",
        {"ge": 0.0, "le": 4.0},
        optional=True,
    ),
)
PARAMETER: dict[str, Parameter] = {p.name: p for p in PARAMETERS}

#: Parameters a set's defaults may leave out (the model then uses its neutral default).
OPTIONAL_PARAMS = frozenset(p.name for p in PARAMETERS if p.optional)


def _field(name: str) -> Any:
    """The catalog field of parameter ``name``: optional, its meaning and its valid range."""
    p = PARAMETER[name]
    limit = p.valid.get
    return Field(
        default=None, description=p.meaning, gt=limit("gt"), ge=limit("ge"), le=limit("le")
    )


class EfficiencyValues(Spec):
    compute: Float | None = _field("compute")
    memory: Float | None = _field("memory")
    attention: Float | None = _field("attention")
    comm: Float | None = _field("comm")
    gemm_m_half: Float | None = _field("gemm_m_half")
    step_overhead_s: Float | None = _field("step_overhead_s")
    layer_overhead_s: Float | None = _field("layer_overhead_s")
    comm_latency_s: Float | None = _field("comm_latency_s")
    prefill_sync: Float | None = _field("prefill_sync")
    cohort_tokens: Float | None = _field("cohort_tokens")
    kv_read_min_bytes: Float | None = _field("kv_read_min_bytes")
    kv_items_half: Float | None = _field("kv_items_half")
    arrival_spread_s: Float | None = _field("arrival_spread_s")
    seq_overhead_s: Float | None = _field("seq_overhead_s")
    handoff_s: Float | None = _field("handoff_s")
    launch_share: Float | None = _field("launch_share")


class EfficiencyEntry(EfficiencyValues):
    gpu: str | None = Field(default=None, description="the GPU id (or alias) measured")
    architecture: str | None = Field(
        default=None,
        description="instead of gpu: the values every GPU of this architecture without an entry"
        " of its own takes (the fit writes the lowest of its measured GPUs)",
    )
    precision: str | None = None
    points: NonNegativeInt | None = Field(default=None, description="measurements the fit used")
    source: str | None = None

    @model_validator(mode="after")
    def _one_subject(self) -> EfficiencyEntry:
        if (self.gpu is None) == (self.architecture is None):
            raise ValueError("an entry names either gpu or architecture (exactly one)")
        return self


class EfficiencySet(Spec):
    id: str
    engine: str = Field(description="the serving engine generation these numbers belong to")
    default: bool = Field(default=False, description="used when no --engine/--calibration")
    engines: list[str] = Field(
        default_factory=list,
        description="the engines this set describes (validate picks the set per row): a name"
        " and version ('TensorRT-LLM 0.17') claims that engine's releases nearest this version;"
        " without a version, a case-insensitive substring of the row's engine label",
    )
    engines_source: str | None = Field(
        default=None, description="why the set claims the engines it lists beyond its own"
    )
    releases: list[str] = Field(
        default_factory=list,
        description="the engine releases `--engine NAME@VERSION` resolves to this set: a name"
        " and a minor version ('TensorRT-LLM 0.17': every 0.17.x) or a range of them ('vLLM"
        " 0.12-0.19'); the first is the set's own engine. Empty: the versioned entries of"
        " engines",
    )
    source: Source
    kernels: Literal["TRTLLM", "VLLM", "SGLang"] | None = Field(
        default=None,
        description="the engine whose measured kernels (the kernel tier, data/kernels/fit.json)"
        " carry the hardware: TRTLLM, VLLM or SGLang. The set's GEMMs and tensor-parallel"
        " all-reduces then come from them and it fits only engine terms; None: from its"
        " fitted shares of the datasheet",
    )
    defaults: EfficiencyValues
    entries: list[EfficiencyEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _releases_have_versions(self) -> EfficiencySet:
        for i, text in enumerate(self.releases):
            if release(text) is None:
                raise ValueError(
                    f"releases[{i}]: {text!r} is not an engine name and a version"
                    " ('TensorRT-LLM 0.17') or a range of versions ('vLLM 0.12-0.19')"
                )
        return self

    @model_validator(mode="after")
    def _complete_defaults(self) -> EfficiencySet:
        missing = [
            k
            for k, v in self.defaults.model_dump().items()
            if v is None and k not in OPTIONAL_PARAMS
        ]
        if missing:
            raise ValueError(f"defaults: must set every parameter (missing {', '.join(missing)})")
        return self


#: How far a prediction's efficiencies come from a measurement of it, best first.
Trust = Literal["calibrated", "same-architecture", "datasheet"]
TRUST_MEANING: dict[str, str] = {
    "calibrated": "this GPU × precision was measured with this engine",
    "same-architecture": "fitted on another GPU of the same architecture (or another precision"
    " of this GPU), applied to this GPU's datasheet",
    "datasheet": "no GPU of this architecture measured with this engine: the set's"
    " conservative defaults (the lowest fitted shares) applied to the datasheet",
}


@dataclass(frozen=True)
class Resolution:
    """The parameter values for one GPU × precision, the entry they came from, and its trust."""

    values: dict[str, float]
    origin: str
    trust: Trust


def _apply(values: dict[str, Any], entry: EfficiencyEntry) -> None:
    values.update({k: v for k, v in entry.model_dump().items() if k in values and v is not None})


def _entries_for(
    eset: EfficiencySet, match: Callable[[EfficiencyEntry], bool], precision: str
) -> tuple[list[EfficiencyEntry], EfficiencyEntry | None, bool]:
    """(all-precision entries, the precision's entry or its compute unit's, whether the
    precision itself matched) among the entries ``match`` selects."""
    mine = [e for e in eset.entries if match(e)]
    every = [e for e in mine if e.precision is None]
    own = [e for e in mine if e.precision == precision]
    unit = COMPUTE_PRECISION.get(precision, precision)
    on_unit = [e for e in mine if e.precision == unit]
    found = own or on_unit
    return every, (found[-1] if found else None), bool(own)


def resolve_values(
    eset: EfficiencySet,
    names: set[str],
    gpu_id: str,
    precision: str,
    like: str | None = None,
    architecture: str | None = None,
) -> Resolution:
    """The set's values for a GPU (its ids ``names``) at ``precision``, in this order:

    1. the GPU's own entries (an all-precision entry, then the precision's, else the entry of
       the tensor units it computes on: weight-only int4 on bf16) -> calibrated when the
       precision itself (or every precision) was measured;
    2. its ``efficiency_like`` GPU's entries (same compute die) -> same-architecture;
    3. its architecture's entry -> same-architecture;
    4. the set's defaults -> datasheet (the fit writes the lowest shares it measured there:
       a GPU never measured is never flattered above a measured one).
    """
    values: dict[str, Any] = eset.defaults.model_dump()
    every, chosen, exact = _entries_for(eset, lambda e: e.gpu in names, precision)
    if every or chosen:
        for e in [*every, *([chosen] if chosen else [])]:
            _apply(values, e)
        if chosen is None:
            return Resolution(values, f"{eset.id}: {gpu_id} (all precisions)", "calibrated")
        unit = "" if exact else f" (computes on {chosen.precision} units)"
        trust: Trust = "calibrated" if exact else "same-architecture"
        return Resolution(values, f"{eset.id}: {gpu_id} {chosen.precision}{unit}", trust)
    if like is not None:
        every, chosen, _ = _entries_for(eset, lambda e: e.gpu == like, precision)
        if every or chosen:
            for e in [*every, *([chosen] if chosen else [])]:
                _apply(values, e)
            what = f"{like} {chosen.precision}" if chosen else f"{like} (all precisions)"
            return Resolution(
                values,
                f"{eset.id}: {what} (not calibrated on {gpu_id}; same compute die)",
                "same-architecture",
            )
    if architecture is not None:
        every, chosen, _ = _entries_for(eset, lambda e: e.architecture == architecture, precision)
        if every or chosen:
            for e in [*every, *([chosen] if chosen else [])]:
                _apply(values, e)
            return Resolution(
                values,
                f"{eset.id}: {architecture} architecture (not calibrated on {gpu_id})",
                "same-architecture",
            )
    return Resolution(values, f"{eset.id} defaults (not calibrated on {gpu_id})", "datasheet")


_VERSION = re.compile(r"(?<!\d)(\d+)\.(\d+)")  # starts a digit run: linear time
_VERSION_WORD = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)*")


def _version(text: str) -> tuple[int, int] | None:
    """The first major.minor in ``text`` ('NIM llama3 1.0.x (2024)' -> (1, 0))."""
    m = _VERSION.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _named(pattern: str) -> tuple[str, tuple[int, int]] | None:
    """'TensorRT-LLM 0.17' (or 0.17.0) -> ('tensorrt-llm', (0, 17)); no version -> None."""
    words = pattern.strip().rsplit(None, 1)  # the name, then the version as the last word
    m = _VERSION_WORD.fullmatch(words[-1]) if len(words) == 2 else None
    return (words[0].lower(), (int(m.group(1)), int(m.group(2)))) if m else None


def _position(name: str, text: str) -> int | None:
    """Where engine ``name`` occurs in ``text`` as a whole word (case-insensitive), or None."""
    m = re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", text.lower())
    return m.start() if m else None


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs((a[0] * 1000 + a[1]) - (b[0] * 1000 + b[1]))


def engine_set(
    sets: Iterable[EfficiencySet], engine: str, version: str = ""
) -> EfficiencySet | None:
    """The set that describes a measurement's engine, or None (the caller's default).

    1. A set listing a substring of ``engine version`` (an entry without a version) takes it.
    2. Otherwise the engine named first in the label among the sets' versioned entries: the
       set whose version of it is nearest the row's (the version read from ``version``, else
       from ``engine``; a tie goes to the newer). TensorRT-LLM 0.19 is predicted with 0.17.
    3. A named engine without a version, or an engine no set names: None.
    """
    pool = list(sets)
    label = f"{engine} {version}".lower()
    for s in pool:
        if any(_named(e) is None and e.lower() in label for e in s.engines):
            return s
    claims = [(*nv, s) for s in pool for e in s.engines if (nv := _named(e)) is not None]
    where = [(pos, name) for name, _, _ in claims if (pos := _position(name, label)) is not None]
    row_version = _version(version) or _version(engine)
    if not where or row_version is None:
        return None
    family = min(where)[1]
    mine = [(v, s) for name, v, s in claims if name == family]
    return min(mine, key=lambda vs: (_distance(vs[0], row_version), -vs[0][0], -vs[0][1]))[1]


def claimed_version(s: EfficiencySet, engine: str) -> tuple[int, int] | None:
    """The highest version of ``engine`` the set lists (None: it lists none with a version)."""
    found = [nv[1] for e in s.engines if (nv := _named(e)) and nv[0] == engine.lower()]
    return max(found, default=None)


def names_engine(s: EfficiencySet, engine: str, version: str = "") -> bool:
    """Whether ``engine version`` names an engine the set lists (with any version)."""
    label = f"{engine} {version}".lower()
    for e in s.engines:
        nv = _named(e)
        if (nv is None and e.lower() in label) or (nv and _position(nv[0], label) is not None):
            return True
    return False


Version = tuple[int, int]  # (major, minor)


@dataclass(frozen=True)
class Release:
    """Releases ``first`` … ``last`` (major, minor; inclusive) of the engine ``name``."""

    name: str  # as the set writes it ('TensorRT-LLM')
    first: Version
    last: Version

    def covers(self, version: Version) -> bool:
        return self.first <= version <= self.last

    def text(self) -> str:
        """'0.17' or '0.12-0.19'."""
        one = f"{self.first[0]}.{self.first[1]}"
        return one if self.first == self.last else f"{one}-{self.last[0]}.{self.last[1]}"


_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)*(?:-v?(\d+)\.(\d+)(?:\.\d+)*)?")


def release(text: str) -> Release | None:
    """'vLLM 0.12-0.19' -> Release('vLLM', (0, 12), (0, 19)); 'NIM 1.0' -> one minor release;
    None: no version (or a range that runs backwards)."""
    words = text.strip().rsplit(None, 1)
    m = _RELEASE.fullmatch(words[-1]) if len(words) == 2 else None
    if m is None:
        return None
    first = (int(m.group(1)), int(m.group(2)))
    last = (int(m.group(3)), int(m.group(4))) if m.group(3) else first
    return Release(words[0], first, last) if first <= last else None


def releases(s: EfficiencySet) -> list[Release]:
    """The releases ``--engine`` resolves to ``s``: its ``releases``, else the versioned
    entries of its ``engines`` (each one minor release)."""
    found = [release(t) for t in (s.releases or s.engines)]
    return [r for r in found if r is not None]


def static_batching(s: EfficiencySet) -> bool:
    """A set fitted to static batching (it names ``static batching`` among its engines)."""
    return any("static batching" in e.lower() for e in s.engines)


def measured_points(s: EfficiencySet, names: set[str], precision: str) -> int:
    """Measurements the set's entries for this GPU (its ids ``names``) at ``precision`` (or
    at every precision) were fitted on; 0 when they do not say."""
    return sum(
        e.points or 0 for e in s.entries if e.gpu in names and e.precision in (precision, None)
    )
