"""The closed-form queue formulas of in-flight batching (queueing.py), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from inferencesize.queueing import (
    LOAD_CAP,
    chunked_cohort_wait_s,
    closed_loop_rate,
    cohort_size,
    cohort_step_prompts,
    cohort_wait_s,
    e2e_s,
    in_step_share,
    prefill_queue,
    prompts_ahead,
    slot_wait_s,
    stretched_itl_s,
    ttft_s,
)


def test_cohort_thins_out_with_prompt_tokens() -> None:
    # B = 9, ISL 1000, cohort_tokens 8000: C = 8 / (1 + 8 · 1000 / 8000) = 8 / 2 = 4
    assert cohort_size(9, 1000, 8000) == pytest.approx(4.0)
    # short prompts: nearly all the others, 8 / (1 + 8 · 10 / 8000) = 8 / 1.01
    assert cohort_size(9, 10, 8000) == pytest.approx(8 / 1.01)
    assert cohort_size(1, 1000, 8000) == 0.0  # alone: no cohort
    # two batched steps of (C + 1) / 2 = 2.5 prompts; 0.75 · 4 − 0.25 = 2.75 prompts ahead
    assert cohort_step_prompts(4.0) == pytest.approx(2.5)
    assert prompts_ahead(4.0) == pytest.approx(2.75)
    assert prompts_ahead(0.0) == 0.0  # −0.25 floors at 0


def test_in_step_share_and_cohort_waits() -> None:
    # s = 0.5 · 0.2 / (0.2 + 0.3) = 0.2; no spread: s = prefill_sync
    assert in_step_share(0.5, 0.2, 0.3) == pytest.approx(0.2)
    assert in_step_share(0.5, 0.2, 0.0) == pytest.approx(0.5)
    # whole prompts: 0.2 · (1.5 · 0.3 − 0.1) = 0.2 · 0.35 = 0.07; a short cohort step: 0
    assert cohort_wait_s(0.2, 0.3, 0.1) == pytest.approx(0.07)
    assert cohort_wait_s(0.2, 0.05, 0.1) == 0.0
    # chunked: 0.2 · 2.75 prompts · 0.04 s = 0.022
    assert chunked_cohort_wait_s(0.2, 2.75, 0.04) == pytest.approx(0.022)


def test_prefill_queue_by_hand() -> None:
    """B = 5, s = 0.2, 2.75 prompts ahead, cohort wait 0.07 s, t_p = 0.04 s, marginal 0.05 s,
    decode step 0.02 s, X = 10 req/s:
    share = 4/5 = 0.8, loose = 0.8, ρ = 10 · 0.04 · 0.8 = 0.32, T' = 0.02 / 0.68,
    along = 0.8 · 10 · 0.8 · (T' + 0.32 · 0.04) = 6.4 · (0.0294118 + 0.0128) = 0.2701553,
    wait = 0.07 + 0.8 · 0.32 · 0.04 · 0.5 + along · 0.04 = 0.07 + 0.00512 + 0.0108062,
    w = (0.2 · 2.75 + along) / 4 = 0.2050388, a = 0.05 · 0.8 · (1 − w) = 0.0317984."""
    wait, stretch = prefill_queue(10.0, 5.0, 0.2, 2.75, 0.07, 0.04, 0.05, 0.02)
    along = 6.4 * (0.02 / 0.68 + 0.0128)
    assert along == pytest.approx(0.2701553, rel=1e-6)
    assert wait == pytest.approx(0.07 + 0.00512 + along * 0.04)
    assert stretch == pytest.approx(0.04 * (1 - (0.55 + along) / 4))
    # idle (X = 0): only the cohort's wait; w = 0.55 / 4 = 0.1375, a = 0.04 · 0.8625 = 0.0345
    wait0, stretch0 = prefill_queue(0.0, 5.0, 0.2, 2.75, 0.07, 0.04, 0.05, 0.02)
    assert (wait0, stretch0) == (pytest.approx(0.07), pytest.approx(0.0345))
    # one client alone waits for nobody and no other prompt stretches its decodes
    alone = prefill_queue(10.0, 1.0, 0.2, 0.0, 0.07, 0.04, 0.05, 0.02)
    assert alone == (0.0, 0.0)


def test_itl_stretch_and_its_cap() -> None:
    # 0.01 / (1 − 10 · 0.03) = 0.01 / 0.7; at X · a = 3 the cap holds: 0.01 / (1 − 0.95)
    assert stretched_itl_s(0.01, 10.0, 0.03) == pytest.approx(0.01 / 0.7)
    assert stretched_itl_s(0.01, 100.0, 0.03) == pytest.approx(0.01 / (1 - LOAD_CAP))


def test_ttft_e2e_and_the_slot_queue() -> None:
    # half a decode step in progress 0.01 + wait 0.1 + own prompt 0.3; alone no half step
    assert ttft_s(5, 0.02, 0.1, 0.3) == pytest.approx(0.41)
    assert ttft_s(1, 0.02, 0.1, 0.3) == pytest.approx(0.4)
    assert e2e_s(0.5, 0.02, 201) == pytest.approx(0.5 + 200 * 0.02)
    # 30 clients, 20 KV slots, 5 req/s: the 10 queued wait 10 / 5 = 2 s (Little's law)
    assert slot_wait_s(30, 20, 5.0) == pytest.approx(2.0)


def test_closed_loop_rate_solves_the_fixed_point() -> None:
    # a = 0: X = B / (c + k) = 8 / (0.5 + 3.5) = 2
    assert closed_loop_rate(8.0, 0.5, 3.5, 0.0) == pytest.approx(2.0)
    # a = 0.1: p = 0.5 + 3.5 + 0.8 = 4.8, X = 16 / (4.8 + √(23.04 − 1.6)) = 1.696653
    x = closed_loop_rate(8.0, 0.5, 3.5, 0.1)
    assert x == pytest.approx(16 / (4.8 + np.sqrt(21.44)))
    assert x * (0.5 + 3.5 / (1 - 0.1 * x)) == pytest.approx(8.0)  # X · E2E(X) = B
    # a = 10: the root 0.0958 has a X > 0.95, so the stretch is capped: X = 8 / (0.5 + 3.5 / 0.05)
    assert closed_loop_rate(8.0, 0.5, 3.5, 10.0) == pytest.approx(8 / 70.5)
