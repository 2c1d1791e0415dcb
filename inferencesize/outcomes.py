"""Typed outcomes of a search: why a candidate was rejected (with its numbers) and what was
searched.

A rejection is a :data:`RejectReason`: one of a few small frozen records, each with a
:class:`RejectKind`, the numbers behind it and a ``message``: the human sentence, derived from
those fields here and nowhere else (the wording the CLI prints). Reasons that
:meth:`inferencesize.estimate.Estimator.resolve` words itself (memory, context window, hardware)
keep its sentence in ``text`` next to their numbers, so that wording stays the resolver's.

:class:`SearchSummary` says what a plan searched: hardware, precisions, splits per hardware,
the candidate count and the rejections by kind; :func:`summary_sentence` words it.

Domain types: stdlib only, no I/O, no printing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal, TypeAlias

from inferencesize.vocabulary import Metric

#: The coarse kind a binding constraint is reported with (``PlanResult.binding_constraint``);
#: "pruned": not searched to the end, since it could not beat the plans kept.
Family = Literal["invalid", "memory", "ttft", "itl", "e2e", "pruned"]

METRIC_NAMES: dict[Metric, str] = {"ttft": "TTFT", "itl": "ITL", "e2e": "E2E"}


class RejectKind(StrEnum):
    """Why a candidate cannot serve: the value is a stable id, :attr:`label` the words."""

    INVALID_SPLIT = "invalid_split"  # the TP/PP/EP/DP split does not fit the model's shape
    UNSUPPORTED = "unsupported"  # the hardware cannot run it (no tensor units, no network)
    CONTEXT = "context"  # ISL + OSL beyond the model's context window
    OUT_OF_MEMORY = "out_of_memory"  # weights + runtime exceed the GPU's memory
    NO_ROOM = "no_room"  # weights fit, one sequence's KV cache does not
    BATCH_TOO_LARGE = "batch_too_large"  # every allowed static batch exceeds the KV capacity
    TTFT = "ttft"
    ITL = "itl"
    E2E = "e2e"
    PRUNED = "pruned"  # not searched to the end: it cannot beat the plans kept (a bound says)

    @property
    def label(self) -> str:
        return _LABELS[self]

    @property
    def family(self) -> Family:
        """invalid | memory | ttft | itl | e2e: what ``binding_constraint`` reports."""
        return _FAMILIES[self]


_LABELS = {
    RejectKind.INVALID_SPLIT: "invalid split",
    RejectKind.UNSUPPORTED: "unsupported",
    RejectKind.CONTEXT: "context window",
    RejectKind.OUT_OF_MEMORY: "out of memory",
    RejectKind.NO_ROOM: "no room for one sequence",
    RejectKind.BATCH_TOO_LARGE: "batch too large",
    RejectKind.TTFT: "TTFT",
    RejectKind.ITL: "ITL",
    RejectKind.E2E: "E2E",
    RejectKind.PRUNED: "pruned",
}
_FAMILIES: dict[RejectKind, Family] = {
    RejectKind.INVALID_SPLIT: "invalid",
    RejectKind.UNSUPPORTED: "invalid",
    RejectKind.CONTEXT: "invalid",
    RejectKind.OUT_OF_MEMORY: "memory",
    RejectKind.NO_ROOM: "memory",
    RejectKind.BATCH_TOO_LARGE: "memory",
    RejectKind.TTFT: "ttft",
    RejectKind.ITL: "itl",
    RejectKind.E2E: "e2e",
    RejectKind.PRUNED: "pruned",
}


def fmt_seconds(value: float) -> str:
    """3.4 s, 480 ms: a latency for messages."""
    if value >= 1.0:
        return f"{value:.3g} s"
    return f"{value * 1e3:.3g} ms"


class _Worded:
    """A reason reads as its message: ``str(reason) == reason.message``."""

    @property
    def message(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.message


class SplitConstraint(StrEnum):
    """The structural rule a TP/PP/EP/DP split breaks (``dimension``: the degree at fault)."""

    DEGREE_BELOW_ONE = "degree_below_one"
    DP_BELOW_ONE = "dp_below_one"
    TP_DIVIDES_HEADS = "tp_divides_heads"
    TP_DIVIDES_KV_HEADS = "tp_divides_kv_heads"
    TP_MULTIPLE_OF_KV_HEADS = "tp_multiple_of_kv_heads"
    PP_AT_MOST_LAYERS = "pp_at_most_layers"
    EP_NEEDS_MOE = "ep_needs_moe"
    EP_DIVIDES_EXPERTS = "ep_divides_experts"
    EP_DIVIDES_TP = "ep_divides_tp"
    EP_DIVIDES_DP_TP = "ep_divides_dp_tp"
    DP_NEEDS_MOE = "dp_needs_moe"

    @property
    def dimension(self) -> Literal["tp", "pp", "ep", "dp"] | None:
        """The degree at fault (None for ``DEGREE_BELOW_ONE``: one of tp, pp, ep)."""
        return _DEGREES.get(self.value[:2])


_DEGREES: dict[str, Literal["tp", "pp", "ep", "dp"]] = {
    "tp": "tp",
    "pp": "pp",
    "ep": "ep",
    "dp": "dp",
}


@dataclass(frozen=True)
class SplitProblem(_Worded):
    """A split the model's shape rules out. ``count`` is what the constraint counts (attention
    heads, KV heads, layers or experts; 0 where it counts nothing)."""

    constraint: SplitConstraint
    tp: int
    pp: int
    ep: int
    dp: int
    count: int = 0
    kind: ClassVar[RejectKind] = RejectKind.INVALID_SPLIT

    @property
    def message(self) -> str:
        c, n = SplitConstraint, self.count
        tp, pp, ep, dp = self.tp, self.pp, self.ep, self.dp
        return {
            c.DEGREE_BELOW_ONE: "tp, pp and ep must be at least 1",
            c.DP_BELOW_ONE: "dp must be at least 1",
            c.TP_DIVIDES_HEADS: f"tp {tp} does not divide {n} attention heads",
            c.TP_DIVIDES_KV_HEADS: f"tp {tp} does not divide {n} KV heads",
            c.TP_MULTIPLE_OF_KV_HEADS: (
                f"tp {tp} is not a multiple of {n} KV heads (cannot replicate them evenly)"
            ),
            c.PP_AT_MOST_LAYERS: f"pp {pp} exceeds {n} layers",
            c.EP_NEEDS_MOE: f"ep {ep} needs a mixture-of-experts model",
            c.EP_DIVIDES_EXPERTS: f"ep {ep} does not divide {n} experts",
            c.EP_DIVIDES_TP: f"ep {ep} must divide tp {tp} (experts share the TP GPUs)",
            c.EP_DIVIDES_DP_TP: f"ep {ep} must divide dp {dp} × tp {tp} (experts share the GPUs)",
            c.DP_NEEDS_MOE: (
                f"attention dp {dp} needs a mixture-of-experts model (dense: use instances)"
            ),
        }[self.constraint]


@dataclass(frozen=True)
class MemoryShortfall(_Worded):
    """Per GPU, the bytes needed against the bytes available. ``OUT_OF_MEMORY``: weights +
    activations + runtime reserve against the GPU's memory; ``NO_ROOM``: one sequence's KV
    cache (ISL + OSL tokens) against the KV capacity left. ``text``: the resolver's sentence."""

    kind: Literal[RejectKind.OUT_OF_MEMORY, RejectKind.NO_ROOM]
    needed_bytes: float
    available_bytes: float
    text: str

    @property
    def message(self) -> str:
        return self.text


