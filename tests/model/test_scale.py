"""Scale-out options: attention DP with EP-sharded experts, rack-scale NVLink domains, the
StreamingLLM KV cap, context-parallel prefill and disaggregated prefill/decode pools.

Expectations are worked out by hand from the model configs (arithmetic in the comments) or are
identities the model promises; directions are pinned with sizes, never exact fitted latencies.
"""

from __future__ import annotations

import math
from functools import cache

import pytest
from loose_plan import plan_loose
from shipped import catalog as _catalog

from inferencesize.comm import Link, alltoall_time
from inferencesize.deployment import NETWORK_LATENCY_S, default_kv_precision, links
from inferencesize.disagg import (
    PREFILL_TTFT_STEPS,
    DisaggResult,
    PoolSpec,
    decode_itl_s,
    kv_transfer_time,
    plan_disaggregated,
    prefill_step_s,
    prompt_kv_bytes,
)
from inferencesize.estimate import Candidate, Estimator, Resolved
from inferencesize.latency import decode_step, prefill
from inferencesize.memory import kv_bytes_per_sequence_per_gpu, weight_bytes_per_gpu
from inferencesize.parallelism import Parallelism, invalid_reason, valid_splits
from inferencesize.planner import HardwareOption, Limits
from inferencesize.question import Question, SearchSpace
from inferencesize.transformer import capped_costs, causal_pairs, decode_flops, prefill_flops


@cache
def _est(cap: tuple[int, int] = (0, 0)) -> Estimator:
    return Estimator(_catalog().efficiency_set("nim-2024"), kv_cap=cap)


def _resolve(
    model: str,
    hardware: str,
    precision: str,
    par: Parallelism,
    seq: float,
    cap: tuple[int, int] = (0, 0),
) -> Resolved:
    c = _catalog()
    gpu, system = c.hardware(hardware)
    cand = Candidate(c.model(model), gpu, system, precision, default_kv_precision(precision), par)
    return _est(cap).resolve(cand, seq)


# ---------------------------------------------------------------------------------------------
# Attention data parallelism + expert parallelism (item 7)
# ---------------------------------------------------------------------------------------------


def test_dp_counts_gpus_and_labels() -> None:
    par = Parallelism(tp=1, pp=1, ep=8, dp=8)
    assert par.gpus == 8
    assert par.label() == "tp1 dp8 ep8"
    assert Parallelism(tp=2, pp=2, ep=4, dp=4).gpus == 16


def test_dp_validity() -> None:
    ds = _est().costs(_catalog().model("deepseek-r1"))
    dense = _est().costs(_catalog().model("llama-3.1-70b"))
    assert invalid_reason(ds, Parallelism(tp=1, ep=8, dp=8)) is None
    assert invalid_reason(ds, Parallelism(tp=2, ep=16, dp=8)) is None  # 16 | 2 · 8
    # EP beyond TP is fine with DP (experts span all dp · tp GPUs) but must divide them
    assert invalid_reason(ds, Parallelism(tp=1, ep=16, dp=8)) == (
        "ep 16 must divide dp 8 × tp 1 (experts share the GPUs)"
    )
    assert invalid_reason(dense, Parallelism(tp=1, dp=8)) == (
        "attention dp 8 needs a mixture-of-experts model (dense: use instances)"
    )
    assert invalid_reason(ds, Parallelism(tp=1, dp=0)) == "dp must be at least 1"
    # default: DP off, the enumeration is what it was
    assert all(p.dp == 1 for p in valid_splits(ds, 8))
    with_dp = valid_splits(ds, 16, tps=[1], pps=[1], dps=[16])
    assert {p.ep for p in with_dp} == {1, 2, 4, 8, 16}
    assert all(p.gpus == 16 for p in with_dp)


