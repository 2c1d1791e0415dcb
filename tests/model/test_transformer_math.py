"""Hand-checked model math (inferencesize.transformer): parameter counts, KV-cache bytes,
sliding windows, MLA, MoE expert coverage, causal (query, key) pairs and FLOPs.

Every expected number is worked out by hand in the comment next to it from the model's
config.json dimensions (the catalog YAML); nothing here is copied from the code's output.
"""

from __future__ import annotations

import pytest

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.specs import ModelSpec
from inferencesize.transformer import (
    active_params,
    attended_tokens,
    attention_cap,
    attention_pairs,
    attention_params_per_layer,
    causal_pairs,
    decode_cache_elements_read,
    decode_extra_flops,
    decode_flops,
    experts_touched,
    indexer_params_per_layer,
    is_linear_attention_layer,
    is_moe_layer,
    kv_bytes_per_token,
    kv_cache_bytes,
    linear_attention_layers,
    linear_attention_params,
    linear_state_bytes,
    local_attention_layers,
    model_costs,
    mtp_params,
    num_moe_layers,
    prefill_extra_flops,
    prefill_flops,
    total_params,
)
from inferencesize.units import GB, KIB, MIB


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def model(catalog: Catalog, ident: str) -> ModelSpec:
    return catalog.model(ident)


# ---------------------------------------------------------------------------------------------
# KV cache
# ---------------------------------------------------------------------------------------------


def test_llama_31_70b_kv_cache_per_token_is_320_kib(catalog: Catalog) -> None:
    m = model(catalog, "llama-3.1-70b")
    # K and V · 80 layers · 8 KV heads · head_dim 128 · 2 bytes = 327,680 B = 320 KiB
    assert kv_cache_bytes(m, 2.0, 1) == 2 * 80 * 8 * 128 * 2 == 327_680
    assert kv_cache_bytes(m, 2.0, 1) == 320 * KIB
    # no window: linear in the sequence length, 4096 tokens = 4096 · 320 KiB = 1.25 GiB
    assert kv_cache_bytes(m, 2.0, 4096) == 4096 * 327_680 == 1_342_177_280
    # an FP8 cache halves it: 163,840 B per token
    assert kv_cache_bytes(m, 1.0, 1) == 163_840
    # the average per token does not depend on the length without a window
    assert kv_bytes_per_token(m, 2.0, 1) == kv_bytes_per_token(m, 2.0, 10_000) == 327_680


def test_deepseek_v3_mla_caches_one_latent_per_layer(catalog: Catalog) -> None:
    m = model(catalog, "deepseek-v3")
    # MLA: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements per layer per token
    # 61 layers · 576 · 2 B (bf16) = 70,272 B per token
    assert kv_cache_bytes(m, 2.0, 1) == 61 * (512 + 64) * 2 == 70_272
    # not the nominal 128 KV heads · head_dim 192 of the config (61 · 2 · 128 · 192 · 2 B)
    assert kv_cache_bytes(m, 2.0, 1) != 61 * 2 * 128 * 192 * 2
    # FP8 cache: 61 · 576 · 1 B = 35,136 B
    assert kv_cache_bytes(m, 1.0, 1) == 35_136


def test_mistral_7b_sliding_window_caps_kv_at_4096_tokens(catalog: Catalog) -> None:
    m = model(catalog, "mistral-7b")
    per_token = 32 * 2 * 8 * 128 * 2  # 32 layers · K,V · 8 KV heads · 128 · 2 B = 131,072 B
    assert kv_cache_bytes(m, 2.0, 1) == per_token == 131_072
    # every layer windowed at 4096 tokens: 8192 tokens hold only 4096 tokens of KV
    # 131,072 B · 4096 = 536,870,912 B = 512 MiB
    assert kv_cache_bytes(m, 2.0, 8192) == per_token * 4096 == 512 * MIB
    assert kv_cache_bytes(m, 2.0, 8192) == kv_cache_bytes(m, 2.0, 4096)
    # below the window it is still linear: 2048 tokens = 256 MiB
    assert kv_cache_bytes(m, 2.0, 2048) == 256 * MIB
    # average per token at 8192 = 512 MiB / 8192 = 65,536 B, half the full per-token size
    assert kv_bytes_per_token(m, 2.0, 8192) == 65_536
    assert local_attention_layers(m) == 32


