"""The deployment a published measurement row states: one instance (aggregated) or a prefill
and a decode pool (disaggregated), read from its tp / pp / ep / num_gpus cells and its notes.

Conventions of the sources (shared/calibration README):

* aggregated: one instance on ``num_gpus`` = TP × PP × attention-DP GPUs; ``ep`` = MoE expert
  parallel; the notes state ``attention_dp=N, moe_tp=M, moe_ep=E``;
* disaggregated: ``tp`` written ``P:tp4x1 D:tp8x4`` = prefill TP × workers, decode TP ×
  workers; ``ep`` written ``P:8 D:8``; the notes state ``attention_dp P:8 D:1`` and
  ``moe_tp P:1 D:8``. ``P:tp8 D:tp8`` (no ``x``) states no worker counts.

The model's split (``parallelism``) spreads the routed experts of a stage over the DP · TP
GPUs of an instance in EP groups, each expert split DP · TP / EP ways: a stated MoE TP must be
that (the sources' ``moe_tp × moe_ep = attention_dp × tp``). Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from inferencesize.parallelism import Parallelism


@dataclass(frozen=True)
class Pool:
    """One pool of a disaggregated deployment: ``workers`` instances of one split."""

    par: Parallelism
    workers: int

    @property
    def gpus(self) -> int:
        return self.par.gpus * self.workers


@dataclass(frozen=True)
class Shape:
    """What a row ran on: ``aggregated`` (one instance), or ``prefill`` and ``decode`` pools;
    ``problem`` says why the row's deployment cannot be expressed (then the rest is None)."""

    aggregated: Parallelism | None = None
    prefill: Pool | None = None
    decode: Pool | None = None
    problem: str | None = None

    @property
    def disaggregated(self) -> bool:
        return self.prefill is not None


#: Reason of a disaggregated row whose worker counts are not stated.
WORKERS_NOT_STATED = "disaggregated: worker counts not stated (num_gpus blank)"

_DISAGG_TP = re.compile(r"^\s*P:\s*tp(\d+)(?:x(\d+))?\s+D:\s*tp(\d+)(?:x(\d+))?\s*$", re.I)
_PAIR = re.compile(r"^\s*P:\s*(\d+)\s+D:\s*(\d+)\s*$", re.I)


def _note_int(notes: str, key: str) -> int | None:
    """``key=N`` in the notes (an aggregated row's attention_dp, moe_tp)."""
    found = re.search(rf"\b{key}\s*=\s*(\d+)", notes)
    return int(found.group(1)) if found else None


def _note_pair(notes: str, key: str) -> tuple[int, int] | None:
    """``key P:N D:M`` in the notes (a disaggregated row's attention_dp, moe_tp)."""
    found = re.search(rf"\b{key}\s+P:\s*(\d+)\s+D:\s*(\d+)", notes)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _moe_problem(role: str, par: Parallelism, moe_tp: int | None) -> str | None:
    if moe_tp is None or moe_tp * par.ep == par.dp * par.tp:
        return None
    return (
        f"{role}MoE TP × EP ≠ attention DP × TP (experts split other than over the instance's GPUs)"
    )