def test_dp_weights_dense_per_group_experts_over_all_gpus() -> None:
    # DeepSeek-R1 FP8 (1 byte/param): dense part on each DP group (tp 1), routed experts split
    # over all 8 GPUs; 16-bit embedding + lm_head per group (tp 1)
    res = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=1, ep=8, dp=8), 3000)
    assert res.deployment is not None
    c = res.deployment.costs
    experts = c.moe_layers * c.num_experts * c.expert_params
    expected = c.dense_linear_params + experts / 8 + 2.0 * (c.embedding_params + c.lm_head_params)
    assert weight_bytes_per_gpu(res.deployment) == pytest.approx(expected, rel=1e-12)
    # TP 8 holds 1/8 of the dense part instead: DP costs (dense · 7/8) bytes more per GPU
    tp8 = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=8, ep=8), 3000)
    assert tp8.deployment is not None
    extra = weight_bytes_per_gpu(res.deployment) - weight_bytes_per_gpu(tp8.deployment)
    tables = 2.0 * (c.embedding_params + c.lm_head_params) * 7 / 8
    assert extra == pytest.approx(c.dense_linear_params * 7 / 8 + tables, rel=1e-9)


def test_dp_kv_per_gpu_shrinks_by_the_dp_degree() -> None:
    # MLA's latent is replicated on every TP rank: under TP 8 each GPU holds a sequence's whole
    # KV; with 8 DP groups a sequence lives on one GPU: 1/8 per GPU on average
    dp8 = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=1, ep=8, dp=8), 3000)
    tp8 = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=8, ep=8), 3000)
    assert dp8.deployment is not None and tp8.deployment is not None
    per_dp8 = kv_bytes_per_sequence_per_gpu(dp8.deployment, 3000)
    per_tp8 = kv_bytes_per_sequence_per_gpu(tp8.deployment, 3000)
    # 61 layers · (512 + 64) latent elements · 1 byte (fp8 KV) · 3000 tokens
    assert per_tp8 == pytest.approx(61 * 576 * 3000)
    assert per_dp8 == pytest.approx(per_tp8 / 8)
    assert dp8.max_concurrency > 4 * tp8.max_concurrency


def test_dp_decode_attention_reads_one_eighth_of_the_kv() -> None:
    # batch 256 at 3000 tokens: the TP-8 GPUs each read all 256 latents (MLA is replicated) and
    # do 1/8 of the FLOPs; a DP-8 group reads and computes its own 32 sequences
    dp8 = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=1, ep=8, dp=8), 4000)
    tp8 = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=8, ep=8), 4000)
    assert dp8.deployment is not None and tp8.deployment is not None
    dep = dp8.deployment
    c, eff = dep.costs, dep.eff
    attended = 61 * 3000.0  # 61 global layers, no window
    flops = 32 * attended * c.attention_flops_per_pair  # same per GPU under TP 8 (256 / 8)
    # (512 + 64) latent elements, fp8, read at no fewer than the set's kv_read_min_bytes
    read_tp8 = 256 * attended * 576 * max(1.0, eff.kv_read_min_bytes)
    peak, hbm = dep.peak_flops_attention, dep.hbm_bytes_per_s

    def roofline(b: float, items: float) -> float:
        # the KV stream of n (sequence, latent head) pairs reaches memory · n / (n + half)
        saturation = items / (items + eff.kv_items_half)
        return max(flops / (peak * eff.attention), b / (hbm * eff.memory * saturation))

    a_tp = float(decode_step(tp8.deployment, 256, 3000).attention_s)
    a_dp = float(decode_step(dep, 256, 3000).attention_s)
    assert a_tp == pytest.approx(roofline(read_tp8, 256), rel=1e-9)
    assert a_dp == pytest.approx(roofline(read_tp8 / 8, 32), rel=1e-9)
    assert a_tp / a_dp > 4  # memory-bound under TP; DP moves it toward the FLOP roof


def test_dp_expert_flops_match_a_full_split() -> None:
    # in a balanced DP step every GPU does 1/8 of the expert FLOPs, as under TP 8: a decode step
    # at batch 8 has one sequence per DP group; the GEMM FLOPs per GPU are the dense part of
    # one token plus 1/8 of the routed-expert part of 8 tokens = the TP-1 cost of 1 token
    dp8 = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=1, ep=8, dp=8), 4000)
    one = _resolve("deepseek-r1", "dgx-h200", "fp8", Parallelism(tp=8), 4000)
    assert dp8.deployment is not None and one.deployment is not None
    c = dp8.deployment.costs
    tokens = 8.0
    dense = 2.0 * (tokens / 8) * c.dense_linear_params
    experts = 2.0 * tokens * c.moe_layers * c.top_k * c.expert_params / 8
    head = 2.0 * (tokens / 8) * c.lm_head_params
    assert dense + experts + head == pytest.approx(
        2.0 * (tokens / 8) * (c.active_linear_params + c.lm_head_params)
    )