def test_gpt_oss_alternating_windows_cap_half_the_layers(catalog: Catalog) -> None:
    m = model(catalog, "gpt-oss-120b")
    # 36 layers, sliding(128) / full alternating: every 2 layers 1 is local -> 18 local
    assert local_attention_layers(m) == 18
    per_layer_token = 2 * 8 * 64 * 2  # K,V · 8 KV heads · head_dim 64 · 2 B = 2,048 B
    # 100 tokens < window: all 36 layers hold 100 tokens = 36 · 100 · 2048 = 7,372,800 B
    assert kv_cache_bytes(m, 2.0, 100) == 36 * 100 * per_layer_token == 7_372_800
    # 8192 tokens: 18 full layers · 8192 + 18 windowed layers · 128 tokens
    # = 18 · 2048 · (8192 + 128) = 36,864 · 8,320 = 306,708,480 B
    assert kv_cache_bytes(m, 2.0, 8192) == 18 * per_layer_token * (8192 + 128) == 306_708_480
    # the 20B sibling: 24 layers -> 12 local
    assert local_attention_layers(model(catalog, "gpt-oss-20b")) == 12


def test_gemma_3_five_local_of_every_six_with_a_remainder(catalog: Catalog) -> None:
    m = model(catalog, "gemma-3-27b")
    # 62 layers, pattern of 6 with 5 local: divmod(62, 6) = (10, 2)
    # -> 10 · 5 + min(2, 5) = 52 local layers, 10 global
    assert local_attention_layers(m) == 52
    # per layer per token: K,V · 16 KV heads · 128 · 2 B = 8,192 B; window 1024
    # 4096 tokens: (10 · 4096 + 52 · 1024) · 8192 = (40,960 + 53,248) · 8192 = 771,751,936 B
    assert kv_cache_bytes(m, 2.0, 4096) == (10 * 4096 + 52 * 1024) * 8192 == 771_751_936


# ---------------------------------------------------------------------------------------------
# Parameter counts
# ---------------------------------------------------------------------------------------------


def test_llama_31_8b_parameters_and_bf16_weights(catalog: Catalog) -> None:
    m = model(catalog, "llama-3.1-8b")
    # per layer: Q and O 2 · 4096 · 4096 = 33,554,432; K and V 2 · 4096 · 1024 = 8,388,608
    #            SwiGLU MLP 3 · 4096 · 14336 = 176,160,768; 2 RMSNorms 2 · 4096 = 8,192
    #            -> 218,112,000; · 32 layers = 6,979,584,000
    # embeddings + untied lm_head 2 · 128,256 · 4096 = 1,050,673,152; final norm 4,096
    # total = 6,979,584,000 + 1,050,673,152 + 4,096 = 8,030,261,248
    assert total_params(m) == 8_030_261_248
    assert active_params(m) == total_params(m)  # dense
    # bf16 weights: 8,030,261,248 · 2 B = 16,060,522,496 B ≈ 16.06 GB
    assert total_params(m) * 2 == 16_060_522_496
    assert total_params(m) * 2 / GB == pytest.approx(16.06, abs=0.005)

    costs = model_costs(m)
    # linear layers only (attention + MLP, no norms, no tables): 32 · 218,103,808
    assert costs.dense_linear_params == 32 * (41_943_040 + 176_160_768) == 6_979_321_856
    assert costs.embedding_params == costs.lm_head_params == 128_256 * 4096 == 525_336_576
    assert costs.total_linear_params == costs.active_linear_params == costs.dense_linear_params


