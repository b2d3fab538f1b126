"""A hybrid model's serving cache as its own code keeps it (``probes.cache_trace``): K and V in the layers that attend,
a fixed state per sequence in its Mamba, gated delta-net and convolution layers, nothing in its MLP-only layers. The
expected bytes are computed here from each config's sizes, independently of the trace."""

from __future__ import annotations

import json
import math

import pytest

from advisor.predictor import Predictor
from knowledge.catalog import kv_groups, resolve_model, resolve_platform
from knowledge.schema import ServeCase
from models.kv_cache import attention_layers, kv_cache_bytes, paged_cache_bytes, state_bytes
from models.serve_memory import kv_pool_bytes
from models.serve_setup import make_setup
from models.serving import pass_time
from probes.cache_trace import traced_cache

CONFIGS = "knowledge/data/configs/"


def _config(name: str) -> dict:
    return json.loads(open(CONFIGS + name + ".json").read())


@pytest.fixture(scope="module")
def predictor():
    return Predictor()


def test_a_gated_delta_net_layer_keeps_its_states_and_no_kv(predictor):
    """Qwen3-Next: 3 of 12 layers attend (2 KV heads x 256, bf16); each of the other 9 keeps its short convolution's
    last 4 inputs over 8,192 channels (bf16) and an fp32 recurrent state per value head (32 x 128 x 128). The config's
    count had every layer caching K and V and no state."""
    cfg = _config("qwen3-next-12l")
    arch = predictor.serving_layout(resolve_model(CONFIGS + "qwen3-next-12l.json"))
    channels = 2 * cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"] + cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]
    state = channels * cfg["linear_conv_kernel_dim"] * 2 + cfg["linear_num_value_heads"] * cfg["linear_key_head_dim"] * cfg["linear_value_head_dim"] * 4
    kv_per_token = 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    assert attention_layers(arch) == 3
    assert kv_cache_bytes(arch, 1, 16, 4096) == pytest.approx(3 * 4096 * kv_per_token + 9 * state)