def test_ep_all_to_all_crosses_nodes_with_dp() -> None:
    gpu, system = _catalog().hardware("dgx-h100")
    assert system is not None
    inside = links(gpu, system, Parallelism(tp=1, ep=8, dp=8), 7e-6)
    assert inside.ep is not None and inside.ep.name == "nvlink"
    across = links(gpu, system, Parallelism(tp=1, ep=16, dp=16), 7e-6)
    assert across.ep == Link("network", system.inter_node_bandwidth_bytes_per_s, 25e-6)
    assert across.tp.name == "nvlink"  # TP 1 inside one GPU group
    # the all-to-all per MoE layer (dispatch + combine): each GPU sends its group's 16 tokens ·
    # top-8 · 7168 hidden · 2 bytes = 1,835,008 bytes; 58 MoE layers (3 dense first)
    r8 = _resolve("deepseek-r1", "dgx-h100", "fp8", Parallelism(tp=1, ep=8, dp=8), 3000)
    r16 = _resolve("deepseek-r1", "dgx-h100", "fp8", Parallelism(tp=1, ep=16, dp=16), 3000)
    assert r8.deployment is not None and r16.deployment is not None
    msg = 16 * 8 * 7168 * 2.0
    for res, n, batch in ((r8, 8, 128), (r16, 16, 256)):
        dep = res.deployment
        assert dep is not None and dep.ep_link is not None
        expected = 2 * 58 * alltoall_time(msg, n, dep.ep_link, dep.eff.comm)
        assert float(decode_step(dep, batch, 2500).comm_s) == pytest.approx(expected, rel=1e-9)
    c8 = float(decode_step(r8.deployment, 128, 2500).comm_s)
    c16 = float(decode_step(r16.deployment, 256, 2500).comm_s)
    assert c16 > 3 * c8  # 50 GB/s NIC and 25 µs alpha vs 450 GB/s NVLink


def test_dp_off_changes_nothing() -> None:
    a = _resolve("mixtral-8x7b", "dgx-h100", "fp8", Parallelism(tp=4, ep=2), 3000)
    b = _resolve("mixtral-8x7b", "dgx-h100", "fp8", Parallelism(tp=4, ep=2, dp=1), 3000)
    assert a.deployment == b.deployment and a.deployment is not None
    assert a.deployment.ep_link is None


# ---------------------------------------------------------------------------------------------
# Rack-scale NVLink domain (GB200 NVL72)
# ---------------------------------------------------------------------------------------------


def test_nvl72_is_one_72_gpu_nvlink_domain() -> None:
    gpu, system = _catalog().hardware("gb200-nvl72")
    assert system is not None and system.nvlink_domain_size == 72 and system.gpus_per_node == 4
    hw = HardwareOption(gpu, system)
    assert hw.instance_span(False) == 4
    assert hw.instance_span(True) == 72
    # 64 GPUs (16 trays) still talk over NVLink: 1800 GB/s bidirectional -> 900 per direction
    wide = links(gpu, system, Parallelism(tp=1, ep=64, dp=64), 7e-6)
    assert wide.ep is not None and wide.ep.name == "nvlink" and wide.ep.bytes_per_s == 900e9


def test_span_nvlink_domain_lets_the_planner_try_rack_wide_instances() -> None:
    c = _catalog()
    args = (c.model("deepseek-r1"), [c.hardware("gb200-nvl72")], ["fp4"], 2000, 1000, 40.0)
    lim = Limits(ttft_s=3.0, itl_s=0.03)
    narrow = plan_loose(*args, lim, _est(), tps=[1], pps=[1], dps=[1, 4, 16])
    wide = plan_loose(*args, lim, _est(), tps=[1], pps=[1], dps=[1, 4, 16], span_nvlink_domain=True)
    # without the span a 16-GPU instance is "multi-node" and only tried when no 4-GPU tray fits
    assert narrow.chosen is not None
    assert max(p.gpus_per_instance for p in narrow.feasible) == 4
    assert any(p.gpus_per_instance == 16 for p in wide.feasible)
    wide16 = [p for p in wide.feasible if p.gpus_per_instance == 16]
    assert all(p.candidate.par.dp == 16 for p in wide16)


# ---------------------------------------------------------------------------------------------
# StreamingLLM KV cap (item 6)
# ---------------------------------------------------------------------------------------------