def test_mixtral_8x7b_total_and_active_parameters(catalog: Catalog) -> None:
    m = model(catalog, "mixtral-8x7b")
    # per layer: attention 41,943,040 (as Llama-3-8B); one expert 3 · 4096 · 14336 = 176,160,768;
    # router 4096 · 8 = 32,768; norms 8,192
    # total per layer = 41,943,040 + 8 · 176,160,768 + 32,768 + 8,192 = 1,451,270,144
    # · 32 = 46,440,644,608; + tables 2 · 32,000 · 4096 = 262,144,000; + final norm 4,096
    assert total_params(m) == 46_440_644_608 + 262_144_000 + 4_096 == 46_702_792_704
    # active per layer = 41,943,040 + 2 · 176,160,768 + 32,768 + 8,192 = 394,305,536
    # · 32 = 12,617,777,152; + 262,148,096 = 12,879,925,248 (the published "12.9B")
    assert active_params(m) == 12_617_777_152 + 262_148_096 == 12_879_925_248
    costs = model_costs(m)
    assert costs.expert_params == 176_160_768
    assert (costs.moe_layers, costs.num_experts, costs.top_k) == (32, 8, 2)


def test_deepseek_v3_first_three_layers_are_dense(catalog: Catalog) -> None:
    m = model(catalog, "deepseek-v3")
    assert [is_moe_layer(m, i) for i in range(5)] == [False, False, False, True, True]
    assert num_moe_layers(m) == 61 - 3 == 58
    # published 671B total / 37B active (the latter excludes the 0.93B input table)
    assert total_params(m) / 1e9 == pytest.approx(671.03, abs=0.01)
    assert active_params(m) / 1e9 == pytest.approx(37.55, abs=0.01)


# ---------------------------------------------------------------------------------------------
# Mixture of experts: distinct experts read per layer
# ---------------------------------------------------------------------------------------------


def test_experts_touched_one_token_is_top_k() -> None:
    # 256 · (1 − (1 − 8/256)^1) = 256 · 8/256 = 8
    assert experts_touched(256, 8, 1) == pytest.approx(8.0, rel=1e-12)


def test_experts_touched_two_tokens_hand_computed() -> None:
    # 1 − 8/256 = 0.96875; 0.96875² = 0.9384765625; 256 · (1 − 0.9384765625) = 15.75
    # (two tokens rarely pick the same expert: 16 − 8 · 8/256 = 15.75)
    assert experts_touched(256, 8, 2) == pytest.approx(15.75, rel=1e-12)


def test_experts_touched_saturates_at_all_experts() -> None:
    # 0.96875^10000 = exp(10000 · ln 0.96875) = exp(−317.5) ≈ 0 -> every expert is read
    assert experts_touched(256, 8, 10_000) == pytest.approx(256.0, abs=1e-9)
    values = [experts_touched(256, 8, t) for t in (1, 2, 4, 16, 64, 256, 1024)]
    assert values == sorted(values)
    assert all(v <= 256 for v in values)
    # a dense model reads no experts
    assert experts_touched(0, 0, 100) == 0.0


# ---------------------------------------------------------------------------------------------
# Causal pairs and FLOPs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "pairs"),
    [(1, 1), (2, 3), (4, 10), (10, 55), (4096, 8_390_656)],  # L (L + 1) / 2
)
def test_causal_pairs_without_window(length: int, pairs: int) -> None:
    assert causal_pairs(length) == pairs
    assert causal_pairs(length, window=0) == pairs


def test_causal_pairs_with_window() -> None:
    # sum_{i=1..10} min(i, 4) = 1 + 2 + 3 + 4 + 6 · 4 = 34 = 4 · 5 / 2 + (10 − 4) · 4
    assert causal_pairs(10, 4) == 34 == sum(min(i, 4) for i in range(1, 11))
    # shorter than the window: the unwindowed L (L + 1) / 2
    assert causal_pairs(3, 4) == 6
    assert causal_pairs(4, 4) == 10
    # 8192 tokens, window 4096: 4096 · 4097 / 2 + 4096 · 4096 = 8,390,656 + 16,777,216
    assert causal_pairs(8192, 4096) == 25_167_872


