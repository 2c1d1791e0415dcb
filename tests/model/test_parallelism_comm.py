"""Parallelism validity (exact reasons), KV sharding and the alpha-beta collective times, plus
which link a deployment's collectives use. Expected values are worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.comm import Link, allreduce_latency, allreduce_time, alltoall_time, p2p_time
from inferencesize.deployment import links
from inferencesize.latency import allreduce_time_array, alltoall_time_array, p2p_time_array
from inferencesize.outcomes import SplitConstraint, SplitProblem
from inferencesize.parallelism import (
    Parallelism,
    enumerate_splits,
    invalid_reason,
    kv_share_per_gpu,
    layers_per_stage,
    split_problem,
    valid_splits,
)
from inferencesize.transformer import ModelCosts, model_costs


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def costs(catalog: Catalog, ident: str) -> ModelCosts:
    return model_costs(catalog.model(ident))


# ---------------------------------------------------------------------------------------------
# invalid_reason
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "par", "reason"),
    [
        # Llama-3.1-70B: 64 heads, 8 KV heads, 80 layers
        ("llama-3.1-70b", Parallelism(tp=3), "tp 3 does not divide 64 attention heads"),
        ("llama-3.1-70b", Parallelism(tp=0), "tp, pp and ep must be at least 1"),
        ("llama-3.1-70b", Parallelism(tp=1, pp=81), "pp 81 exceeds 80 layers"),
        ("llama-3.1-70b", Parallelism(tp=8, ep=2), "ep 2 needs a mixture-of-experts model"),
        # Phi-3-medium: 40 heads, 10 KV heads; tp 4 divides 40 but not 10
        ("phi-3-medium", Parallelism(tp=4), "tp 4 does not divide 10 KV heads"),
        # Qwen2.5-7B: 28 heads, 4 KV heads; tp 7 divides 28, exceeds 4 and 7 % 4 = 3
        (
            "qwen2.5-7b",
            Parallelism(tp=7),
            "tp 7 is not a multiple of 4 KV heads (cannot replicate them evenly)",
        ),
        # Mixtral-8x7B: 8 experts, 32 heads, 8 KV heads
        (
            "mixtral-8x7b",
            Parallelism(tp=2, ep=4),
            "ep 4 must divide tp 2 (experts share the TP GPUs)",
        ),
        ("mixtral-8x7b", Parallelism(tp=16, ep=16), "ep 16 does not divide 8 experts"),
    ],
)
def test_invalid_reason_messages(
    catalog: Catalog, model: str, par: Parallelism, reason: str
) -> None:
    assert invalid_reason(costs(catalog, model), par) == reason


@pytest.mark.parametrize(
    ("model", "par"),
    [
        ("llama-3.1-70b", Parallelism(tp=8)),
        ("llama-3.1-70b", Parallelism(tp=16)),  # 16 = 2 · 8 KV heads: each head on 2 GPUs
        ("llama-3.1-70b", Parallelism(tp=4, pp=80)),  # one layer per stage
        ("mixtral-8x7b", Parallelism(tp=8, ep=8)),
        ("mixtral-8x7b", Parallelism(tp=4, ep=2)),
        ("deepseek-v3", Parallelism(tp=8, ep=8)),  # MLA: 1 latent "KV head", replicated
        ("qwen2.5-7b", Parallelism(tp=4)),
    ],
)
def test_valid_splits_have_no_reason(catalog: Catalog, model: str, par: Parallelism) -> None:
    assert invalid_reason(costs(catalog, model), par) is None


def test_valid_splits_enumerates_powers_of_two(catalog: Catalog) -> None:
    c = costs(catalog, "llama-3.1-70b")
    # tp, pp in {1, 2, 4, 8} with tp · pp ≤ 8: 4 + 3 + 2 + 1 = 10 splits, dense so ep = 1
    splits = valid_splits(c, 8)
    assert len(splits) == 10
    assert {(p.tp, p.pp) for p in splits} == {
        (1, 1), (1, 2), (1, 4), (1, 8), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (8, 1)
    }  # fmt: skip
    assert all(p.ep == 1 and p.gpus <= 8 for p in splits)
    # Mixtral adds ep ≤ tp dividing tp and the 8 experts: tp 8 -> ep 1, 2, 4, 8
    moe = valid_splits(costs(catalog, "mixtral-8x7b"), 8, pps=[1])
    assert sorted(p.ep for p in moe if p.tp == 8) == [1, 2, 4, 8]


def test_split_problem_is_typed_with_the_count_it_breaks(catalog: Catalog) -> None:
    c = costs(catalog, "llama-3.1-70b")  # 64 heads, 8 KV heads, 80 layers
    assert split_problem(c, Parallelism(tp=3)) == SplitProblem(
        SplitConstraint.TP_DIVIDES_HEADS, tp=3, pp=1, ep=1, dp=1, count=64
    )
    pp = split_problem(c, Parallelism(tp=1, pp=81))
    assert pp is not None and pp.constraint is SplitConstraint.PP_AT_MOST_LAYERS
    assert pp.count == c.num_layers == 80
    assert split_problem(c, Parallelism(tp=8)) is None
    moe = split_problem(costs(catalog, "mixtral-8x7b"), Parallelism(tp=16, ep=16))
    assert moe is not None and (moe.constraint, moe.count) == (
        SplitConstraint.EP_DIVIDES_EXPERTS,
        8,
    )


def test_enumerate_splits_keeps_the_invalid_ones_with_their_reason(catalog: Catalog) -> None:
    c = costs(catalog, "llama-3.1-70b")
    # auto on 8 GPUs: the same 10 splits as valid_splits, none invalid
    auto = enumerate_splits(c, 8)
    assert [p for p, _ in auto] == valid_splits(c, 8)
    assert all(why is None for _, why in auto)
    # tp 3 with pp auto: 3 · pp ≤ 8 -> pp 1, 2; both break "tp divides 64 heads"
    three = enumerate_splits(c, 8, tps=[3])
    assert [(p.tp, p.pp) for p, _ in three] == [(3, 1), (3, 2)]
    assert {why.message for _, why in three if why} == {"tp 3 does not divide 64 attention heads"}
    assert valid_splits(c, 8, tps=[3]) == []
    # ep 2 on a dense model: every split enumerated, each "needs a mixture-of-experts model"
    dense_ep = enumerate_splits(c, 8, eps=[2])
    assert len(dense_ep) == 10
    assert all(w is not None and w.constraint is SplitConstraint.EP_NEEDS_MOE for _, w in dense_ep)


def test_parallelism_label_and_gpus() -> None:
    assert Parallelism(4, 2, 2).gpus == 8
    assert Parallelism(4, 2, 2).label() == "tp4 pp2 ep2"
    assert Parallelism(8).label() == "tp8"


def test_layers_per_stage_rounds_up() -> None:
    c = ModelCosts(
        num_layers=80, hidden_size=8192, dense_linear_params=0, expert_params=0,
        moe_layers=0, num_experts=0, top_k=0, embedding_params=0, lm_head_params=0,
        attention_flops_per_pair=0, global_layers=80, local_layers=0, window=0,
        kv_elements_per_token_layer=0, num_kv_heads=8, num_attention_heads=64,
    )  # fmt: skip
    assert layers_per_stage(c, 1) == 80
    assert layers_per_stage(c, 4) == 20
    assert layers_per_stage(c, 3) == 27  # ceil(80 / 3) = ceil(26.67)


# ---------------------------------------------------------------------------------------------
# KV share per GPU
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "share"),
    [
        (1, 1.0),  # all 8 heads
        (2, 4 / 8),
        (4, 2 / 8),
        (8, 1 / 8),  # one head per GPU
        (16, 1 / 8),  # 16 GPUs > 8 heads: each GPU still keeps one whole head (replicated)
    ],
)
def test_kv_share_per_gpu_gqa(catalog: Catalog, tp: int, share: float) -> None:
    assert kv_share_per_gpu(costs(catalog, "llama-3.1-405b"), tp) == share


def test_kv_share_per_gpu_mla_is_replicated(catalog: Catalog) -> None:
    c = costs(catalog, "deepseek-v3")
    assert c.num_kv_heads == 1
    assert kv_share_per_gpu(c, 8) == 1.0  # the latent is on every TP rank


# ---------------------------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------------------------

NVLINK = Link("nvlink", 450e9, 5e-6)


def test_allreduce_time_hand_computed() -> None:
    # ring volume: 2 (n − 1) / n of the message per GPU = 2 · 7/8 · 1 MB = 1.75 MB; alpha of
    # a log2(8) = 3-deep barrier: t = 3 · 5 µs + 1.75e6 / 450e9 = 15e-6 + 3.888...e-6 s
    expected = 3 * 5e-6 + 2 * 7 / 8 * 1e6 / 450e9
    assert allreduce_time(1e6, 8, NVLINK) == pytest.approx(expected, rel=1e-12)
    assert allreduce_time(1e6, 8, NVLINK) == pytest.approx(18.8889e-6, rel=1e-4)
    # half the link efficiency doubles the bandwidth term: 15e-6 + 7.777...e-6
    assert allreduce_time(1e6, 8, NVLINK, 0.5) == pytest.approx(
        3 * 5e-6 + 2 * 7 / 8 * 1e6 / 225e9, rel=1e-12
    )
    # 2 GPUs move 2 · 1/2 = the whole message once with one alpha, like a point-to-point send
    assert allreduce_time(1e6, 2, NVLINK) == pytest.approx(p2p_time(1e6, NVLINK), rel=1e-12)
    # the fixed cost grows with the barrier's depth, not the peer count: 1, 2, 3 alphas for
    # 2, 4, 8 GPUs, 6 for a 64-GPU NVLink domain (a ring's 63 hops would be 63)
    assert [allreduce_latency(n, NVLINK) / 5e-6 for n in (1, 2, 4, 8, 64)] == pytest.approx(
        [0, 1, 2, 3, 6]
    )


def test_alltoall_and_p2p_hand_computed() -> None:
    # all-to-all keeps 1/n: 7/8 · 1 MB / 450 GB/s = 1.9444e-6 s, plus 5 µs
    assert alltoall_time(1e6, 8, NVLINK) == pytest.approx(5e-6 + 7 / 8 * 1e6 / 450e9, rel=1e-12)
    # point-to-point sends the whole message: 1e6 / 450e9 = 2.2222e-6 s, plus 5 µs
    assert p2p_time(1e6, NVLINK) == pytest.approx(5e-6 + 1e6 / 450e9, rel=1e-12)
    assert p2p_time(1e6, NVLINK, 0.5) == pytest.approx(5e-6 + 1e6 / 225e9, rel=1e-12)


def test_collectives_are_free_on_one_gpu_or_empty_messages() -> None:
    assert allreduce_time(1e6, 1, NVLINK) == 0.0
    assert alltoall_time(1e6, 1, NVLINK) == 0.0
    assert allreduce_time(0.0, 8, NVLINK) == 0.0
    assert alltoall_time(0.0, 8, NVLINK) == 0.0
    assert p2p_time(0.0, NVLINK) == 0.0


def test_vectorised_collectives_match_the_scalar_ones() -> None:
    messages = np.array([0.0, 1e3, 1e6, 3e7])
    ar = allreduce_time_array(messages, 8, NVLINK, 0.7)
    a2a = alltoall_time_array(messages, 8, NVLINK, 0.7)
    p2p = p2p_time_array(messages, NVLINK, 0.7)
    for i, msg in enumerate(messages):
        assert ar[i] == pytest.approx(allreduce_time(msg, 8, NVLINK, 0.7), rel=1e-12)
        assert a2a[i] == pytest.approx(alltoall_time(msg, 8, NVLINK, 0.7), rel=1e-12)
        assert p2p[i] == pytest.approx(p2p_time(msg, NVLINK, 0.7), rel=1e-12)
    assert np.all(allreduce_time_array(messages, 1, NVLINK, 0.7) == 0.0)


# ---------------------------------------------------------------------------------------------
# Which link the collectives use
# ---------------------------------------------------------------------------------------------


def test_links_of_an_h100_sxm(catalog: Catalog) -> None:
    gpu = catalog.gpu("h100-sxm")
    # no system: an SXM part is assumed to sit in an 8-GPU NVLink domain;
    # 900 GB/s bidirectional -> 450 GB/s per direction, alpha as given
    inside = links(gpu, None, Parallelism(tp=8), 7e-6)
    assert inside.tp == Link("nvlink", 450e9, 7e-6)
    assert inside.pp == inside.tp
    # TP 16 leaves the domain: the all-reduce runs in two levels (NVLink inside each 8-GPU
    # domain, each GPU's 1/8 slice over its own 12.5 GB/s fallback NIC between the two), with
    # the network's 25 µs alpha. Per byte: 2·(1/2)/(8 · 12.5e9) + 2·(7/8)/450e9 = 1.3889e-11 s;
    # the flat ring's 2·(15/16) per byte at that time: 135 GB/s per GPU.
    outside = links(gpu, None, Parallelism(tp=16), 7e-6)
    assert outside.tp.name == "network" and outside.tp.latency_s == 25e-6
    assert outside.tp.bytes_per_s == pytest.approx(135e9, rel=1e-9)
    # a pipeline across the two domains is a point-to-point send over one NIC
    assert links(gpu, None, Parallelism(tp=8, pp=2), 7e-6).pp == Link("network", 12.5e9, 25e-6)


def test_links_of_a_dgx_h100_pipeline_across_nodes(catalog: Catalog) -> None:
    gpu, system = catalog.hardware("dgx-h100")
    assert system is not None
    result = links(gpu, system, Parallelism(tp=8, pp=2), 7e-6)
    assert result.tp.name == "nvlink"
    assert result.tp.bytes_per_s == system.intra_node_bandwidth_bytes_per_s / 2
    # 16 GPUs span two nodes: pipeline sends go over the per-GPU NIC bandwidth
    assert result.pp.name == "network"
    assert result.pp.bytes_per_s == system.inter_node_bandwidth_bytes_per_s


# ---------------------------------------------------------------------------------------------
# Parallel attention + MLP: one TP all-reduce per layer
# ---------------------------------------------------------------------------------------------


def test_parallel_attention_models_reduce_once_per_layer(catalog: Catalog) -> None:
    # Falcon (parallel_attn) and GPT-J add the attention and MLP outputs before reducing
    assert costs(catalog, "falcon-180b").allreduces_per_layer == 1
    assert costs(catalog, "gpt-j-6b").allreduces_per_layer == 1
    assert costs(catalog, "llama-2-70b").allreduces_per_layer == 2


def test_parallel_attention_halves_the_tp_communication(catalog: Catalog) -> None:
    from dataclasses import replace

    from inferencesize.estimate import Candidate, Estimator
    from inferencesize.latency import step_time

    gpu, system = catalog.hardware("dgx-h100")
    model = catalog.model("falcon-180b")
    cand = Candidate(model, gpu, system, "fp8", "fp8", Parallelism(8))
    dep = Estimator(catalog.efficiency_set("trtllm-0.9-static")).resolve(cand, 2048).deployment
    assert dep is not None
    sequential = replace(dep, costs=replace(dep.costs, allreduces_per_layer=2))
    one = step_time(dep, 0.0, 0.0, 4.0, 1024.0)
    two = step_time(sequential, 0.0, 0.0, 4.0, 1024.0)
    # hand check: 80 layers × 1 all-reduce of 4 × 1024 tokens × 14848 × 2 bytes over 8 GPUs
    message = 4 * 1024 * 14848 * 2.0
    per = allreduce_time_array(message, 8, dep.tp_link, dep.eff.comm)
    assert float(one.comm_s) == pytest.approx(80 * float(per), rel=1e-9)
    assert float(two.comm_s) == pytest.approx(2 * float(one.comm_s), rel=1e-9)
    assert float(one.gemm_s) == float(two.gemm_s)  # only the communication differs