def test_kv_cap_cuts_kv_per_sequence_to_the_window() -> None:
    # Llama-3.1-8B FP8 KV: 32 layers · 2 · 8 heads · 128 · 1 byte = 65536 bytes per token;
    # 32768 tokens capped at 4 + 4092 = 4096 tokens -> 1/8
    full = _resolve("llama-3.1-8b", "h100-sxm", "fp8", Parallelism(1), 32768)
    capped = _resolve("llama-3.1-8b", "h100-sxm", "fp8", Parallelism(1), 32768, cap=(4, 4092))
    assert full.deployment is not None and capped.deployment is not None
    assert kv_bytes_per_sequence_per_gpu(full.deployment, 32768) == 65536 * 32768
    assert kv_bytes_per_sequence_per_gpu(capped.deployment, 32768) == 65536 * 4096
    assert capped.max_concurrency >= 8 * full.max_concurrency
    # decode reads the cap, not the context: attention time at 32k = attention time at 4096
    a_cap = float(decode_step(capped.deployment, 16, 32768).attention_s)
    a_4k = float(decode_step(full.deployment, 16, 4096).attention_s)
    assert a_cap == pytest.approx(a_4k, rel=1e-12)
    # below the cap nothing changes
    assert kv_bytes_per_sequence_per_gpu(capped.deployment, 2000) == 65536 * 2000


def test_kv_cap_prefill_pairs_and_flops() -> None:
    costs = _est().costs(_catalog().model("llama-3.1-8b"))
    cap = capped_costs(costs, 4, 4092)
    # causal pairs with a 4096 window over 32768 tokens: 4096·4097/2 + (32768 − 4096)·4096
    pairs = 4096 * 4097 / 2 + (32768 - 4096) * 4096
    assert causal_pairs(32768, 4096) == pairs
    attention = costs.attention_flops_per_pair * costs.num_layers
    linear = 2.0 * costs.active_linear_params * 32768 + 2.0 * costs.lm_head_params
    assert prefill_flops(cap, 32768) == pytest.approx(linear + attention * pairs)
    assert decode_flops(cap, 1, 32768) == pytest.approx(decode_flops(costs, 1, 4096))


def test_kv_cap_keeps_the_models_own_sliding_window() -> None:
    # Gemma-3-27B: 62 layers, 5 of 6 local with a 1024-token window -> 52 local + 10 global;
    # a 8192-token cap leaves local layers at 1024 and global ones at 8192 (not 32768)
    res = _resolve("gemma-3-27b", "h100-sxm", "fp8", Parallelism(1), 32768, cap=(0, 8192))
    assert res.deployment is not None
    c = res.deployment.costs
    assert (c.local_layers, c.global_layers, c.window) == (52, 10, 1024)
    per_token_layer = c.kv_elements_per_token_layer * 1.0  # fp8
    expected = (10 * 8192 + 52 * 1024) * per_token_layer
    assert kv_bytes_per_sequence_per_gpu(res.deployment, 32768) == pytest.approx(expected)


def test_kv_cap_never_needs_more_gpus_in_the_plan() -> None:
    c = _catalog()
    args = (c.model("llama-3.1-8b"), [c.hardware("dgx-h100")], ["fp8"], 30000, 2000, 20.0)
    lim = Limits(ttft_s=5.0, itl_s=0.03)
    full = plan_loose(*args, lim, _est(), tps=[1, 2], pps=[1]).chosen
    capped = plan_loose(*args, lim, _est((4, 4092)), tps=[1, 2], pps=[1]).chosen
    assert full is not None and capped is not None
    assert capped.gpus < full.gpus


# ---------------------------------------------------------------------------------------------
# Context-parallel prefill (item 6)
# ---------------------------------------------------------------------------------------------