def row_shape(
    tp_cell: str,
    tp: int | None,
    pp: int | None,
    ep_cell: str,
    ep: int | None,
    num_gpus: int | None,
    notes: str,
) -> Shape:
    """The deployment of one row (module docstring), or the problem that stops it."""
    disagg = _DISAGG_TP.match(tp_cell)
    if disagg is None and tp_cell.strip().upper().startswith("P:"):
        return Shape(problem="disaggregated: split not readable (expected P:tpNxW D:tpNxW)")
    if disagg is not None:
        return _disaggregated(disagg, pp or 1, ep_cell, num_gpus, notes)
    stated_dp = _note_int(notes, "attention_dp")
    if stated_dp is None and tp and _ATTENTION_DP_ON.search(notes):
        # attention DP switched on with no size: over the TP ranks (SGLang --enable-dp-attention
        # with dp = tp, TensorRT-LLM enable_attention_dp): attention TP 1, TP groups of one
        return _aggregated(1, pp, ep, tp, num_gpus, notes, tp)
    dp = stated_dp or 1
    width = tp or (num_gpus // ((pp or 1) * dp) if num_gpus else 1)
    return _aggregated(width, pp, ep, dp, num_gpus, notes, stated_dp)


#: Notes that switch attention data parallelism on without a size.
_ATTENTION_DP_ON = re.compile(
    r"\b(?:dp[-_ ]?attn|dp[-_ ]?attention|enable[-_ ]attention[-_ ]dp)\b\s*[=:]?\s*(?:true|yes|on|1)\b",
    re.I,
)


def _aggregated(
    width: int,
    pp: int | None,
    ep: int | None,
    dp: int,
    num_gpus: int | None,
    notes: str,
    stated_dp: int | None,
) -> Shape:
    par = Parallelism(max(width, 1), pp or 1, ep or 1, dp)
    # num_gpus is the instance's where the notes state attention DP; elsewhere it may be the
    # server's (a per-DGX rate of TP2 instances), as before
    if stated_dp is not None and num_gpus is not None and num_gpus != par.gpus:
        return Shape(problem="num_gpus ≠ TP × PP × attention DP")
    problem = _moe_problem("", par, _note_int(notes, "moe_tp"))
    return Shape(problem=problem) if problem else Shape(aggregated=par)


def _disaggregated(
    tp: re.Match[str], pp: int, ep_cell: str, num_gpus: int | None, notes: str
) -> Shape:
    p_tp, p_workers, d_tp, d_workers = tp.groups()
    if p_workers is None or d_workers is None:
        return Shape(problem=WORKERS_NOT_STATED)
    eps = _PAIR.match(ep_cell)
    p_ep, d_ep = (int(eps.group(1)), int(eps.group(2))) if eps else (1, 1)
    p_dp, d_dp = _note_pair(notes, "attention_dp") or (1, 1)
    moe = _note_pair(notes, "moe_tp")
    prefill = Pool(Parallelism(int(p_tp), pp, p_ep, p_dp), int(p_workers))
    decode = Pool(Parallelism(int(d_tp), pp, d_ep, d_dp), int(d_workers))
    if num_gpus is not None and num_gpus != prefill.gpus + decode.gpus:
        return Shape(problem="disaggregated: num_gpus ≠ prefill + decode GPUs")
    for role, pool, moe_tp in (
        ("prefill ", prefill, moe[0] if moe else None),
        ("decode ", decode, moe[1] if moe else None),
    ):
        problem = _moe_problem(f"disaggregated {role}", pool.par, moe_tp)
        if problem:
            return Shape(problem=problem)
    return Shape(prefill=prefill, decode=decode)


_POOL_SPEC = re.compile(r"^tp(\d+)(?:pp(\d+))?(?:dp(\d+))?(?:ep(\d+))?(?:x(\d+))?$", re.I)


def parse_pool(text: str) -> Pool | None:
    """A pool written ``tp4x2`` (TP 4, two instances) or ``tp1dp8ep8x1`` (each instance
    attention DP 8 over TP 1, experts in 8 EP groups): ``tpN``, then optional ``ppN``, ``dpN``,
    ``epN`` in that order, then ``xW`` instances (default 1). None when it is not one, or a
    degree is 0."""
    found = _POOL_SPEC.match(text.strip())
    if found is None:
        return None
    tp, pp, dp, ep, workers = (int(g) if g else 1 for g in found.groups())
    if min(tp, pp, dp, ep, workers) < 1:
        return None
    return Pool(Parallelism(tp, pp, ep, dp), workers)


#: Speculative methods that draft with heads built into the model (``techniques.mtp_costs``).
DRAFT_HEADS = ("mtp", "eagle", "eagle3", "medusa", "nextn")
_SPEC = re.compile(r"\bspec_decoding\s*=\s*([A-Za-z0-9_-]+)")


def speculative_method(notes: str) -> str | None:
    """The speculative decoding a row states in its notes (``spec_decoding=mtp``), lower
    case; None when it states none (or ``none`` / ``off``)."""
    found = _SPEC.search(notes)
    if found is None or found.group(1).lower() in ("none", "off", "false", "no"):
        return None
    return found.group(1).lower()