@dataclass(frozen=True)
class ContextTooLong(_Worded):
    """ISL + OSL tokens beyond the model's context window. ``text``: the resolver's sentence."""

    seq_len_tokens: float
    max_context_tokens: int
    text: str
    kind: ClassVar[RejectKind] = RejectKind.CONTEXT

    @property
    def message(self) -> str:
        return self.text


@dataclass(frozen=True)
class BatchTooLarge(_Worded):
    """Static batching at fixed sizes: the smallest allowed batch exceeds the KV capacity
    (``max_concurrency`` sequences of ISL + OSL tokens)."""

    smallest_batch: int
    max_concurrency: int
    kind: ClassVar[RejectKind] = RejectKind.BATCH_TOO_LARGE

    @property
    def message(self) -> str:
        return (
            f"out of memory: the smallest allowed batch {self.smallest_batch}"
            f" > {self.max_concurrency}"
        )


@dataclass(frozen=True)
class LatencyMiss(_Worded):
    """A latency limit missed at the lightest load the candidate may run: ``value_s`` >
    ``limit_s`` at ``at`` (in-flight concurrency or static batch size, per ``unit``)."""

    metric: Metric
    value_s: float
    limit_s: float
    at: int
    unit: Literal["concurrency", "batch size", "request rate"] = "concurrency"
    statistic: str = "mean"  # the statistic over requests the limit holds ("mean", "p99" …)

    @property
    def kind(self) -> RejectKind:
        return RejectKind(self.metric)

    @property
    def ratio(self) -> float:
        """value / limit (> 1 for a miss)."""
        return self.value_s / self.limit_s

    @property
    def _name(self) -> str:
        name = METRIC_NAMES[self.metric]
        return name if self.statistic == "mean" else f"{self.statistic} {name}"

    @property
    def message(self) -> str:
        where = (
            "even at a light request rate"
            if self.unit == "request rate"
            else f"at {self.unit} {self.at}"
        )
        return (
            f"{self._name} {fmt_seconds(self.value_s)} > limit {fmt_seconds(self.limit_s)} {where}"
        )

    def best_message(self, candidate: str) -> str:
        """The nearest-miss sentence: the best this candidate does against the limit."""
        return (
            f"best {self._name} is {fmt_seconds(self.value_s)} on {candidate}"
            f" > limit {fmt_seconds(self.limit_s)}"
        )


