"""Each batching policy, KV admission and the load balancer on hand-computed timelines.

ConstantService(step_s, prefill_s): a step with prompt work takes prefill_s, a decode-only
step takes step_s, whatever the batch. A request's first token comes at the end of the step
that finishes its prompt; each later step adds one token.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferencesize.simulate import (
    BatchingConfig,
    ConstantService,
    Workload,
    per_request,
    simulate,
)

STEP, PREFILL = 0.01, 0.05


def run(
    arrivals: list[float],
    osl: list[int],
    cfg: BatchingConfig,
    isl: list[int] | None = None,
    cap: float = math.inf,
    need: list[float] | None = None,
    instances: int = 1,
    balancer: str = "least-loaded",
    prefill_s: float = PREFILL,
):  # type: ignore[no-untyped-def]
    n = len(arrivals)
    wl = Workload(
        np.asarray(isl or [1] * n, dtype=np.int64),
        np.asarray(osl, dtype=np.int64),
        np.asarray(arrivals, dtype=float),
    )
    return simulate(
        wl,
        ConstantService(STEP, prefill_s, 64),
        cfg,
        cap,
        np.asarray(need or [0.0] * n, dtype=float),
        instances,
        balancer,  # type: ignore[arg-type]
    )


def test_static_waits_for_a_full_batch_and_pads_to_the_longest_answer() -> None:
    res = run([0.0, 0.1, 0.2, 0.3], [3, 5, 2, 2], BatchingConfig("static", 2))
    # batch 1 starts when the 2nd request arrives (0.1): prefill to 0.15, then decode steps
    # r0: 2 more tokens -> 0.17; r1: 4 more -> 0.19 (the batch is busy until 0.19)
    # batch 2 starts at 0.3: first tokens 0.35, one more token -> 0.36
    assert res.first_token_s == pytest.approx([0.15, 0.15, 0.35, 0.35])
    assert res.done_s == pytest.approx([0.17, 0.19, 0.36, 0.36])
    pr = per_request(res)
    assert pr.queue_s == pytest.approx([0.1, 0.0, 0.1, 0.0])
    assert pr.itl_s == pytest.approx([0.01, 0.01, 0.01, 0.01])
    assert res.busy_s == pytest.approx([0.09 + 0.06])


def test_static_runs_a_partial_batch_when_no_more_requests_can_come() -> None:
    res = run([0.0, 0.1, 0.2], [2, 2, 2], BatchingConfig("static", 2))
    assert res.first_token_s == pytest.approx([0.15, 0.15, 0.25])
    assert res.done_s[2] == pytest.approx(0.26)


def test_dynamic_starts_on_queue_delay_or_full_batch() -> None:
    res = run([0.0, 0.01, 0.2], [2, 2, 2], BatchingConfig("dynamic", 4, max_queue_delay_s=0.05))
    # oldest waited 50 ms -> batch of 2 at 0.05; r2 alone at 0.2 + 0.05
    assert res.admit_s == pytest.approx([0.05, 0.05, 0.25])
    assert res.done_s == pytest.approx([0.11, 0.11, 0.31])
    full = run([0.0, 0.01], [2, 2], BatchingConfig("dynamic", 2, max_queue_delay_s=1.0))
    assert full.admit_s == pytest.approx([0.01, 0.01])  # full batch: no waiting for the delay


def test_inflight_joins_at_the_next_step_boundary() -> None:
    res = run([0.0, 0.015], [3, 2], BatchingConfig("inflight", 8), prefill_s=0.03)
    # step 1 [0, .03]: prefill r0. r1 arrived at .015 -> step 2 [.03, .06]: r1's prompt step,
    # r0's decode pauses (prefill first); step 3 [.06, .07]: both decode, r1 done (2 tokens);
    # step 4 [.07, .08]: r0's third token
    assert res.admit_s == pytest.approx([0.0, 0.03])
    assert res.first_token_s == pytest.approx([0.03, 0.06])
    assert res.done_s == pytest.approx([0.08, 0.07])
    assert per_request(res).itl_s == pytest.approx([0.025, 0.01])


def test_inflight_batches_waiting_prompts_up_to_the_step_token_limit() -> None:
    # three prompts of 100 tokens at once: one prompt step for all three by default (8192
    # tokens), one step each with a limit of 1 (a prompt always fits), two steps at 250
    batched = run([0.0] * 3, [2] * 3, BatchingConfig("inflight", 8), isl=[100] * 3)
    assert BatchingConfig("inflight", 8).step_tokens == 8192
    assert batched.first_token_s == pytest.approx([PREFILL] * 3)
    one = run([0.0] * 3, [2] * 3, BatchingConfig("inflight", 8, step_tokens=1), isl=[100] * 3)
    assert one.first_token_s == pytest.approx([PREFILL, 2 * PREFILL, 3 * PREFILL])
    assert one.done_s == pytest.approx([3 * PREFILL + STEP] * 3)  # decodes waited: in step
    two = run([0.0] * 3, [2] * 3, BatchingConfig("inflight", 8, step_tokens=250), isl=[100] * 3)
    assert two.first_token_s == pytest.approx([PREFILL, PREFILL, 2 * PREFILL])
    full = run([0.0] * 3, [2] * 3, BatchingConfig("inflight", 8, step_tokens=200), isl=[100] * 3)
    assert full.first_token_s == pytest.approx([PREFILL, PREFILL, 2 * PREFILL])  # 200 fit


def test_inflight_decode_runs_in_bulk_until_the_next_arrival() -> None:
    # r0 decodes 99 steps alone; r1 arrives at 0.5005 and joins at the next boundary
    res = run([0.0, 0.5005], [100, 2], BatchingConfig("inflight", 8))
    boundary = PREFILL + math.ceil((0.5005 - PREFILL) / STEP) * STEP  # 0.51
    assert res.admit_s[1] == pytest.approx(boundary)
    # the joining step is a prompt step: r0's decode pauses for it
    r0_left = 99 - round((boundary - PREFILL) / STEP)
    assert res.done_s[0] == pytest.approx(boundary + PREFILL + r0_left * STEP)


def test_chunked_prefill_splits_prompts_by_the_token_budget() -> None:
    res = run([0.0], [2], BatchingConfig("chunked", 8, step_tokens=4), isl=[10])
    # 10 prompt tokens in chunks of 4, 4, 2: three steps before the first token
    assert res.first_token_s == pytest.approx([3 * PREFILL])
    whole = run([0.0], [2], BatchingConfig("inflight", 8, step_tokens=4), isl=[10])
    assert whole.first_token_s == pytest.approx([PREFILL])  # in-flight never splits a prompt
    # a decoding sequence takes one token of the budget: r1's 6 tokens need 2 steps of 3
    two = run([0.0, 0.001], [40, 2], BatchingConfig("chunked", 8, step_tokens=4), isl=[1, 6])
    assert two.first_token_s[1] == pytest.approx(PREFILL + 2 * PREFILL)


def test_kv_admission_blocks_until_memory_frees() -> None:
    res = run(
        [0.0, 0.0, 0.0],
        [5, 5, 5],
        BatchingConfig("inflight", 8, step_tokens=8192),
        cap=2.0,
        need=[1.0, 1.0, 1.0],
    )
    # two fit: one prefill step to .05, four decode steps to .09; the third waits for them
    assert res.admit_s == pytest.approx([0.0, 0.0, 0.09])
    assert res.done_s[2] == pytest.approx(0.09 + PREFILL + 4 * STEP)
    roomy = run(
        [0.0, 0.0, 0.0],
        [5, 5, 5],
        BatchingConfig("inflight", 8, step_tokens=8192),
        cap=3.0,
        need=[1.0] * 3,
    )
    assert roomy.admit_s == pytest.approx([0.0, 0.0, 0.0])


def test_max_batch_caps_inflight_and_too_large_requests_are_dropped() -> None:
    res = run([0.0, 0.0], [3, 3], BatchingConfig("inflight", 1))
    assert res.admit_s == pytest.approx([0.0, PREFILL + 2 * STEP])
    dropped = run([0.0, 0.0], [3, 3], BatchingConfig("inflight", 4), cap=1.0, need=[2.0, 1.0])
    assert math.isnan(dropped.done_s[0]) and dropped.dropped == 1
    assert dropped.done_s[1] == pytest.approx(PREFILL + 2 * STEP)


def test_balancers() -> None:
    cfg = BatchingConfig("inflight", 8)
    rr = run([0.0, 0.001, 0.002, 0.003], [50, 2, 2, 2], cfg, instances=2, balancer="round-robin")
    assert list(rr.instance) == [0, 1, 0, 1]
    # least-loaded: r0 (long) stays on 0; r1 goes to 1 and is done (0.06) before r2 arrives
    ll = run([0.0, 0.001, 0.1, 0.2], [50, 2, 2, 2], cfg, instances=2)
    assert list(ll.instance) == [0, 1, 1, 1]


def test_batching_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="max batch"):
        BatchingConfig("inflight", 0)
    with pytest.raises(ValueError, match="unknown batching"):
        BatchingConfig("bogus", 4)  # type: ignore[arg-type]
