"""Prefix reuse across the turns of a trace's conversations, and the share of it a prefix cache
of a given size keeps.

A conversation's turn k sends the whole dialogue so far: its prompt begins with turn k − 1's
prompt and answer. Those tokens are a prefix whose KV the instance computed for turn k − 1,
reusable if its blocks are still cached (and the turn reaches the instance that holds them:
conversation-affine or KV-aware routing, as llm-d's and Dynamo's routers do). Per turn after the
first of its conversation::

    reusable_k = min(isl_k, isl_{k-1} + osl_{k-1})      (tokens)
    gap_k      = arrival_k − arrival_{k-1}              (s: how long the prefix waits)

and ``reuse_share`` = Σ reusable / Σ isl over every request: what an unbounded cache would
skip. A cache of C tokens that evicts the least recently used blocks keeps a prefix about
as long as the cache takes to fill with new tokens, its characteristic time
T = C / (tokens written per second) (Che, Tung and Wang 2002; exact in the limit of many
items, within a few per cent of an LRU simulation in Fricker et al. 2012): a turn hits when
gap_k < T. Turns are gathered into log-spaced bins of their gap (:data:`GAP_EDGES_S`), so
the hit rate at any T is a sum over bins (rounded down to a bin edge: never more hits than
the cache keeps) and the memory is flat in the requests; the last turn of each conversation
is held (its arrival and context, :class:`Reuse`), a few bytes a conversation.

The hit rate and cached tokens enter the model as its prefix cache
(:class:`inferencesize.techniques.Techniques`: ``prefix_hit_rate`` = hits / requests,
``prefix_tokens`` = the mean reusable tokens of a hit). Pure: no file is read here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Edges of the reuse-gap bins (s): 1 ms to 10^7 s, 20 a decade; a gap outside goes to the
#: first or last bin.
GAP_EDGES_S: FloatArray = np.logspace(-3, 7, 201)


@dataclass(frozen=True)
class PrefixHits:
    """What a cache keeping prefixes for ``residence_s`` seconds skips."""

    residence_s: float
    hit_rate: float  # share of requests whose earlier turns' tokens are cached
    prefix_tokens: float  # mean cached tokens of a hit
    cached_share: float  # share of all prompt tokens served from the cache


@dataclass
class Reuse:
    """Prefix reuse gathered from requests in arrival order (:meth:`add`)."""

    requests: int = 0
    prompt_tokens: int = 0
    conversations: int = 0
    last_s: FloatArray = field(default_factory=lambda: np.zeros(0))
    last_context: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    turns: IntArray = field(default_factory=lambda: np.zeros(len(GAP_EDGES_S) - 1, np.int64))
    tokens: IntArray = field(default_factory=lambda: np.zeros(len(GAP_EDGES_S) - 1, np.int64))

    def add(
        self, arrival_s: FloatArray, isl: IntArray, osl: IntArray, conversation: IntArray
    ) -> None:
        """The next requests in arrival order, each with its conversation's number (from 0
        in order of first appearance; −1: none)."""
        self.requests += len(arrival_s)
        self.prompt_tokens += int(isl.sum())
        top = int(conversation.max(initial=-1)) + 1
        if top > len(self.last_s):
            grow = max(top, 2 * len(self.last_s)) - len(self.last_s)
            self.last_s = np.concatenate([self.last_s, np.full(grow, math.nan)])
            self.last_context = np.concatenate([self.last_context, np.zeros(grow, np.int64)])
        self.conversations = max(self.conversations, top)
        last_s, last_context = self.last_s, self.last_context
        for t, i, o, c in zip(
            arrival_s.tolist(), isl.tolist(), osl.tolist(), conversation.tolist(), strict=True
        ):
            if c < 0:
                continue
            before = last_s[c]
            if before == before:  # an earlier turn (not NaN)
                k = int(np.searchsorted(GAP_EDGES_S, t - before, side="right")) - 1
                k = min(max(k, 0), len(self.turns) - 1)
                self.turns[k] += 1
                self.tokens[k] += min(i, int(last_context[c]))
            last_s[c] = t
            last_context[c] = i + o

    @property
    def reuse_share(self) -> float:
        """Share of all prompt tokens that repeat an earlier turn (an unbounded cache)."""
        return float(self.tokens.sum()) / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def later_turns(self) -> int:
        """Requests that follow an earlier turn of their conversation."""
        return int(self.turns.sum())

    def hits(self, residence_s: float) -> PrefixHits:
        """The turns whose gap is under ``residence_s`` (whole bins: rounded down)."""
        k = int(np.searchsorted(GAP_EDGES_S, residence_s, side="right")) - 1
        turns = int(self.turns[: max(k, 0)].sum())
        tokens = int(self.tokens[: max(k, 0)].sum())
        return PrefixHits(
            residence_s=residence_s,
            hit_rate=turns / self.requests if self.requests else 0.0,
            prefix_tokens=tokens / turns if turns else 0.0,
            cached_share=tokens / self.prompt_tokens if self.prompt_tokens else 0.0,
        )


def residence_s(cache_tokens: float, tokens_per_s: float) -> float:
    """How long an LRU cache of ``cache_tokens`` keeps a block when ``tokens_per_s`` new tokens
    are written into it (its characteristic time, module docstring); inf with no writes."""
    if cache_tokens <= 0:
        return 0.0
    return cache_tokens / tokens_per_s if tokens_per_s > 0 else math.inf