@dataclass(frozen=True)
class Pruned(_Worded):
    """An open-loop candidate not searched to the end: a bound shows it needs at least
    ``needs_instances`` instances, more than any plan kept (the chosen one and the
    alternatives shown) allows at its own packing and prices. ``basis``: "sustainable_rate":
    ``rate_rps`` is its sustainable rate per instance (no latency limit lets it serve more);
    "mean_limits": ``rate_rps`` bounds what its mean ITL or E2E limit lets one instance serve
    (the batch that rate builds is too slow even with every step a decode step);
    "limits": one point at ``rate_rps``, the rate per instance it would need to fit, misses a
    limit (every statistic grows with the rate)."""

    basis: Literal["sustainable_rate", "mean_limits", "limits"]
    rate_rps: float
    needs_instances: int
    gpus: int  # its sizing at ``needs_instances``, already behind the last plan shown
    servers: int
    kind: ClassVar[RejectKind] = RejectKind.PRUNED

    @property
    def message(self) -> str:
        if self.basis == "sustainable_rate":
            why = f"at its sustainable rate, {self.rate_rps:.3g} req/s per instance, it needs"
        elif self.basis == "mean_limits":
            why = (
                f"its mean limits let one instance serve at most {self.rate_rps:.3g} req/s,"
                " so it needs"
            )
        else:
            why = f"it misses a limit at {self.rate_rps:.3g} req/s per instance, so it needs"
        return (
            f"cannot beat the plans shown: {why} at least {_n(self.needs_instances, 'instance')}"
            f" ({_n(self.gpus, 'GPU')} on {_n(self.servers, 'server')})"
        )


@dataclass(frozen=True)
class Described(_Worded):
    """A reason known by its sentence only: what the resolver words without numbers the
    planner can read back (no tensor units for a precision, no inter-node network), or what a
    caller still passes as a string."""

    kind: RejectKind
    text: str

    @property
    def message(self) -> str:
        return self.text


RejectReason: TypeAlias = (
    SplitProblem
    | MemoryShortfall
    | ContextTooLong
    | BatchTooLarge
    | LatencyMiss
    | Pruned
    | Described
)

#: A reason given as a string with a coarse kind (invalid | memory | ttft | itl | e2e).
_UNTYPED = {
    "memory": RejectKind.OUT_OF_MEMORY,
    "ttft": RejectKind.TTFT,
    "itl": RejectKind.ITL,
    "e2e": RejectKind.E2E,
}


@dataclass(frozen=True, init=False)
class Rejected:
    """A candidate that cannot serve the scenario, and why.

    ``why``: the typed reason; ``nearest``: for a latency rejection, the limit missed by the
    largest factor at the candidate's lightest load (what ``nearest_miss`` reports). A reason
    may still be given as a string with a coarse ``kind`` (invalid | memory | ttft | itl |
    e2e): it is kept as :class:`Described`.
    """

    candidate: str
    why: RejectReason
    nearest: LatencyMiss | None

    def __init__(
        self,
        candidate: str,
        why: RejectReason | str,
        kind: str | None = None,
        nearest: LatencyMiss | None = None,
    ) -> None:
        if isinstance(why, str):
            why = Described(_UNTYPED.get(kind or "", RejectKind.UNSUPPORTED), why)
        object.__setattr__(self, "candidate", candidate)
        object.__setattr__(self, "why", why)
        object.__setattr__(self, "nearest", nearest)

    @property
    def reason(self) -> str:
        """The human sentence (``why.message``)."""
        return self.why.message

    @property
    def kind(self) -> Family:
        """invalid | memory | ttft | itl | e2e: the worst-missed limit for a latency
        rejection, else the family of ``why``."""
        return self.nearest.metric if self.nearest is not None else self.why.kind.family

    @property
    def miss_ratio(self) -> float:
        """Worst value / limit at the lightest load (inf when no latency limit was missed)."""
        return self.nearest.ratio if self.nearest is not None else math.inf

    @property
    def miss_message(self) -> str | None:
        return self.nearest.best_message(self.candidate) if self.nearest is not None else None