def test_attention_flops_per_pair(catalog: Catalog) -> None:
    # GQA: QK^T and AV, 2 FLOPs per multiply-add -> 4 · heads · head_dim = 4 · 32 · 128
    assert model_costs(model(catalog, "llama-3.1-8b")).attention_flops_per_pair == 16_384
    # MLA: 2 · heads · (qk_nope + qk_rope + v) = 2 · 128 · (128 + 64 + 128) = 81,920
    ds = model_costs(model(catalog, "deepseek-v3"))
    assert ds.attention_flops_per_pair == 2 * 128 * (128 + 64 + 128) == 81_920
    # a decode step at context 1000 adds 81,920 · 61 layers · 1000 keys = 4,997,120,000 FLOPs
    extra = decode_flops(ds, 1, 1000) - decode_flops(ds, 1, 0)
    assert extra == pytest.approx(4_997_120_000, rel=1e-12)


def test_one_token_prefill_equals_a_decode_step(catalog: Catalog) -> None:
    costs = model_costs(model(catalog, "llama-3.1-8b"))
    # linear: 2 · 6,979,321,856 + lm_head 2 · 525,336,576 = 13,958,643,712 + 1,050,673,152
    linear = 15_009_316_864
    assert decode_flops(costs, 1, 0) == linear
    # one prompt token attends itself: 1 pair · 16,384 FLOPs · 32 layers = 524,288
    assert prefill_flops(costs, 1) == linear + 524_288 == 15_009_841_152
    # a decode step attending one key costs the same
    assert decode_flops(costs, 1, 1) == prefill_flops(costs, 1)
    # batch scales both linearly
    assert prefill_flops(costs, 1, batch=8) == 8 * 15_009_841_152
    assert decode_flops(costs, 8, 1) == 8 * 15_009_841_152


def test_prefill_flops_of_a_long_prompt(catalog: Catalog) -> None:
    costs = model_costs(model(catalog, "llama-3.1-8b"))
    # 4096 tokens: linear 2 · 6,979,321,856 · 4096 = 57,174,604,644,352
    #            + lm_head on the last token 2 · 525,336,576 = 1,050,673,152
    #            + attention 16,384 · 32 layers · 8,390,656 pairs = 4,399,120,252,928
    #            = 61,574,775,570,432
    assert prefill_flops(costs, 4096) == pytest.approx(61_574_775_570_432, rel=1e-12)
    # with 1024 cached tokens only 3072 are new: pairs 8,390,656 − 1024 · 1025 / 2 = 7,865,856
    # 2 · 6,979,321,856 · 3072 = 42,880,953,483,264; + 1,050,673,152
    # + 16,384 · 32 · 7,865,856 = 4,123,973,910,528 -> 47,005,978,066,944
    expected = 2 * 6_979_321_856 * 3072 + 1_050_673_152 + 16_384 * 32 * 7_865_856
    assert expected == 47_005_978_066_944
    assert prefill_flops(costs, 4096, cached=1024) == pytest.approx(expected, rel=1e-12)


def test_sliding_window_limits_prefill_and_decode_attention(catalog: Catalog) -> None:
    costs = model_costs(model(catalog, "mistral-7b"))
    assert (costs.global_layers, costs.local_layers, costs.window) == (0, 32, 4096)
    linear = 2 * costs.active_linear_params + 2 * costs.lm_head_params
    # decode at context 10,000 attends only the 4096-token window in all 32 layers
    assert decode_flops(costs, 1, 10_000) == pytest.approx(linear + 16_384 * 32 * 4096, rel=1e-12)
    assert decode_flops(costs, 1, 10_000) == decode_flops(costs, 1, 4096)
    # prefill of 8192 tokens: attention over causal_pairs(8192, 4096) = 25,167,872 pairs
    attention = prefill_flops(costs, 8192) - (
        2 * costs.active_linear_params * 8192 + 2 * costs.lm_head_params
    )
    assert attention == pytest.approx(16_384 * 32 * 25_167_872, rel=1e-12)