def test_context_parallel_prefill_splits_linear_and_attention_work() -> None:
    res = _resolve("llama-3.1-8b", "h100-sxm", "bf16", Parallelism(1), 100000)
    dep = res.deployment
    assert dep is not None
    isl, cp = 100000.0, 4
    chunk = prefill(dep, 1, isl / cp)
    full = prefill(dep, 1, isl)
    # NVLink ring: each hop moves a 25k-token KV chunk per layer, hidden behind attention
    ring = links(res.candidate.gpu, None, Parallelism(tp=cp), dep.eff.comm_latency_s).tp
    t = prefill_step_s(dep, 1, isl, cp, ring)
    expected = (
        float(chunk.gemm_s)
        + float(full.attention_s) / cp  # 1/cp of the causal pairs per group (load-balanced)
        + float(chunk.comm_s)
        + float(chunk.overhead_s)
    )
    assert t == pytest.approx(expected, rel=1e-9)
    t1 = prefill_step_s(dep, 1, isl)
    assert t1 / cp < t < t1  # sub-linear speed-up: weights re-read by every group
    assert t1 / t > 3.0  # at 100k tokens attention dominates: close to 4x


# ---------------------------------------------------------------------------------------------
# Disaggregated prefill / decode (item 1)
# ---------------------------------------------------------------------------------------------


def test_prompt_kv_bytes_and_transfer_time() -> None:
    costs = _est().costs(_catalog().model("llama-3.1-70b"))
    # 8000 tokens · 80 layers · 2 · 8 KV heads · 128 · 1 byte (fp8) = 1.31072 GB
    kv = prompt_kv_bytes(costs, 1.0, 8000)
    assert kv == 8000 * 80 * 2 * 8 * 128
    link = Link("network", 50e9, NETWORK_LATENCY_S)
    # 2 GPUs send their halves in parallel: 25 µs + 1.31072e9 / 100e9 = 13.1322 ms
    assert kv_transfer_time(kv, 2, link) == pytest.approx(25e-6 + 1.31072e9 / 100e9)
    assert kv_transfer_time(0.0, 2, link) == 0.0


def _disagg(
    isl: int = 8000,
    osl: int = 500,
    peak: float = 20.0,
    hw: str = "dgx-h100",
    limits: Limits | None = None,
) -> DisaggResult:
    c = _catalog()
    space = SearchSpace(c.model("llama-3.1-70b"), (c.hardware(hw),), ["fp8"], pps=[1])
    pool = PoolSpec(space)
    q = Question(space, isl, osl, limits or Limits(ttft_s=2.0, itl_s=0.03))
    return plan_disaggregated(q, pool, pool, peak, _est())


def test_disaggregated_e2e_limit_splits_the_budget() -> None:
    # sequential mode: only E2E counts; decode sized for (E2E − 2 · fastest prefill) / 499,
    # prefill gets what the decode pool's ITL leaves
    result = _disagg(limits=Limits(e2e_s=20.0, mode="sequential"))
    d = result.chosen
    assert d is not None, result.reason
    assert d.e2e_s <= 20.0
    assert d.e2e_s == pytest.approx(d.ttft_s + 499 * d.itl_s)
    tighter = _disagg(limits=Limits(e2e_s=14.0, mode="sequential")).chosen
    assert tighter is not None and tighter.e2e_s <= 14.0
    assert tighter.gpus >= d.gpus  # a tighter limit never needs fewer GPUs
    # an E2E limit below the fastest possible answer is infeasible, with a reason
    none = _disagg(limits=Limits(e2e_s=1.0, mode="sequential"))
    assert none.chosen is None and none.reason


def test_disaggregated_plan_meets_limits_and_is_maximal() -> None:
    result = _disagg()
    d = result.chosen
    assert d is not None, result.reason
    pre, dec = d.prefill, d.decode
    # TTFT = 1.5 · T(p) + KV transfer; E2E = TTFT + (OSL − 1) · ITL
    assert d.ttft_s == pytest.approx(PREFILL_TTFT_STEPS * pre.step_s + d.kv_transfer_s)
    assert d.e2e_s == pytest.approx(d.ttft_s + 499 * d.itl_s)
    assert d.ttft_s <= 2.0 and d.itl_s <= 0.03
    # KV over the NIC (separate DGX servers): 1.31 GB / (min GPUs · 50 GB/s) + 25 µs
    streams = min(pre.gpus_per_instance, dec.gpus_per_instance)
    assert d.kv_link == "network"
    assert d.kv_transfer_s == pytest.approx(25e-6 + 1.31072e9 / (streams * 50e9))
    # pool sizes: ceil(peak / rate), rates p / T(p) and b / ((OSL − 1) · ITL)
    assert pre.rate == pytest.approx(pre.batch / pre.step_s)
    assert dec.rate == pytest.approx(dec.batch / (499 * dec.step_s))
    assert pre.instances == math.ceil(20.0 / pre.rate)
    assert dec.instances == math.ceil(20.0 / dec.rate)
    assert d.ratio == f"{pre.instances}P{dec.instances}D"
    assert d.gpus == pre.instances * pre.gpus_per_instance + dec.instances * dec.gpus_per_instance
    # maximal operating points: one more prompt / sequence misses the budget
    dep_d = _resolve("llama-3.1-70b", "dgx-h100", "fp8", dec.candidate.par, 8500).deployment
    assert dep_d is not None
    assert decode_itl_s(dep_d, dec.batch, 8000, 500) == pytest.approx(dec.step_s)
    assert decode_itl_s(dep_d, dec.batch + 1, 8000, 500) > 0.03
    dep_p = _resolve("llama-3.1-70b", "dgx-h100", "fp8", pre.candidate.par, 8000).deployment
    assert dep_p is not None
    assert PREFILL_TTFT_STEPS * prefill_step_s(dep_p, pre.batch + 1, 8000) + d.kv_transfer_s > 2.0


