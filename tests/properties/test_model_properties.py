"""Monotonicity and bound properties of the performance model (hypothesis).

Deployments: a dense GQA model (Llama-3-8B FP8, Llama-3.1-70B BF16 TP4 and PP2), MoE
(Mixtral-8x7B FP8 TP2), MoE with alternating sliding windows (gpt-oss-20b) and MLA + MoE
(DeepSeek-V3 FP8 TP8 on H200).

The in-flight properties are drawn with OSL ≥ 512: with short outputs and long prompts the
in-flight fixed point in ``serving.inflight_arrays`` does not converge in its 40 damped
iterations and the result depends on where the oscillation stops, which breaks monotonicity
(pinned separately in tests/model/test_memory_serving.py as xfail). In this domain it converges.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.deployment import default_kv_precision
from inferencesize.estimate import Candidate, Estimator, Resolved
from inferencesize.latency import Deployment, decode_step, prefill
from inferencesize.memory import weight_bytes_per_gpu
from inferencesize.parallelism import Parallelism
from inferencesize.serving import inflight, static

MAX_EXAMPLES = 50
PROPERTY = settings(max_examples=MAX_EXAMPLES, deadline=None)
TOL = 1e-9  # relative slack for float round-off between neighbouring inputs

# (model, hardware, precision, tp, pp); every one fits with room for KV
SETUPS = [
    ("llama-3-8b", "h100-sxm", "fp8", 1, 1),
    ("llama-3.1-70b", "h100-sxm", "bf16", 4, 1),
    ("llama-3.1-70b", "dgx-h100", "bf16", 2, 2),
    ("mixtral-8x7b", "h100-sxm", "fp8", 2, 1),
    ("gpt-oss-20b", "h100-sxm", "fp8", 1, 1),
    ("deepseek-v3", "h200-sxm", "fp8", 8, 1),
]
setups = st.sampled_from(SETUPS)


@cache
def catalog() -> Catalog:
    return load_catalog()


@cache
def estimator() -> Estimator:
    return Estimator(catalog().efficiency_set("nim-2024"))


def candidate(setup: tuple[str, str, str, int, int], precision: str | None = None) -> Candidate:
    model, hardware, prec, tp, pp = setup
    prec = precision or prec
    gpu, system = catalog().hardware(hardware)
    return Candidate(
        catalog().model(model), gpu, system, prec, default_kv_precision(prec), Parallelism(tp, pp)
    )


def resolved(cand: Candidate, seq_len: float) -> Resolved:
    res = estimator().resolve(cand, seq_len)
    assert res.reason is None, res.reason
    return res


def deployment(setup: tuple[str, str, str, int, int]) -> Deployment:
    dep = resolved(candidate(setup), 1024).deployment
    assert dep is not None
    return dep


def non_decreasing(before: float, after: float) -> bool:
    return after >= before * (1 - TOL)


# ---------------------------------------------------------------------------------------------
# Step times
# ---------------------------------------------------------------------------------------------


@PROPERTY
@given(
    setup=setups,
    batch=st.integers(1, 1024),
    more=st.integers(1, 1024),
    context=st.floats(0, 65_536),
    longer=st.floats(0, 65_536),
)
def test_decode_step_non_decreasing_in_batch_and_context(
    setup: tuple[str, str, str, int, int], batch: int, more: int, context: float, longer: float
) -> None:
    dep = deployment(setup)
    base = float(decode_step(dep, batch, context).total_s)
    assert non_decreasing(base, float(decode_step(dep, batch + more, context).total_s))
    assert non_decreasing(base, float(decode_step(dep, batch, context + longer).total_s))


@PROPERTY
@given(
    setup=setups,
    batch=st.integers(1, 64),
    isl=st.integers(1, 4096),
    extra=st.integers(1, 2048),
    osl=st.integers(1, 1024),
)
def test_static_ttft_non_decreasing_in_isl(
    setup: tuple[str, str, str, int, int], batch: int, isl: int, extra: int, osl: int
) -> None:
    dep = deployment(setup)
    short = static(dep, isl, osl, batch)
    long = static(dep, isl + extra, osl, batch)
    assert non_decreasing(short.ttft_s, long.ttft_s)
    assert non_decreasing(float(prefill(dep, 1, isl).total_s), short.ttft_s)


# ---------------------------------------------------------------------------------------------
# In-flight serving (KV capacity from the memory budget, as `infersize estimate` does)
# ---------------------------------------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="known limit of the closed-loop cohort model: at prompts of a few tokens on a MoE"
    " model the modelled prefill wait falls faster than the prompt step grows",
)
def test_inflight_ttft_known_counterexample_at_tiny_moe_prompts() -> None:
    cand = candidate(("mixtral-8x7b", "h100-sxm", "fp8", 2, 1))
    est = estimator()
    short = est.point(resolved(cand, 3 + 512), 3, 512, 7, "inflight")
    long = est.point(resolved(cand, 4 + 512), 4, 512, 7, "inflight")
    assert short is not None and long is not None
    assert non_decreasing(short.ttft_s, long.ttft_s)


@PROPERTY
@given(
    setup=setups,
    isl=st.integers(1, 4096),
    extra=st.integers(1, 2048),
    osl=st.integers(512, 2048),
    concurrency=st.integers(1, 512),
)
def test_inflight_ttft_non_decreasing_in_isl(
    setup: tuple[str, str, str, int, int], isl: int, extra: int, osl: int, concurrency: int
) -> None:
    cand = candidate(setup)
    est = estimator()
    short = est.point(resolved(cand, isl + osl), isl, osl, concurrency, "inflight")
    long = est.point(resolved(cand, isl + extra + osl), isl + extra, osl, concurrency, "inflight")
    assert short is not None and long is not None
    assert non_decreasing(short.ttft_s, long.ttft_s)


@PROPERTY
@given(
    setup=setups,
    isl=st.integers(1, 4096),
    osl=st.integers(512, 2048),
    concurrency=st.integers(2, 512),
    more=st.integers(1, 256),
)
def test_inflight_itl_non_decreasing_in_concurrency(
    setup: tuple[str, str, str, int, int], isl: int, osl: int, concurrency: int, more: int
) -> None:
    # From concurrency 2 up: 1 -> 2 can lower ITL (the single client's own prefill is charged
    # as interference on its decode steps; pinned as xfail in test_memory_serving.py).
    res = resolved(candidate(setup), isl + osl)
    est = estimator()
    few = est.point(res, isl, osl, concurrency, "inflight")
    many = est.point(res, isl, osl, concurrency + more, "inflight")
    assert few is not None and many is not None
    assert non_decreasing(few.itl_s, many.itl_s)
    assert non_decreasing(few.e2e_s, many.e2e_s)


@PROPERTY
@given(
    setup=setups,
    isl=st.integers(1, 4096),
    osl=st.integers(1, 2048),
    concurrency=st.integers(1, 1024),
)
def test_throughput_bounded_by_single_stream_latency(
    setup: tuple[str, str, str, int, int], isl: int, osl: int, concurrency: int
) -> None:
    # Each client has one request at a time, and a request needs at least its own prefill
    # (the first token) and OSL − 1 decode steps no faster than a batch-1 step at the same
    # context: X ≤ N / (T_prefill(ISL) + (OSL − 1) · ITL_1). The looser-looking
    # N / (OSL · ITL_1) does NOT hold: at OSL 1 a 1-token prefill is ~50 ns faster than a
    # decode step at context 1.5 (Llama-3-8B FP8 H100), so X exceeds it by 1e-5 relative.
    # Holds whether or not the in-flight fixed point converged (queue wait ≥ 0, TTFT ≥ own
    # prefill, ITL ≥ bare decode step).
    res = resolved(candidate(setup), isl + osl)
    dep = res.deployment
    assert dep is not None
    op = inflight(dep, isl, osl, concurrency, res.max_concurrency)
    itl_1 = float(decode_step(dep, 1, isl + osl / 2).total_s)
    t_prefill = float(prefill(dep, 1, isl).total_s)
    bound = concurrency / (t_prefill + (osl - 1) * itl_1)
    assert op.requests_per_s <= bound * (1 + TOL)
    assert op.output_tokens_per_s <= bound * osl * (1 + TOL)


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------


@PROPERTY
@given(
    setup=setups,
    seq_len=st.integers(1, 8192),
    extra_gib=st.floats(0.0, 512.0),
    scale=st.floats(0.5, 1.0),
)
def test_more_gpu_memory_never_lowers_max_concurrency(
    setup: tuple[str, str, str, int, int], seq_len: int, extra_gib: float, scale: float
) -> None:
    cand = candidate(setup)
    base = cand.gpu.memory_bytes * scale
    small = cand.gpu.model_copy(update={"memory_bytes": base})
    large = cand.gpu.model_copy(update={"memory_bytes": base + extra_gib * 2**30})
    est = estimator()
    few = est.resolve(Candidate(cand.model, small, cand.system, cand.precision,
                                cand.kv_precision, cand.par), seq_len).max_concurrency  # fmt: skip
    many = est.resolve(Candidate(cand.model, large, cand.system, cand.precision,
                                 cand.kv_precision, cand.par), seq_len).max_concurrency  # fmt: skip
    assert many >= few


PRECISION_ORDER = ["fp4", "fp8", "bf16", "fp32"]  # 0.5625, 1, 2, 4 bytes per weight


@PROPERTY
@given(
    model=st.sampled_from(["llama-3-8b", "llama-3.1-70b", "mixtral-8x7b", "gpt-oss-20b"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    seq_len=st.integers(1, 8192),
)
def test_wider_precision_never_uses_less_memory(model: str, tp: int, seq_len: int) -> None:
    # B200 has tensor units for every precision (fp4 … tf32)
    gpu, system = catalog().hardware("dgx-b200")
    est = estimator()
    weights, used, capacity = [], [], []
    for prec in PRECISION_ORDER:
        cand = Candidate(
            catalog().model(model), gpu, system, prec, default_kv_precision(prec), Parallelism(tp)
        )
        res = est.resolve(cand, seq_len)
        assert res.deployment is not None and res.memory is not None
        weights.append(weight_bytes_per_gpu(res.deployment))
        mem = res.memory
        used.append(mem.weights_bytes + mem.activations_bytes + mem.reserve_bytes)
        capacity.append(res.max_concurrency)
    assert weights == sorted(weights)
    assert used == sorted(used)
    assert capacity == sorted(capacity, reverse=True)