def test_fixed_routing_reads_the_same_experts_at_any_batch() -> None:
    # placeholder-weight benchmarks: every token goes to the same top-k experts, so a decode
    # step streams k experts per MoE layer at batch 1 and at batch 64 alike
    from dataclasses import replace

    from inferencesize.catalog import load_catalog
    from inferencesize.estimate import Candidate, Estimator
    from inferencesize.latency import decode_step
    from inferencesize.parallelism import Parallelism

    cat = load_catalog()
    gpu, system = cat.hardware("h100-sxm")
    cand = Candidate(cat.model("mixtral-8x7b"), gpu, system, "fp16", "fp16", Parallelism(2))
    eset = cat.efficiency_set("trtllm-0.9-static")
    real = Estimator(eset).resolve(cand, 256).deployment
    fake = Estimator(eset, fixed_routing=True).resolve(cand, 256).deployment
    assert real is not None and fake is not None and fake.costs.fixed_routing
    assert fake.costs == replace(real.costs, fixed_routing=True)
    # batch 1: both read top_k = 2 experts per layer
    assert float(decode_step(fake, 1, 200).total_s) == pytest.approx(
        float(decode_step(real, 1, 200).total_s), rel=1e-12
    )
    # batch 64: real routing touches 8 × (1 − 0.75^64) ≈ 8 experts, fixed routing still 2
    grow_real = float(decode_step(real, 64, 200).total_s) / float(decode_step(real, 1, 200).total_s)
    grow_fake = float(decode_step(fake, 64, 200).total_s) / float(decode_step(fake, 1, 200).total_s)
    assert grow_real > 2.0 > grow_fake


# ---------------------------------------------------------------------------------------------
# Linear attention, sparse attention, output gate, MTP (structure of the 2025-26 models)
# ---------------------------------------------------------------------------------------------


def test_qwen3_next_layer_kinds_and_weights_by_hand(catalog: Catalog) -> None:
    m = model(catalog, "qwen3-next-80b-a3b")
    # full_attention_interval 4: layers 3, 7, ..., 47 are gated attention, the other 36 linear
    assert [i for i in range(48) if not is_linear_attention_layer(m, i)] == list(range(3, 48, 4))
    assert linear_attention_layers(m) == 36
    # Gated DeltaNet, h = 2048, key width 16·128 = 2048, value width 32·128 = 4096:
    # in_proj_qkvz 2048·(2·2048 + 2·4096) = 25,165,824; in_proj_ba 2048·2·32 = 131,072;
    # conv (2·2048 + 4096)·4 = 32,768; dt_bias + A_log 2·32 = 64; gated norm 128;
    # out_proj 4096·2048 = 8,388,608
    assert linear_attention_params(m) == 33_718_464
    # gated attention: q_proj 2048·(16·256·2) = 16,777,216 (query and its gate); k, v
    # 2·2048·2·256 = 2,097,152; o_proj 16·256·2048 = 8,388,608; q/k norms 2·256
    assert attention_params_per_layer(m) == 27_263_488
    costs = model_costs(m)
    assert (costs.global_layers, costs.local_layers, costs.linear_layers) == (12, 0, 36)


def test_qwen3_next_state_is_constant_and_kv_grows_on_12_layers(catalog: Catalog) -> None:
    m = model(catalog, "qwen3-next-80b-a3b")
    # state per layer: 32 value heads · 128 · 128 fp32 = 2,097,152 B, plus the conv's last
    # 3 inputs of 8192 channels in bf16 = 49,152 B; 36 layers: 77,266,944 B per sequence
    assert linear_state_bytes(m) == 2_146_304
    state = 36 * 2_146_304
    # KV of the 12 gated-attention layers: 2 · 2 KV heads · 256 · 2 B = 2048 B per layer-token
    for tokens in (1, 4096, 262_144):
        assert kv_cache_bytes(m, 2.0, tokens) == 12 * 2048 * tokens + state
    # the per-token figure leaves the constant state out
    assert kv_bytes_per_token(m, 2.0, context=1) == 12 * 2048


def test_linear_layers_do_work_linear_in_tokens(catalog: Catalog) -> None:
    costs = model_costs(model(catalog, "qwen3-next-80b-a3b"))
    # recurrence per token per layer: 3 · 2 · 32 · 128 · 128 = 3,145,728 plus the conv
    # 2 · 4 · 8192 = 65,536
    assert costs.linear_flops_per_token_layer == 3_211_264
    assert prefill_extra_flops(costs, 1000) == 36 * 3_211_264 * 1000
    assert prefill_extra_flops(costs, 3000, 1000) == 36 * 3_211_264 * 2000
    # decode: the same per token, whatever the context
    assert decode_extra_flops(costs, 10) == decode_extra_flops(costs, 100_000) == 36 * 3_211_264
    # the softmax attention of the 12 full layers still sees every token
    assert attended_tokens(costs, 100_000) == 12 * 100_000