def test_disaggregation_beats_aggregation_for_long_prompts_and_tight_itl() -> None:
    # 8000-token prompts stall an aggregated instance's decode steps (ITL 30 ms, TTFT 2 s);
    # separate pools need far fewer GPUs (model: 60 vs 200)
    c = _catalog()
    d = _disagg().chosen
    agg = plan_loose(
        c.model("llama-3.1-70b"),
        [c.hardware("dgx-h100")],
        ["fp8"],
        8000,
        500,
        20.0,
        Limits(ttft_s=2.0, itl_s=0.03),
        _est(),
        pps=[1],
    ).chosen
    assert d is not None and agg is not None
    assert d.gpus < 0.5 * agg.gpus


def test_pools_scale_independently() -> None:
    # 4x longer answers: the decode pool grows, the prefill pool does not
    short, long = _disagg(osl=250).chosen, _disagg(osl=1000).chosen
    assert short is not None and long is not None
    assert long.decode.gpus > 2 * short.decode.gpus
    assert long.prefill.gpus == short.prefill.gpus
    # double the peak: both pools about double (ceil rounding)
    base, double = _disagg(peak=10.0).chosen, _disagg(peak=20.0).chosen
    assert base is not None and double is not None
    assert double.prefill.instances in (2 * base.prefill.instances - 1, 2 * base.prefill.instances)
    assert double.decode.instances <= 2 * base.decode.instances


def test_kv_goes_over_nvlink_inside_a_rack() -> None:
    d = _disagg(hw="gb200-nvl72").chosen
    assert d is not None
    assert d.kv_link == "nvlink"  # both pools in the rack's 72-GPU NVLink domain
    streams = min(d.prefill.gpus_per_instance, d.decode.gpus_per_instance)
    dep = _resolve("llama-3.1-70b", "gb200-nvl72", "fp8", Parallelism(1), 8000).deployment
    assert dep is not None
    alpha = dep.eff.comm_latency_s
    assert d.kv_transfer_s == pytest.approx(alpha + 1.31072e9 / (streams * 900e9))
    net = _disagg().chosen
    assert net is not None and d.kv_transfer_s < net.kv_transfer_s / 5


def test_disaggregated_pools_are_paid_and_powered_in_whole_servers() -> None:
    """Each pool rents whole 8-GPU Lambda B200 instances ($6.69 per GPU-hour, catalog) and draws
    the wall power of every server it pays for, as an aggregated plan does."""
    d = _disagg(hw="lambda-8x-b200", peak=5.0).chosen
    assert d is not None
    for pool in (d.prefill, d.decode):
        paid = math.ceil(pool.gpus / 8) * 8
        assert pool.cost_per_hour_usd == pytest.approx(6.69 * paid)
        assert pool.power_watts is not None and pool.power_watts > 0
    assert d.cost_per_hour_usd == pytest.approx(
        6.69 * 8 * (math.ceil(d.prefill.gpus / 8) + math.ceil(d.decode.gpus / 8))
    )
    # one DGX H100 server draws 10.2 kW at the wall (catalog); a pool pays for whole servers
    h = _disagg(hw="dgx-h100", peak=5.0).chosen
    assert h is not None
    assert h.prefill.power_watts == pytest.approx(10_200 * h.prefill.servers)
