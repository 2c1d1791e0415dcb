"""Prefix reuse across a trace's conversations: the share of prompt tokens earlier turns give
(hand-computed), what a cache of a given residence keeps, and the plan sized with it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.io_trace import read_trace_traffic
from inferencesize.trace_conversations import GAP_EDGES_S, Reuse, residence_s

#: (arrival s, prompt, answer, conversation): turn k's prompt repeats turn k-1's prompt and
#: answer, up to its own length
ROWS = [
    (0.0, 100, 50, "a"),
    (1.0, 200, 20, "b"),
    (2.0, 300, 30, "a"),  # a's second turn: min(300, 100 + 50) = 150 reusable, 2 s after
    (30.0, 100, 10, "b"),  # b's second turn: min(100, 200 + 20) = 100, 29 s after
    (40.0, 500, 10, None),  # no conversation: never a reuse
    (1000.0, 400, 10, "a"),  # a's third turn: min(400, 300 + 30) = 330, 998 s after
]
PROMPTS = sum(r[1] for r in ROWS)  # 1,600


def _jsonl(path: Path, rows: list[tuple[float, int, int, str | None]]) -> Path:
    lines = []
    for t, i, o, c in rows:
        row: dict[str, Any] = {"arrival_s": t, "input_tokens": i, "output_tokens": o}
        row["conversation_id"] = c if c is not None else ""
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def chats(tmp_path: Path) -> Path:
    return _jsonl(tmp_path / "chats.jsonl", ROWS)


def test_reuse_share_by_hand(chats: Path) -> None:
    reuse = read_trace_traffic(chats, "chats", 10.0).reuse
    assert reuse is not None
    assert reuse.later_turns == 3 and reuse.prompt_tokens == PROMPTS
    assert reuse.reuse_share == pytest.approx((150 + 100 + 330) / PROMPTS)


@pytest.mark.parametrize(
    ("kept_s", "hits", "tokens"),
    [
        (1.0, 0, 0),  # no gap is under a second
        (10.0, 1, 150),  # a's 2 s gap
        (100.0, 2, 250),  # and b's 29 s
        (1e4, 3, 580),  # and a's 998 s: every earlier turn
    ],
)
def test_a_cache_keeps_the_turns_that_come_back_within_its_residence(
    chats: Path, kept_s: float, hits: int, tokens: int
) -> None:
    reuse = read_trace_traffic(chats, "chats", 10.0).reuse
    assert reuse is not None
    got = reuse.hits(kept_s)
    assert got.hit_rate == pytest.approx(hits / len(ROWS))
    assert got.prefix_tokens == pytest.approx(tokens / hits if hits else 0.0)
    assert got.cached_share == pytest.approx(tokens / PROMPTS)


def test_hits_never_count_a_gap_longer_than_the_residence() -> None:
    rng = np.random.default_rng(2)
    n = 5_000
    times = np.sort(rng.uniform(0, 1e4, n))
    conv = rng.integers(0, 300, n)
    isl, osl = rng.integers(1, 2000, n), rng.integers(1, 300, n)
    reuse = Reuse()
    reuse.add(times, isl, osl, conv)
    # by hand: each request's gap to its conversation's previous one
    last: dict[int, tuple[float, int]] = {}
    gaps, reusable = [], []
    for t, i, o, c in zip(times, isl, osl, conv, strict=True):
        if int(c) in last:
            gaps.append(t - last[int(c)][0])
            reusable.append(min(int(i), last[int(c)][1]))
        last[int(c)] = (float(t), int(i + o))
    g, r = np.array(gaps), np.array(reusable)
    assert reuse.reuse_share == pytest.approx(r.sum() / isl.sum())
    for kept in (0.5, 3.0, 40.0, 400.0):
        h = reuse.hits(kept)
        below = GAP_EDGES_S[GAP_EDGES_S <= kept].max()  # rounded down to a bin edge
        assert h.cached_share * isl.sum() == pytest.approx(r[g < below].sum())
        assert r[g < below].sum() <= r[g < kept].sum()


def test_a_streamed_or_unsorted_trace_gives_the_same_reuse(tmp_path: Path) -> None:
    rows = [(float(k), 100 + k, 10, f"c{k % 7}") for k in range(60)]
    whole = read_trace_traffic(_jsonl(tmp_path / "a.jsonl", rows), "a", 10.0).reuse
    streamed = read_trace_traffic(tmp_path / "a.jsonl", "a", 10.0, keep=10).reuse
    shuffled = [rows[k] for k in np.random.default_rng(1).permutation(len(rows))]
    unsorted = read_trace_traffic(_jsonl(tmp_path / "b.jsonl", shuffled), "b", 10.0).reuse
    assert whole is not None and streamed is not None and unsorted is not None
    for other in (streamed, unsorted):
        assert other.reuse_share == whole.reuse_share and other.later_turns == whole.later_turns
        assert list(other.turns) == list(whole.turns)


def test_residence_of_an_lru_cache() -> None:
    assert residence_s(1e6, 5e3) == 200.0  # a million tokens filled at 5,000 tokens/s
    assert residence_s(0.0, 5e3) == 0.0 and residence_s(1e6, 0.0) == math.inf


QUESTION = ["plan", "--model", "llama-3-8b", "--hardware", "dgx-h100", "--precision", "fp8"]
QUESTION += ["--tp", "1", "--pp", "1", "--ttft-ms", "500", "--itl-ms", "30", "-f", "json"]


def _plan(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, [*QUESTION, *args])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_the_plan_is_sized_with_the_cache_its_conversations_give(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    rows: list[tuple[float, int, int, str | None]] = []
    context: dict[int, int] = {}
    for k, t in enumerate(np.cumsum(rng.exponential(0.1, 600))):  # 10 req/s, 60 s
        c = int(rng.integers(0, 40))
        isl = context.get(c, 0) + int(rng.integers(100, 300))  # the dialogue so far, and more
        osl = int(rng.integers(50, 150))
        context[c] = isl + osl
        rows.append((float(t), isl, osl, f"u{c}"))
        if k and k % 50 == 0:
            context.clear()  # conversations end and new ones begin
    chats = _jsonl(tmp_path / "chats.jsonl", rows)
    plain = _jsonl(tmp_path / "plain.jsonl", [(t, i, o, None) for t, i, o, _ in rows])
    rec = _plan("--trace", str(chats))
    c = rec["trace"]["conversations"]
    assert 0 < c["reuse_share"] < 1 and c["later_turns"] > 0
    fed, kept = c["sized_with"], c["prefix_cache"]
    assert fed is not None and 0 < fed["hit_rate"] <= c["later_turns"] / len(rows)
    assert kept["cached_share"] <= c["reuse_share"] + 1e-12
    # the cached prefixes skip prefill: the first token comes sooner than without them
    without = _plan("--trace", str(plain))
    assert without["trace"]["conversations"] is None
    ttft = rec["plan"]["per_instance_at_peak"]["ttft_ms"]
    assert ttft < without["plan"]["per_instance_at_peak"]["ttft_ms"]
    # a prefix cache stated by hand wins over the trace's
    stated = _plan("--trace", str(chats), "--prefix-tokens", "50", "--prefix-hit-rate", "0.1")
    assert stated["trace"]["conversations"]["sized_with"] is None