def test_dsa_kv_holds_every_token_and_the_indexer_key(catalog: Catalog) -> None:
    v3, v32 = model(catalog, "deepseek-v3"), model(catalog, "deepseek-v3.2")
    # MLA latent 512 + rope 64 = 576 elements; DSA adds the indexer key, 128: 704
    assert kv_bytes_per_token(v3, 2.0, context=1) == 61 * 576 * 2
    assert kv_bytes_per_token(v32, 2.0, context=1) == 61 * 704 * 2
    # the cache is not windowed: 100k tokens hold 100k entries per layer
    assert kv_cache_bytes(v32, 1.0, 100_000) == 61 * 704 * 100_000
    # indexer weights per layer: wq_b 1536 · 64 · 128 = 12,582,912; wk 7168 · 128 = 917,504;
    # its LayerNorm 2 · 128; weights_proj 7168 · 64 = 458,752
    assert indexer_params_per_layer(v32) == 13_959_424
    assert attention_params_per_layer(v32) == attention_params_per_layer(v3) + 13_959_424


def test_dsa_attention_is_bounded_by_top_k_and_the_indexer_scans_everything(
    catalog: Catalog,
) -> None:
    costs = model_costs(model(catalog, "deepseek-v3.2"))
    dense = model_costs(model(catalog, "deepseek-v3"))
    assert attention_cap(costs) == 2048 and attention_cap(dense) == 0
    # below top-k the two attend alike; above, DSA attends 2048 tokens on each of 61 layers
    assert attended_tokens(costs, 1000) == attended_tokens(dense, 1000) == 61 * 1000
    assert attended_tokens(costs, 100_000) == 61 * 2048
    # indexer: 2 · 64 heads · 128 per scored pair, on every cached token of every layer
    assert costs.index_flops_per_pair == 16_384
    growth = decode_flops(costs, 1, 100_000) - decode_flops(costs, 1, 50_000)
    assert growth == 61 * 50_000 * 16_384
    # decode reads the latents of the 2048 chosen tokens and every token's indexer key
    assert decode_cache_elements_read(costs, 100_000) == 61 * (2048 * 576 + 100_000 * 128)
    # prefill pairs: sum_i min(i, 2048) per layer, as a 2048-token window
    assert attention_pairs(costs, 10_000) == 61 * causal_pairs(10_000, 2048)


def test_mtp_module_weights(catalog: Catalog) -> None:
    v3 = model(catalog, "deepseek-v3")
    # one more MoE layer as layer 60, the 2h -> h projection and three norms; DeepSeek states
    # 11.5B unique MTP parameters (README_WEIGHTS.md of deepseek-ai/DeepSeek-V3)
    layer = total_params(v3) - total_params(v3.model_copy(update={"num_layers": 60}))
    assert mtp_params(v3) == layer + 2 * 7168 * 7168 + 3 * 7168
    assert mtp_params(v3) == pytest.approx(11.5e9, rel=0.02)
    # not part of the total the vendor states (671B)
    assert total_params(v3) == pytest.approx(671e9, rel=0.001)
    assert mtp_params(model(catalog, "kimi-k2.5")) == 0


@pytest.mark.parametrize(
    "ident",
    [
        "qwen3-next-80b-a3b",
        "qwen3.5-397b-a17b",
        "qwen3-coder-480b-a35b",
        "deepseek-v3.2",
        "glm-5",
        "glm-4.7",
        "minimax-m2",
    ],
)
def test_structured_models_total_within_2_percent_of_published(
    catalog: Catalog, ident: str
) -> None:
    m = model(catalog, ident)
    assert m.published_params_b is not None
    assert total_params(m) / 1e9 == pytest.approx(m.published_params_b, rel=0.02)