@dataclass(frozen=True)
class HardwareSearch:
    """What was searched on one hardware id: its ``precisions`` and ``splits`` (labels of the
    splits tried with every one of them, in order, the multi-node pass's included), so
    ``candidates`` = precisions × splits. ``considered``: the splits enumerated within the GPU
    budget, counting the structurally impossible ones of an "auto" search that were skipped
    rather than tried (``skipped``)."""

    hardware: str
    precisions: tuple[str, ...]
    splits: tuple[str, ...]
    considered: int

    @property
    def candidates(self) -> int:
        return len(self.precisions) * len(self.splits)

    @property
    def skipped(self) -> int:
        return self.considered - len(self.splits)


@dataclass(frozen=True)
class SearchSummary:
    """What a plan searched, per hardware id (``hardware``). ``candidates``: the candidates
    evaluated (per hardware its precisions × its splits); every one of them is either
    feasible or rejected, so ``candidates == feasible + rejected``. ``rejected_by_kind``:
    rejections by :class:`RejectKind` (in its order, non-zero only). ``multi_node``: whether
    the multi-node pass ran (it runs when no single-node candidate is feasible)."""

    hardware: tuple[HardwareSearch, ...]
    candidates: int
    feasible: int
    rejected_by_kind: Mapping[RejectKind, int] = field(default_factory=dict)
    multi_node: bool = False

    @property
    def hardware_ids(self) -> tuple[str, ...]:
        return tuple(h.hardware for h in self.hardware)

    @property
    def precisions(self) -> tuple[str, ...]:
        """Every precision searched on some hardware, first seen first."""
        return tuple(dict.fromkeys(p for h in self.hardware for p in h.precisions))

    @property
    def rejected(self) -> int:
        return sum(self.rejected_by_kind.values())

    @property
    def skipped_splits(self) -> int:
        return sum(h.skipped for h in self.hardware)

    def record(self) -> dict[str, Any]:
        """Plain data for JSON: per hardware its precisions, splits tried, splits considered
        and candidates; the totals; rejections by :class:`RejectKind` value."""
        return {
            "hardware": [
                {
                    "id": h.hardware,
                    "precisions": list(h.precisions),
                    "splits": list(h.splits),
                    "considered": h.considered,
                    "candidates": h.candidates,
                }
                for h in self.hardware
            ],
            "precisions": list(self.precisions),
            "candidates": self.candidates,
            "feasible": self.feasible,
            "rejected": self.rejected,
            "rejected_by_kind": {k.value: n for k, n in self.rejected_by_kind.items()},
            "skipped_splits": self.skipped_splits,
            "multi_node": self.multi_node,
        }


def count_kinds(rejected: Iterable[Rejected]) -> dict[RejectKind, int]:
    """Rejections by kind, in :class:`RejectKind` order (kinds with none left out)."""
    counts = Counter(r.why.kind for r in rejected)
    return {k: counts[k] for k in RejectKind if counts[k]}


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def summary_sentence(s: SearchSummary) -> str:
    """``searched 3 systems × 3 precisions × 11 splits = 99 candidates; rejected 41 (out of
    memory 30, TTFT 11)``; candidates pruned by a bound are counted apart inside it
    (``rejected 61 (out of memory 1; 60 pruned: cannot beat the plans shown)``). Systems with their own split counts read ``2 systems (11 + 9
    splits) × 3 precisions``; with their own precisions too, ``2 systems (3 precisions × 11
    splits + 2 precisions × 9 splits)``."""
    hw = s.hardware
    systems = _n(len(hw), "system")
    splits = {len(h.splits) for h in hw}
    if len({h.precisions for h in hw}) > 1:
        each = (f"{_n(len(h.precisions), 'precision')} × {_n(len(h.splits), 'split')}" for h in hw)
        space = f"{systems} ({' + '.join(each)})"
    elif len(splits) > 1:
        per = " + ".join(str(len(h.splits)) for h in hw)
        space = f"{systems} ({per} splits) × {_n(len(s.precisions), 'precision')}"
    else:
        each_split = _n(max(splits, default=0), "split")
        space = f"{systems} × {_n(len(s.precisions), 'precision')} × {each_split}"
    text = f"searched {space} = {_n(s.candidates, 'candidate')}"
    if s.multi_node:
        text += " (multi-node splits included)"
    if s.skipped_splits:
        text += f"; {_n(s.skipped_splits, 'structurally impossible split')} skipped"
    text += f"; rejected {s.rejected}"
    kinds = (f"{k.label} {n}" for k, n in s.rejected_by_kind.items() if k is not RejectKind.PRUNED)
    parts = ", ".join(kinds)
    pruned = s.rejected_by_kind.get(RejectKind.PRUNED, 0)
    if pruned:  # evaluated only as far as a bound: said apart from the reasons found
        parts += ("; " if parts else "") + f"{pruned} pruned: cannot beat the plans shown"
    if parts:
        text += f" ({parts})"
    return text