def test_mamba_mlp_and_attention_layers_each_keep_their_own(predictor):
    """Nemotron-H (12-layer cut: 5 Mamba-2, 5 MLP, 2 attention): a Mamba-2 layer keeps its fp32 SSM state (the config's
    mamba_ssm_cache_dtype) per head (128 x 64 x 128) and its convolution window (inner + 2 x groups x state channels,
    4 positions, bf16); an MLP layer keeps nothing."""
    cfg = _config("nemotron-h-12l")
    arch = predictor.serving_layout(resolve_model(CONFIGS + "nemotron-h-12l.json"))
    ssm = cfg["mamba_num_heads"] * cfg["mamba_head_dim"] * cfg["ssm_state_size"] * 4
    conv = (cfg["mamba_num_heads"] * cfg["mamba_head_dim"] + 2 * cfg["n_groups"] * cfg["ssm_state_size"]) * cfg["conv_kernel"] * 2
    heads = cfg["num_key_value_heads"] * (cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"])
    assert attention_layers(arch) == 2
    assert kv_cache_bytes(arch, 1, 16, 1000) == pytest.approx(2 * 1000 * 2 * heads * 2 + 5 * (ssm + conv))


def test_a_family_s_own_cache_class_is_read_layer_by_layer():
    """MiniMax keeps its linear-attention states in a list of its own beside the attention layers' cache: each layer's
    share is what it adds while it runs, whatever the class indexes."""
    traced = traced_cache(_config("minimax-defaults-4l"))  # full, linear, full, linear
    assert [layer.token_bytes > 0 for layer in traced] == [True, False, True, False]
    assert traced[1].state_bytes > 0 and traced[0].state_bytes == 0


def test_a_dense_model_s_layout_is_unchanged_by_its_trace():
    """Every layer of a dense model attends and keeps no state: the trace agrees with the config's count."""
    for name in ("qwen3-8b", "gemma-3-1b", "deepseek-v2-lite"):
        cfg = _config(name)
        assert kv_groups(cfg, traced_cache(cfg)) == kv_groups(cfg)


def test_an_engine_s_pool_holds_a_hybrid_s_sequences_by_their_own_cache(predictor):
    """vLLM pages Qwen3-Next's cut as its hybrid manager does: a gated delta-net layer's state in bf16 (its 3-position
    convolution over 8,192 channels and 32 x 128 x 128 scan, 1.10 MB) is one page, so the attention block grows from 64
    to 576 tokens (576 x 2 KiB >= 1.10 MB); 3 attention and 9 recurrent layers make groups of 3 layers, a block id one
    page of each; an 8,193-token sequence takes 15 attention blocks and one in each of the 3 recurrent groups. That is
    3.2x the sequences the every-layer count allowed; a decode step reads that cache (and writes the states back),
    not twelve layers of K/V."""
    cfg = _config("qwen3-next-12l")
    plat = resolve_platform("h100x1")
    cal = predictor.serving_calibration(plat)
    own = predictor.serving_layout(resolve_model(CONFIGS + "qwen3-next-12l.json"))
    case = ServeCase(id="q", hardware="h100x1", model=CONFIGS + "qwen3-next-12l.json", task="serve", batch_size=64,
                     prompt_len=8192)
    got = predictor.predict(case)
    s = make_setup(own, plat, cal)
    channels = 2 * cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"] + cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]
    state = 2 * (channels * (cfg["linear_conv_kernel_dim"] - 1) + cfg["linear_num_value_heads"] * cfg["linear_key_head_dim"] * cfg["linear_value_head_dim"])
    token = 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    block = s.engine.kv_block_tokens * math.ceil(state / (s.engine.kv_block_tokens * token))
    assert block == 576
    page = block * token
    per_seq = 3 * page * (math.ceil(8193 / block) + 3)
    assert got.max_batch_size == int(kv_pool_bytes(s) // per_seq)
    every = own.model_copy(update={"kv_groups": None})
    assert got.max_batch_size > 3 * int(kv_pool_bytes(s) // kv_cache_bytes(every, 1, 16, 8192))
    read_own, read_every = (pass_time(make_setup(a, plat, cal), 64, 1, 8192, decode=True).kv_s for a in (own, every))
    assert read_own < 0.5 * read_every


def test_a_state_is_kept_as_the_engine_keeps_it(predictor):
    """transformers and SGLang keep a gated delta-net's scan state in fp32, vLLM in the model's bf16; Nemotron-H's
    config names fp32 for its SSM state (mamba_ssm_cache_dtype), which all keep."""
    qwen = predictor.serving_layout(resolve_model(CONFIGS + "qwen3-next-12l.json"))
    nemo = predictor.serving_layout(resolve_model(CONFIGS + "nemotron-h-12l.json"))
    assert state_bytes(qwen, 1, vllm=True) == pytest.approx(state_bytes(qwen, 1) * 1114112 / 2162688)
    assert state_bytes(nemo, 1, vllm=True) == state_bytes(nemo, 1) > 0
    plat = resolve_platform("h100x1")
    cal = predictor.serving_calibration(plat)
    vllm, sglang = (make_setup(qwen, plat, cal, engine=e).kv_bytes(1000) for e in ("vllm", "sglang"))
    assert sglang - vllm == pytest.approx(state_bytes(qwen, 1) - state_bytes(qwen, 1, vllm=True))  # SGLang: fp32 scans


def test_sliding_and_full_layers_are_paged_in_groups_of_the_full_layers():
    """Gemma-3-1B (4 full, 22 sliding layers of 512 tokens): vLLM groups its layers by 4, the 22 sliding ones in six
    groups (two empty layers), each sliding group holding the blocks of the last 511 tokens and the newest."""
    arch = Predictor().serving_layout(resolve_model(CONFIGS + "gemma-3-1b.json"))
    token = arch.kv_groups[0].values_per_token * 2
    got = paged_cache_bytes(arch, 1, 16, 4096, 64, vllm=True)
    assert got == 4 * 64 * token * (4096 // 64 + 6 * (math.ceil(511 / 64) + 1))
    assert paged_cache_bytes(arch, 1, 16, 4096, 64, vllm=False) == kv_cache_bytes(arch, 1, 16, 4096)


def test_the_transformers_runtime_of_a_hybrid_says_which_kernels_its_memory_assumes(predictor):
    """transformers' torch fallback for a Mamba-2 scan asked for 128 GiB-1 TiB where the count said 8 x 2,048 tokens
    fit: a hybrid served by transformers says which packages the count assumes; a dense model says nothing of it."""
    def note(name: str) -> str | None:
        case = ServeCase(id="n", hardware="h100x1", model=CONFIGS + name + ".json", task="serve", batch_size=8,
                         prompt_len=2048, engine="transformers")
        return predictor.predict(case).note

    assert "mamba-ssm" in (note("nemotron-h-12l") or "")
    assert note("qwen3-8b") is None


def test_the_serving_table_says_what_a_sequence_keeps(predictor):
    """`recommend --task serve` prints a hybrid's cache as it is (K/V in 3 of 12 layers, nine layers of state) and a
    sliding model's windows; a model whose every layer keeps every position gets no line."""
    from advisor.serve_recommend import cache_summary, cache_text

    qwen = cache_text(cache_summary(predictor.serving_layout(resolve_model(CONFIGS + "qwen3-next-12l.json"))))
    assert "K/V in 3 of 12 layers" in qwen and "(9 recurrent layers, as vLLM keeps it)" in qwen
    assert "9.6 MiB of recurrent state" in qwen  # 9 x 1.11 MB in bf16 (transformers keeps 18.6 MiB: fp32 scans)
    assert "576-token blocks" in qwen
    assert "18.6 MiB" in cache_text(cache_summary(predictor.serving_layout(
        resolve_model(CONFIGS + "qwen3-next-12l.json")), "transformers"))
    assert "22 layers keep the last 512 tokens" in cache_text(cache_summary(predictor.serving_layout(
        resolve_model(CONFIGS + "gemma-3-1b.json"))))
    assert cache_text(cache_summary(predictor.serving_layout(resolve_model("llama3-8b")))) is None


def test_layers_that_share_an_earlier_layer_s_cache_keep_none_of_their_own():
    """Gemma-3n's last num_kv_shared_layers read an earlier layer's K/V: transformers' declared layer types stop before
    them, and the layout (where the model's own prefill is not read) gives them no cache instead of failing."""
    import transformers

    conf = transformers.AutoConfig.for_model("gemma3n_text")
    cfg = {k: v for k, v in conf.to_dict().items() if not k.startswith("_")} | {"model_type": "gemma3n_text"}
    groups = kv_groups(cfg)
    assert sum(g["layers"] for g in groups) == conf.num_hidden_layers
    assert sum(g["layers"] for g in groups if not g["values_per_token"]) == conf.num_kv_shared_layers


def test_a_recurrent_state_splits_over_every_tensor_parallel_rank(predictor):
    """Qwen3-Next has 2 KV heads but 32 value heads in its delta-net layers: at TP 4 each GPU keeps a quarter of every
    state (vLLM divides the state's heads by the TP size), though each keeps one of the 2 KV heads, half the K/V."""
    arch = predictor.serving_layout(resolve_model(CONFIGS + "qwen3-next-12l.json"))
    assert state_bytes(arch, 4) == pytest.approx(state_bytes(arch, 1) / 4)
    per_token = kv_cache_bytes(arch, 4, 16, 1001) - kv_cache_bytes(arch, 4, 16, 1000)
    assert per_token == pytest.approx((kv_cache_bytes(arch, 1, 16, 1001) - kv_cache_bytes(arch, 1, 16, 1000)) / 2)
