"""The fake-tensor trace of a model's own code (probes.trace): counts that can be checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.errors import AdvisorError
from knowledge.traces import TraceVariant
import probes.trace as trace_module
from probes.trace import trace_model

QWEN3_TOY = {"model_type": "qwen3", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 3,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
             "tie_word_embeddings": True}
PHI3_TOY = {"model_type": "phi3", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000}


def _real_counts(config: dict) -> tuple[int, int]:
    import torch
    import transformers

    from probes.hf_model import config_from_dict

    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(config_from_dict(config))
    return sum(p.numel() for p in m.parameters()), m.get_input_embeddings().weight.numel()


def _granite_4_h_toy() -> dict:
    """Granite-4.0-H's defaults, narrow, with 11 layers: two attention layers (the third and tenth) among Mamba-2 ones,
    placed without a short period."""
    from transformers import AutoConfig

    base = {k: v for k, v in AutoConfig.for_model("granitemoehybrid").to_dict().items()
            if not k.startswith("_") and k != "transformers_version"}
    types = ["mamba"] * 11
    types[2] = types[9] = "attention"
    return {**base, "hidden_size": 128, "intermediate_size": 256, "shared_intermediate_size": 256,
            "num_hidden_layers": 11, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
            "num_local_experts": 4, "num_experts_per_tok": 2, "mamba_n_heads": 8, "mamba_d_head": 32, "mamba_d_state": 16,
            "mamba_n_groups": 1, "mamba_chunk_size": 64, "layer_types": types}


def test_parameters_are_the_models_own() -> None:
    t = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    total, emb = _real_counts(QWEN3_TOY)
    assert t.params.total == total and t.params.embedding == emb and t.params.lm_head == 0  # tied
    # q/k/v/o + gate/up/down per layer: what quantization would replace
    h, q, kv, i = 128, 4 * 32, 2 * 32, 256
    assert t.params.quantizable == 3 * (h * q + 2 * h * kv + q * h + 3 * h * i)


def test_lora_as_peft_resolves_its_targets() -> None:
    r = 8
    t = trace_model(PHI3_TOY, TraceVariant(trains="adapters", lora_targets=["qkv_proj"], lora_rank=r))
    h = 128
    assert t.params.adapter == 2 * (h * r + r * 3 * h) == t.params.trainable  # fused qkv: out = 3h
    every = trace_model(PHI3_TOY, TraceVariant(trains="adapters", lora_targets="all-linear", lora_rank=r))
    assert every.params.adapter > t.params.adapter
    with pytest.raises(AdvisorError, match="qkv_proj.*all-linear"):
        trace_model(PHI3_TOY, TraceVariant(trains="adapters", lora_targets=["q_proj"], lora_rank=r))


def test_causal_attention_and_recompute_as_the_kernels_do() -> None:
    sdpa = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    eager = trace_model(QWEN3_TOY, TraceVariant(trains="all", attention="eager"))
    rc = trace_model(QWEN3_TOY, TraceVariant(trains="all", recompute=True))
    # fused causal attention: 2 products of 2·s·d per query head, half the square
    assert sdpa.layer.attention_flops_fwd.per_token_seq == pytest.approx(4 * 4 * 32 / 2)
    assert sdpa.layer.saved_bytes.per_token_seq == 0  # no score matrix is kept
    assert eager.layer.saved_bytes.per_token_seq > 0  # the eager softmax keeps s x s per head
    # checkpointing keeps one 16-bit hidden state per token and layer
    assert rc.layer.saved_bytes.per_token == pytest.approx(2 * 128)
    assert rc.layer.kernels_bwd > sdpa.layer.kernels_bwd  # the forward runs again inside backward


STARCODER2_TOY = {"model_type": "starcoder2", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "use_bias": True}


def test_lora_with_recompute_on_a_layernorm_model() -> None:
    """CUDA autocast runs LayerNorm in fp32; the checkpointed layer recomputes it inside backward, and must get the
    fp32 it saved in forward (StarCoder2 LoRA with recomputation was refused: "cannot trace ... CheckpointError")."""
    v = TraceVariant(trains="adapters", lora_targets=["q_proj", "v_proj"], lora_rank=8)
    plain = trace_model(STARCODER2_TOY, v)
    rc = trace_model(STARCODER2_TOY, v.model_copy(update={"recompute": True}))
    assert rc.layer.saved_bytes.per_token < plain.layer.saved_bytes.per_token
    assert rc.layer.kernels_bwd > plain.layer.kernels_bwd  # the forward runs again inside backward


def test_the_layer_pattern_is_the_one_transformers_derives() -> None:
    """Gemma-2's hub config.json has no ``layer_types``; transformers alternates sliding and full layers anyway. The
    cuts must follow that pattern, or every layer is priced as a full one and the sliding layers' mask goes missing
    (its attention measured 2.4x the predicted time at the window, probes/anatomy.py on an H100)."""
    from probes.trace import layer_plan

    gemma2 = {"model_type": "gemma2", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
              "sliding_window": 64}
    assert layer_plan(gemma2) == (4, 2, 2)
    assert layer_plan(QWEN3_TOY) == (3, 1, 1)
    t = trace_model(gemma2, TraceVariant(trains="all", min_seq=64))
    # past the window, half the layers (the sliding ones) get an explicit mask
    assert 0 < t.layer.masked_attention_flops_fwd.at(1, 200) < t.layer.attention_flops_fwd.at(1, 200)


def test_hand_count_agrees_with_the_trace_on_llama() -> None:
    """The hand count the catalog keeps (models.architecture) against the trace of Llama-2-7B's own code."""
    from knowledge.catalog import resolve_model
    from models.architecture import linears
    from models.step_time import KERNELS_PER_LAYER_BWD, KERNELS_PER_LAYER_FWD
    from probes.hf_model import config_dict

    arch = resolve_model("llama2-7b")
    t = trace_model(config_dict(arch), TraceVariant(trains="all"))
    assert (t.layer.kernels_fwd, t.layer.kernels_bwd) == (KERNELS_PER_LAYER_FWD, KERNELS_PER_LAYER_BWD)
    gemm = sum(g.flops.per_token for g in t.layer.gemms if g.phase == "fwd")
    assert gemm == pytest.approx(sum(lin.flops(1) for lin in linears(arch)), rel=1e-6)
    assert t.params.total == arch.param_count


def test_kv_cache_as_the_model_lays_it_out() -> None:
    """Sliding layers keep their window, latent attention its compressed vector (read through transformers)."""
    from advisor.predictor import Predictor
    from knowledge.catalog import resolve_model
    from models.kv_cache import kv_cache_bytes

    p = Predictor()
    gemma = p.serving_layout(resolve_model("knowledge/data/configs/gemma-2-9b.json"))
    full = 2 * 8 * 256 * 2  # bytes per token and layer: K and V of 8 heads of 256, bf16
    # 42 layers alternate sliding (window 4096) and full: at 32k tokens half the layers hold 4096
    assert kv_cache_bytes(gemma, 1, 16, 32768) == 21 * 32768 * full + 21 * 4096 * full
    ds = p.serving_layout(resolve_model("knowledge/data/configs/deepseek-v2-lite.json"))
    assert kv_cache_bytes(ds, 1, 16, 1000) == 27 * 1000 * (512 + 64) * 2  # latent 512 + RoPE key 64
    assert kv_cache_bytes(ds, 2, 16, 1000) == kv_cache_bytes(ds, 1, 16, 1000)  # replicated over TP ranks


NEOX_TOY = {"model_type": "gpt_neox", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 1000, "rotary_pct": 0.25, "max_position_embeddings": 2048}


def test_a_model_without_q_k_v_o_gets_its_own_attention_projections() -> None:
    """A LoRA case that names no target adapts the attention block's projections: q/k/v/o where the model has all
    four; else what get_peft_model picks for the type when given no target (GPT-NeoX); else the linears of the
    model's attention block (Phi-3's fused qkv_proj with o_proj, not o_proj alone, which is all PEFT would find of
    q/k/v/o there)."""
    from probes.trace import default_lora_targets

    usual = ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert default_lora_targets(PHI3_TOY, usual) == ["o_proj", "qkv_proj"]
    assert default_lora_targets(QWEN3_TOY, usual) is None
    assert default_lora_targets(NEOX_TOY, usual) == ["query_key_value"]


def test_the_causal_lm_types_known_without_transformers_are_its_own() -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from knowledge.catalog import OTHER_CAUSAL_LM_TYPES

    assert set(OTHER_CAUSAL_LM_TYPES) - set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) == set()


def test_a_new_architecture_s_variants_are_traced_at_once(tmp_path, monkeypatch) -> None:
    """``recommend``'s first search on a new config traces every variant it needs in a pool, up front; the search then
    finds each one traced (none runs again) and the user's trace file holds them all."""
    import json
    import os

    from advisor.traces import TraceBook
    from knowledge.catalog import resolve_model
    from knowledge.schema import TrainCase

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})  # two workers whatever the machine
    path = tmp_path / "toy-qwen3.json"
    path.write_text(json.dumps(QWEN3_TOY))
    arch = resolve_model(str(path))
    cases = [TrainCase(id=f"c{i}", hardware="h100x1", model=str(path), task="finetune", method=m, recompute=rc,
                       seq_len=256) for i, (m, rc) in enumerate([("lora", False), ("lora", True), ("full", False)])]
    traced: list[str] = []
    book = TraceBook(on_trace=traced.append)
    book.prefetch(arch, cases)
    for case in cases:
        assert book.trace(arch, case) is not None
    assert traced == []  # nothing traced one at a time
    (held,) = (tmp_path / "traces").glob("*.json")
    assert len([k for k in json.loads(held.read_text()) if not k.startswith("_")]) == 3


GEMMA3_TOY = {"model_type": "gemma3_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 14,
              "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 1000,
              "sliding_window": 64, "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}


def test_a_long_layer_pattern_is_traced_one_layer_per_kind(monkeypatch) -> None:
    """Gemma-3's 5 sliding + 1 full pattern: one layer of each kind, then one more of each (2 + 3 + 3 layers instead of a
    6- and a 12-layer cut), each kind weighted by its share of the model's layers. The whole model's counts agree with
    the period cuts' (which weigh the kinds by the pattern, not by the model's 14 layers: 12 sliding, 2 full)."""
    import probes.trace as tr

    kinds, share = tr.layer_kinds(GEMMA3_TOY)
    assert kinds == [0, 5] and share[5] == pytest.approx(2 / 14)  # a sliding layer, then the first full one
    v = TraceVariant(trains="all", min_seq=64)
    typed = trace_model(GEMMA3_TOY, v)
    monkeypatch.setattr(tr, "layer_kinds", lambda config: None)
    period = trace_model(GEMMA3_TOY, v)
    assert typed.rest_layers == 2 and period.rest_layers == 6
    assert typed.params.total == period.params.total == _real_counts(GEMMA3_TOY)[0]
    for attr in ("other_bytes_fwd", "other_bytes_bwd", "saved_bytes", "attention_flops_fwd"):
        assert typed.total(attr, 2, 512) == pytest.approx(period.total(attr, 2, 512), rel=0.03), attr
    gemm = lambda t: sum(g.flops.at(2, 512) for g in t.rest.gemms) + (t.layers - t.rest_layers) * sum(  # noqa: E731
        g.flops.at(2, 512) for g in t.layer.gemms)
    assert gemm(typed) == pytest.approx(gemm(period), rel=1e-6)
    # the model's own split of masked (sliding) attention: 12 of 14 layers, where the pattern's average says 5 of 6
    assert typed.total("masked_attention_flops_fwd", 2, 512) < period.total("masked_attention_flops_fwd", 2, 512) * 1.03


FALCON_TOY = {"model_type": "falcon", "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False, "bias": False,
              "vocab_size": 1000, "alibi": False}
GRANITEMOE_TOY = {"model_type": "granitemoe", "hidden_size": 128, "intermediate_size": 64, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
                  "vocab_size": 1000}


def test_products_of_fp32_inputs_are_counted_apart() -> None:
    """SDPA's math path upcasts to fp32 (Falcon's multi-query attention given a mask: own H100 anatomy, fp32 cuBLAS
    products); a fused SDPA leaves none. fp32 experts under autocast (PyTorch full training of routed experts) are
    traced as CUDA runs them, one fp32 product per expert, where the fake kernel takes bf16 only."""
    falcon = trace_model(FALCON_TOY, TraceVariant(trains="adapters", lora_targets=["query_key_value"], lora_rank=8))
    assert falcon.layer.fp32_flops_fwd.per_token_seq > 0 and falcon.layer.attention_flops_fwd.per_token_seq == 0
    qwen = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    assert qwen.layer.fp32_flops_fwd.per_token_seq == 0 and qwen.layer.attention_flops_fwd.per_token_seq > 0
    moe = trace_model(GRANITEMOE_TOY, TraceVariant(trains="all", fp32_weights=True, autocast=True))
    assert moe.layer.fp32_flops_fwd.per_token > 0 and moe.layer.fp32_flops_bwd.per_token > 0


def test_a_config_in_the_family_s_own_names_is_read_as_transformers_reads_it(tmp_path) -> None:
    """Falcon's config.json names no intermediate_size (its MLP is 4 x hidden); its layers are ``h.N``: PEFT's own
    default target for the type is found there."""
    import json

    from knowledge.catalog import resolve_model
    from probes.trace import default_lora_targets

    path = tmp_path / "config.json"
    path.write_text(json.dumps(FALCON_TOY))
    arch = resolve_model(str(path))
    assert arch.intermediate_size == 4 * 128 and "intermediate_size" not in arch.hf_config
    assert default_lora_targets(FALCON_TOY, ["q_proj", "k_proj", "v_proj", "o_proj"]) == ["query_key_value"]


def test_multi_query_attention_caches_one_head() -> None:
    """Falcon-7B's config keeps num_kv_heads at its 71 query heads; its multi-query attention caches one K/V head."""
    from knowledge.catalog import kv_groups

    groups = kv_groups({**FALCON_TOY, "num_hidden_layers": 2})
    assert groups and groups[0]["values_per_token"] == 2 * 1 * (128 // 4)


def test_a_falcon_s_blocks_are_decoder_layers() -> None:
    """Falcon's layers are ``transformer.h.N``: its projections are quantized, its adapters and tensors counted per
    layer like a Llama's ``model.layers.N`` (an NF4 base was once priced and sized as bf16)."""
    lora = TraceVariant(trains="adapters", lora_targets=["query_key_value"], lora_rank=8)
    t = trace_model(FALCON_TOY, lora)
    assert t.params.quantizable > 0 and t.params.tensors_trainable_per_layer == 2
    assert any(g.quantizable for g in t.layer.gemms)


def test_eager_attention_s_products_carry_their_bytes() -> None:
    """Eager attention writes and reads the s x s scores: at a head size of 64 its products are bound by those bytes
    (Falcon-7B's eager LoRA, own H100 runs: predicted 24-30% fast on FLOPs alone). The bytes grow with the square of
    the sequence; a fused SDPA call leaves none."""
    eager = trace_model(QWEN3_TOY, TraceVariant(trains="all", attention="eager"))
    fused = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    assert eager.layer.attention_bytes_fwd.per_token_seq > 0 and eager.layer.attention_bytes_bwd.per_token_seq > 0
    assert fused.layer.attention_bytes_fwd.per_token_seq == 0


MELLUM_TOY = {"model_type": "mellum", "hidden_size": 128, "intermediate_size": 256, "moe_intermediate_size": 64,
              "num_hidden_layers": 5, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
              "vocab_size": 1000, "num_local_experts": 4, "num_experts_per_tok": 2,
              "layer_types": ["full_attention"] * 5, "mlp_layer_types": ["dense", "dense"] + ["sparse"] * 3}


def test_per_layer_config_lists_are_cut_with_the_layers() -> None:
    """transformers 5's config classes check every per-layer list (``mlp_layer_types``, ``indexer_types``...) against
    the layer count: a cut must cut them too (Mellum, DeepSeek-V3.2, EXAONE-MoE, GLM-5 were refused: "num_hidden_layers
    (1) must be equal to the number of mlp_layer_types"). Dense layers first, then routed ones: the dense prefix is cut
    whole, and each further layer is a routed one, so the whole model's parameters are the model's own."""
    from probes.trace import layer_plan

    assert layer_plan(MELLUM_TOY) == (5, 3, 1)  # 2 dense layers before the period of one routed layer
    t = trace_model(MELLUM_TOY, TraceVariant(trains="all"))
    assert t.params.total == _real_counts(MELLUM_TOY)[0]


GEMMA4_TOY = {"model_type": "gemma4_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 12,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
              "vocab_size_per_layer_input": 1000, "hidden_size_per_layer_input": 16, "sliding_window": 64,
              "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 2,
              "per_layer_config": {"05": {"head_dim": 64}, "11": {"head_dim": 64}}}


def test_layers_with_their_own_config_are_traced_as_themselves() -> None:
    """Gemma-4's full-attention layers have their own head size (``per_layer_config``, keyed by layer number): each
    kind of layer is traced with its own override, whatever layer number it gets in a cut, and transformers' rule that a
    model's last layer attends fully is kept (a cut ending in a sliding layer was refused). The KV cache reads each
    layer's own head size."""
    from knowledge.catalog import kv_groups
    from probes.trace import layer_kinds

    kinds, share = layer_kinds(GEMMA4_TOY)
    assert kinds == [0, 5] and share[5] == pytest.approx(2 / 12)
    t = trace_model(GEMMA4_TOY, TraceVariant(trains="all", min_seq=64))
    assert t.params.total == _real_counts(GEMMA4_TOY)[0]
    groups = {g["window"]: g for g in kv_groups(GEMMA4_TOY)}
    assert groups[None]["layers"] == 2 and groups[None]["values_per_token"] == 2 * 2 * 64
    assert groups[64]["layers"] == 10 and groups[64]["values_per_token"] == 2 * 2 * 32


def test_a_multimodal_checkpoint_is_predicted_as_its_language_model(tmp_path) -> None:
    """A Gemma-3-4B config.json as published: a ``gemma3`` wrapper whose ``text_config`` names only what differs from the
    text class's defaults (no head counts, no vocabulary). Its language model is what trains on text: read complete, as
    transformers reads it, and traced as that model (was: "lacks num_attention_heads, vocab_size")."""
    import json

    from knowledge.catalog import resolve_model

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3", "tie_word_embeddings": True, "text_config": {
        "hidden_size": 256, "intermediate_size": 512, "model_type": "gemma3_text", "num_hidden_layers": 4},
        "vision_config": {"hidden_size": 64, "intermediate_size": 128, "model_type": "siglip_vision_model",
                          "num_attention_heads": 2, "num_hidden_layers": 1}}))
    arch = resolve_model(str(path))
    assert arch.hf_model_type == "gemma3_text" and "language model" in arch.name
    assert (arch.num_attention_heads, arch.head_dim, arch.vocab_size) == (8, 256, 262208)  # Gemma3TextConfig's defaults
    t = trace_model(arch.hf_config, TraceVariant(trains="all", min_seq=arch.hf_config["sliding_window"]))
    assert t.params.total == _real_counts(arch.hf_config)[0]


def test_attention_dropout_is_dropped_inside_the_fused_kernel() -> None:
    """Seed-OSS's config asks for attention dropout 0.1: a GPU's fused kernels drop inside the kernel and keep only the
    RNG state. The CPU's math path would keep the s x s probabilities (Seed-OSS-36B LoRA at 2k predicted 347 GiB, 288
    of them scores; measured on an H200: 95.9 GiB)."""
    plain = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    dropped = trace_model({**QWEN3_TOY, "attention_dropout": 0.1}, TraceVariant(trains="all"))
    assert dropped.layer.saved_bytes.per_token_seq == plain.layer.saved_bytes.per_token_seq == 0
    assert dropped.layer.attention_flops_fwd == plain.layer.attention_flops_fwd


QWEN35_TOY = {"model_type": "qwen3_5_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
              "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32,
              "linear_value_head_dim": 32, "layer_types": ["linear_attention"] * 3 + ["full_attention"]}


def test_a_scan_over_chunks_launches_kernels_per_token() -> None:
    """Qwen3.5's gated delta-net layers, without their fused kernel, scan the sequence in chunks of 64 tokens, a loop
    body of kernels per chunk: the kernels a step launches grow with the sequence (a Qwen3.5-9B LoRA step at 2k tokens
    launched 53,754 kernels on an H200, probes/anatomy.py); attention's do not."""
    scan = trace_model(QWEN35_TOY, TraceVariant(trains="all"))
    assert scan.layer.kernels_seq_fwd > 0 and scan.layer.kernels_seq_bwd > scan.layer.kernels_seq_fwd
    # a chunk of 64 tokens adds the same kernels wherever it falls: the count per token is a multiple of 1/64 per layer
    per_chunk = scan.layer.kernels_seq_fwd * 64 * scan.layers / 3  # three of the four layers scan
    assert per_chunk == pytest.approx(round(per_chunk), abs=1e-6)
    plain = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    assert plain.layer.kernels_seq_fwd == plain.layer.kernels_seq_bwd == 0


def test_heads_wider_than_flash_attention_takes_are_counted_apart() -> None:
    """FlashAttention takes heads up to 256; Gemma-4's full-attention layers (512) run the memory-efficient kernel's
    generic path, whose backward measured 4x slower per FLOP than its forward on an H200 (10.5 ms and 111.9 ms for
    five layers at 2 x 4096): their FLOPs are kept apart to be priced at that kernel's rates."""
    t = trace_model(GEMMA4_TOY, TraceVariant(trains="all", min_seq=64))
    s, b = 512, 1
    wide, every = t.total("wide_attention_flops_fwd", b, s), t.total("attention_flops_fwd", b, s)
    # the two full layers' heads are 64 wide in the toy: none is wide; at 512 wide, the full layers' calls are
    assert wide == 0 < every
    wide_cfg = {**GEMMA4_TOY, "head_dim": 128, "per_layer_config": {"05": {"head_dim": 512}, "11": {"head_dim": 512}}}
    w = trace_model(wide_cfg, TraceVariant(trains="all", min_seq=64))
    full_layer = 2.0 * 4 * s * s * (512 + 512) / 2  # causal: half the square, 4 heads, q.k and p.v
    assert w.total("wide_attention_flops_fwd", b, s) == pytest.approx(2 * full_layer, rel=1e-6)
    assert w.total("masked_attention_flops_fwd", b, s) > 0  # the sliding layers' masked calls stay masked


def test_a_layerdrop_draw_read_on_the_host_is_answered() -> None:
    """OPT, XGLM and BioGPT draw ``torch.rand([])`` per layer in training and compare it with ``layerdrop`` on the host,
    which a fake tensor cannot answer ("cannot trace model_type 'opt': DataDependentOutputException"): the draw is a
    known 1.0, which drops no layer, as their configs' layerdrop of 0 never does."""
    opt = {"model_type": "opt", "hidden_size": 64, "ffn_dim": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
           "vocab_size": 1000, "word_embed_proj_dim": 64, "max_position_embeddings": 512}
    t = trace_model(opt, TraceVariant(trains="all"))
    assert t.params.total == _real_counts(opt)[0]
    assert t.layer.gemms  # the layer ran: its projections were counted


def test_attention_layers_placed_without_a_short_period_are_traced_as_themselves() -> None:
    """Granite-4.0-H places a few attention layers among its Mamba ones with no period of eight layers or fewer: each
    kind is traced once and weighted by its count (before, every layer was traced as the first, a Mamba one, and LoRA's
    q/k/v/o were "not found in this model")."""
    from probes.trace import layer_kinds

    toy = _granite_4_h_toy()
    kinds, share = layer_kinds(toy)
    assert kinds == [0, 2] and share[2] == pytest.approx(2 / 11)
    t = trace_model(toy, TraceVariant(trains="adapters", lora_targets=["q_proj", "v_proj"], lora_rank=8))
    assert t.params.total == _real_counts(toy)[0]
    assert t.params.adapter == 2 * 8 * ((128 + 4 * 32) + (128 + 2 * 32))  # the two attention layers' q and v


def test_dropout_is_one_fused_kernel_with_a_byte_mask() -> None:
    """On a GPU ATen's dropout is one kernel keeping a 1-byte mask (native_dropout); the CPU's path is four kernels and
    a mask of the input's dtype (OPT-1.3B's residual dropout: predicted 10.8% heavy on an H200, now 5.8%). OPT's layer
    drops twice, after attention and after the MLP."""
    opt = {"model_type": "opt", "hidden_size": 64, "ffn_dim": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
           "vocab_size": 1000, "word_embed_proj_dim": 64, "max_position_embeddings": 512, "dropout": 0.0}
    v = TraceVariant(trains="all", autocast=False)
    plain, dropped = trace_model(opt, v), trace_model({**opt, "dropout": 0.1}, v)
    assert dropped.layer.kernels_fwd - plain.layer.kernels_fwd == 2
    assert dropped.layer.saved_bytes.per_token - plain.layer.saved_bytes.per_token == pytest.approx(2 * 64)


def test_parameters_read_outside_their_module_are_recorded_and_zero3_refuses_the_large_ones() -> None:
    """ZeRO-3 gathers a module's own parameters when its forward starts: Qwen3.5's gated delta-net reads its Conv1d's
    weight from the layer, which the trace records (32,768 elements: under the persistence threshold of the config we
    write, so it stays whole and ZeRO-3 runs); a large parameter read that way makes ZeRO-3 a crash, not a fit."""
    import json
    from pathlib import Path

    from advisor.cases import parse_case
    from advisor.predictor import calibration_for
    from knowledge.catalog import resolve_model, resolve_platform
    from models.memory import STAGE3_PERSISTENCE_THRESHOLD
    from models.training import predict_training

    plain = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    assert plain.params_outside_module == {}
    path = Path(__file__).parents[1] / "knowledge/data/configs/qwen3.5-text.json"
    q35 = trace_model(json.loads(path.read_text()), TraceVariant(trains="all"))
    assert q35.params_outside_module == {"model.layers.N.linear_attn.conv1d.weight": 8192 * 4}
    assert 8192 * 4 < STAGE3_PERSISTENCE_THRESHOLD
    platform, arch = resolve_platform("h200x2"), resolve_model(str(path))
    cal = calibration_for(platform)
    big = q35.model_copy(update={"params_outside_module": {"model.layers.N.mixer.conv1d.weight": 10**6}})
    for zero, trace, fits in ((3, q35, True), (3, big, False), (2, big, True)):
        case = parse_case({"id": "x", "hardware": "h200x2", "model": str(path), "task": "pretrain", "zero_stage": zero,
                           "micro_batch_size": 1, "seq_len": 512})
        p = predict_training(case, arch, platform, cal, trace=trace)
        assert p.fits == fits, (zero, p.why_not_fits)
        assert (p.failure == "crash") == (not fits) and (fits or "set_z3_leaf_modules" in p.why_not_fits)


def test_lora_under_zero3_keeps_what_deepspeed_s_linear_and_fp32_adapters_keep(monkeypatch) -> None:
    """Under ZeRO-3 every projection keeps its input (DeepSpeed's memory-efficient linear) and each fp32 adapter keeps
    its own fp32 copy of its input; the trace's linear is DeepSpeed's own to the byte, and the hand count of a Llama
    layer adds what the trace adds (two GPUs, Qwen3-8B LoRA at 2048 tokens: 20.1 GiB saved under ZeRO-3, 12.2 under
    ZeRO-2)."""
    import torch
    from deepspeed.runtime.zero.linear import zero3_linear_wrap

    from advisor.traces import variant_for
    from knowledge.catalog import resolve_model, resolve_platform
    from knowledge.schema import TrainCase
    from models.memory import activation_bytes_per_token_layer
    from models.setup import derive
    from probes.hf_model import config_dict

    arch = resolve_model("tinyllama-1.1b")
    config = config_dict(arch)
    lora = dict(id="z", hardware="h200x2", model="tinyllama-1.1b", task="finetune", method="lora", gpus=2)
    z2, z3 = (TrainCase(**lora, zero_stage=z) for z in (2, 3))
    v2, v3 = variant_for(z2), variant_for(z3)
    assert v3.zero3 and not v2.zero3 and v3.key != v2.key
    plain, ours = (trace_model(config, v).layer.saved_bytes.per_token for v in (v2, v3))
    # what a ZeRO-3 engine of this process leaves behind ("This will persist unless manually reset") stays out of a
    # trace without ZeRO-3
    monkeypatch.setattr(torch.nn.functional, "linear", zero3_linear_wrap)
    assert trace_model(config, v2).layer.saved_bytes.per_token == plain
    # DeepSpeed's own function in place of ours
    monkeypatch.setattr(trace_module._Zero3Linear, "apply", staticmethod(zero3_linear_wrap))
    theirs = trace_model(config, v3).layer.saved_bytes.per_token
    h, i, hq = arch.hidden_size, arch.intermediate_size, arch.num_attention_heads * arch.head_size
    frozen_inputs = 2 * h + 2 * i  # the MLP's input and down_proj's, bf16
    fp32_copies = 4 * (3 * h + hq)  # q, k, v each cast x; o casts the attention output
    assert ours - plain == pytest.approx(frozen_inputs + fp32_copies, rel=0.02)
    assert theirs == pytest.approx(ours, rel=1e-6)
    platform = resolve_platform("h200x2")
    hand = [activation_bytes_per_token_layer(derive(c, arch, platform), eager_scores=False) for c in (z2, z3)]
    assert hand[1] - hand[0] == pytest.approx(ours - plain, rel=0.02)


def test_ddp_keeps_gradient_buckets_on_every_rank() -> None:
    """Plain PyTorch over two GPUs: DDP's buckets (fp32, rebuilt once after the first iteration) on top of one GPU's
    peak, 8 bytes per trainable parameter; none on one GPU and none under DeepSpeed."""
    from advisor.predictor import Predictor
    from knowledge.catalog import resolve_model
    from knowledge.schema import TrainCase

    p = Predictor()
    base = dict(hardware="h200x2", model="tinyllama-1.1b", task="pretrain", engine="pytorch", micro_batch_size=1)
    one, two = (p.predict(TrainCase(id=str(g), gpus=g, **base)) for g in (1, 2))
    params = resolve_model("tinyllama-1.1b").param_count
    assert (two.peak_mem_gib - one.peak_mem_gib) * 2**30 == pytest.approx(8 * params, rel=0.01)
    ds = [p.predict(TrainCase(id=f"d{g}", gpus=g, **{**base, "engine": "deepspeed"})) for g in (1, 2)]
    assert ds[1].peak_mem_gib <= ds[0].peak_mem_gib


def test_a_config_json_of_a_catalog_model_is_that_model_and_any_change_to_its_work_is_traced(tmp_path) -> None:
    """Llama-2-7B's config.json keeps the catalog's fitted hand count whatever its token ids, epsilon or rotary base;
    a key that changes the work (an activation, biases, one more layer) makes it a model of its own, traced."""
    import json

    from advisor.traces import catalog_twin, hand_counted
    from knowledge.catalog import resolve_model
    from probes.hf_model import config_dict

    base = {**config_dict(resolve_model("llama2-7b")), "rms_norm_eps": 1e-5, "bos_token_id": 7, "torch_dtype": "float16",
            "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"}, "max_position_embeddings": 8192}
    changes = ({}, {"hidden_act": "gelu"}, {"attention_bias": True}, {"num_hidden_layers": 33}, {"tie_word_embeddings": True})
    found = []
    for i, change in enumerate(changes):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps({**base, **change}))
        arch = resolve_model(str(path))
        twin = catalog_twin(arch)
        assert hand_counted(arch) == (twin is not None)
        found.append(twin.name if twin else None)
    assert found == ["llama2-7b", None, None, None, None]


def test_adapted_modules_are_counted_whatever_dtype_their_products_run_in() -> None:
    """Under ZeRO-3 PEFT's adapters stay fp32 and their products leave the bf16 GEMMs: the adapted modules (and the
    dispatch cost the fit learned per module) must not vanish with them."""
    from advisor.predictor import Predictor
    from knowledge.catalog import resolve_model, resolve_platform
    from knowledge.schema import TrainCase
    from models.setup import derive

    p = Predictor()
    arch = resolve_model(str(Path(__file__).resolve().parents[1] / "knowledge" / "data" / "configs" / "qwen3-8b.json"))
    counts = []
    for zero in (2, 3):
        case = TrainCase(id="z", hardware="h200x2", gpus=2, model="q", task="finetune", method="lora", zero_stage=zero)
        trace = p.traces.trace(arch, case)
        assert trace is not None and trace.variant.zero3 == (zero == 3)
        counts.append(derive(case, arch, resolve_platform("h200x2"), trace).adapted_modules_per_layer)
    assert counts == [4.0, 4.0]  # q, k, v and o


def test_zero3_hooks_count_every_module_a_layer_calls() -> None:
    """DeepSpeed's ZeRO-3 hooks every module a forward calls: a Llama layer's fetched modules, its four parameter-free
    ones, and per LoRA target PEFT's layer and its dropout. Counted on the real modules (meta device), not assumed."""
    import peft
    import torch
    import transformers

    from knowledge.catalog import resolve_model
    from models.step_time import HOOKED_CONTAINERS_PER_LAYER, HOOKED_PEFT_CALLS_PER_TARGET, MODULES_PER_LAYER
    from probes.hf_model import hf_config

    cfg = hf_config(resolve_model("tinyllama-1.1b"), 1)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    rotary = model.model.rotary_emb

    def called(layer) -> tuple[int, int]:
        x = torch.zeros(1, 8, cfg.hidden_size, device="meta")
        pos = rotary(x, torch.arange(8, device="meta")[None])
        calls: list[str] = []
        hook = torch.nn.modules.module.register_module_forward_pre_hook(lambda m, a: calls.append(type(m).__name__))
        try:
            with torch.no_grad():
                layer(x, position_embeddings=pos, attention_mask=None)
        finally:
            hook.remove()
        fetched = sum(1 for m in layer.modules() if next(m.parameters(recurse=False), None) is not None)
        return len(calls), fetched

    full_calls, full_fetched = called(model.model.layers[0])
    assert full_fetched == MODULES_PER_LAYER and full_calls == full_fetched + HOOKED_CONTAINERS_PER_LAYER
    targets = ["q_proj", "k_proj", "v_proj", "o_proj"]
    lora = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules=targets))
    lora_calls, lora_fetched = called(lora.base_model.model.model.layers[0])
    assert lora_fetched == MODULES_PER_LAYER + 2 * len(targets)
    assert lora_calls == lora_fetched + HOOKED_CONTAINERS_PER_LAYER + HOOKED_PEFT_CALLS_PER_TARGET * len(targets)


def test_a_config_without_layer_types_is_cut_with_the_whole_model_s() -> None:
    from probes.hf_model import config_from_dict

    # Gemma-3's config.json names sliding_window_pattern, not layer_types: a cut of layers 0 and 5 is sliding + full
    gemma3 = {"model_type": "gemma3_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 12,
              "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 1000,
              "sliding_window": 64, "sliding_window_pattern": 6}
    assert config_from_dict(gemma3, 2, layer_index=[0, 5]).layer_types == ["sliding_attention", "full_attention"]
    # a class that derives them itself (Falcon-H1's property) is not handed them
    assert config_from_dict({"model_type": "falcon_h1", "hidden_size": 128, "intermediate_size": 256,
                             "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
                             "vocab_size": 1000}, 2).num_hidden_layers == 2


def test_a_kind_s_extra_layer_is_traced_behind_a_trained_one() -> None:
    # Qwen3.5 with LoRA on q/k/v/o adapts only its attention layers; its delta-net layers keep what the input's
    # gradient needs when a trained layer comes before them, as all but the model's first ones do
    q35 = {"model_type": "qwen3_5_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 8,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
           "linear_key_head_dim": 32, "linear_value_head_dim": 32, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
           "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"]}
    assert trace_module._one_more(q35, [0, 3]) == [[0, 3, 0], [0, 3, 3]]
    lora = trace_model(q35, TraceVariant(trains="adapters", lora_targets=["k_proj", "o_proj", "q_proj", "v_proj"],
                                         lora_rank=8))
    full = trace_model(q35, TraceVariant(trains="all"))
    # frozen projections keep no inputs, but the layer keeps most of what full training keeps per token
    assert lora.layer.saved_bytes.per_token > 0.5 * full.layer.saved_bytes.per_token


def test_a_scan_s_chunks_are_traced_at_lengths_of_several_chunks() -> None:
    from probes.trace import SEQS, scan_chunk, seqs

    assert scan_chunk({"mamba_chunk_size": 256}) == 256 and scan_chunk({"chunk_size_feed_forward": 0}) == 0
    v = TraceVariant(trains="all")
    assert seqs(v) == SEQS and seqs(v, 256) == (504, 760, 1016)
    # Mamba-2's chunked scan (Falcon-H1) allocates per chunk: at 2, 3, 4 chunks what it keeps grows with the length
    fh1 = {"model_type": "falcon_h1", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "mamba_d_ssm": 128,
           "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_state": 32, "mamba_chunk_size": 128}
    t = trace_model(fh1, v)
    assert t.peak_extra_bytes.at(1, 4 * 128) > 1.5 * t.peak_extra_bytes.at(1, 2 * 128)


def test_all_linear_on_a_router_peft_cannot_run_names_it_and_the_projections() -> None:
    """PEFT's 'all-linear' wraps every nn.Linear, PhiMoE's router among them (an nn.Linear whose forward returns a
    tuple): the same step fails on a GPU. The error names the router and the projections to name instead."""
    cfg = {"model_type": "phimoe", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "num_local_experts": 4,
           "num_experts_per_tok": 2}
    with pytest.raises(AdvisorError) as e:
        trace_model(cfg, TraceVariant(trains="adapters", lora_targets="all-linear", lora_rank=4))
    msg = str(e.value)
    assert "router" in msg and "q_proj" in msg and "base_layer" not in msg and "\n" not in msg
    trace_model(cfg, TraceVariant(trains="adapters", lora_targets=["q_proj", "v_proj"], lora_rank=4))  # named: fine


def test_latent_attention_s_head_is_not_hidden_over_heads() -> None:
    """GLM-4.7-Flash (glm4_moe_lite): 2048 hidden over 20 heads of latent attention (qk 192): read, not refused."""
    from knowledge.catalog import arch_from_hf_config

    cfg = {"model_type": "glm4_moe_lite", "hidden_size": 2048, "num_attention_heads": 20, "num_key_value_heads": 20,
           "intermediate_size": 10240, "num_hidden_layers": 2, "vocab_size": 1000, "qk_nope_head_dim": 192,
           "qk_rope_head_dim": 64, "kv_lora_rank": 512}
    assert arch_from_hf_config(cfg, "glm").head_size == 256


def test_lists_of_layer_numbers_are_cut_as_numbers() -> None:
    """Llama-4's moe_layers names its MoE layers by number: a 4-layer model's [0, 1, 2, 3] read as one entry per
    layer made its 8-layer cut half dense, and the trace put four dense MLPs on top of its experts (a LoRA step
    predicted 47% slow on one H100). Cut as numbers, every layer of every cut is an MoE layer."""
    from probes.hf_model import config_from_dict

    cfg = {"model_type": "llama4_text", "hidden_size": 64, "intermediate_size": 32, "intermediate_size_mlp": 128,
           "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "vocab_size": 128, "num_local_experts": 4, "num_experts_per_tok": 1, "moe_layers": [0, 1, 2, 3]}
    assert config_from_dict(cfg, 8).moe_layers == list(range(8))
    assert config_from_dict(cfg, 2, layer_index=[1, 3]).moe_layers == [0, 1]
    assert config_from_dict({**cfg, "moe_layers": [1, 3]}, 2, layer_index=[0, 3]).moe_layers == [1]
    t = trace_model(cfg, TraceVariant(trains="adapters", lora_targets=["q_proj", "v_proj"], lora_rank=4))
    # the experts' products (E stacked, one bmm each way) are the layer's, none left in the head
    head = {(g.k, g.n) for g in t.head().gemms if g.phase == "fwd" and not g.adapter}
    assert head == {(64, 128)}  # the LM head alone


def test_a_gemm_with_a_size_not_a_multiple_of_8_runs_off_the_aligned_path() -> None:
    """An odd vocabulary's LM head (Hunyuan-7B's 290,943; Granite's 49,155) runs at 14% of the aligned rate forward,
    19% backward (probes/gemm_alignment.py, one H100): priced so, in the trace's products and in the hand count."""
    from knowledge.catalog import resolve_platform
    from knowledge.efficiency import Efficiencies
    from knowledge.schema import ModelArch, TrainCase
    from advisor.predictor import calibration_for
    from models.operators import alignment_factor, training_operators
    from models.setup import derive

    eff = Efficiencies()
    assert alignment_factor(4096, 32000, False, eff) == 1.0
    assert alignment_factor(4096, 32001, False, eff) == eff.unaligned_gemm_fwd_factor < 0.2
    assert alignment_factor(4097, 11008, True, eff) == eff.unaligned_gemm_bwd_factor < 0.25
    c = calibration_for(resolve_platform("h100x1")).ceilings

    def head_s(vocab: int) -> float:
        arch = ModelArch(name="v", hidden_size=1024, intermediate_size=2816, num_hidden_layers=2, num_attention_heads=8,
                         num_key_value_heads=8, vocab_size=vocab)
        case = TrainCase(id="v", hardware="h100x1", model="v", task="finetune", method="lora", engine="pytorch")
        ops = training_operators(derive(case, arch, resolve_platform("h100x1")), eff, c)
        return next(op.time_s for op in ops if op.name.startswith("LM head"))

    assert head_s(32001) > 2 * head_s(32000)  # (the loss over the vocabulary, memory-bound, is in both)


def test_a_squared_relu_runs_in_fp32_as_on_a_gpu() -> None:
    """torch.square is pow(x, 2) on a GPU, in CUDA autocast's fp32 list: Jais-2's squared-ReLU MLP keeps an fp32 copy of
    its input (one H100: 52.2 GiB at mb 2 x 2k, where the bf16 trace counted 39.3)."""
    cfg = {"model_type": "jais2", "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 128, "hidden_act": "relu2"}
    v = TraceVariant(trains="adapters", lora_targets=["q_proj", "v_proj"], lora_rank=4)
    squared, plain = (trace_model({**cfg, "hidden_act": act}, v) for act in ("relu2", "relu"))
    # per token per layer, beyond a plain ReLU's bf16 output: pow's fp32 copy of it (4 B of the 256-wide MLP)
    extra = squared.layer.saved_bytes.per_token - plain.layer.saved_bytes.per_token
    assert extra == pytest.approx(4 * 256, rel=0.05)


def test_parameters_a_saved_view_holds_are_recorded() -> None:
    """Under ZeRO-3 a product that saves a view of a parameter (not the parameter itself) keeps its gathered copy:
    Qwen2-MoE's stacked experts go to a grouped GEMM transposed, Llama-4's to ``bmm`` as they are; projections are
    DeepSpeed's own linear's, and a dense model holds none."""
    moe = {"model_type": "qwen2_moe", "hidden_size": 128, "intermediate_size": 256, "moe_intermediate_size": 64,
           "shared_expert_intermediate_size": 256, "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000}
    l4 = {"model_type": "llama4_text", "hidden_size": 128, "intermediate_size": 256, "intermediate_size_mlp": 512,
          "num_local_experts": 8, "num_experts_per_tok": 1, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 4, "head_dim": 32, "vocab_size": 1000, "interleave_moe_layer_step": 1}
    experts = 8 * 3 * 128 * 64  # gate, up and down of each expert
    from models.memory import STAGE3_PERSISTENCE_THRESHOLD

    assert experts > STAGE3_PERSISTENCE_THRESHOLD
    assert trace_model(moe, TraceVariant(trains="all")).params.zero3_retained_per_layer == experts
    assert trace_model(l4, TraceVariant(trains="all")).params.zero3_retained_per_layer == 0
    assert trace_model(QWEN3_TOY, TraceVariant(trains="all")).params.zero3_retained_per_layer == 0


FALCON_7B_SHAPE = {"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
                   "vocab_size": 1000, "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False,
                   "bias": False, "alibi": False}  # Falcon-7B's layout (multi-query, parallel blocks), small


def test_a_linear_with_a_product_of_its_own_holds_its_gathered_weight() -> None:
    """ZeRO-3 replaces ``F.linear``; Falcon's ``FalconLinear`` multiplies by ``self.weight.T`` instead, so every projection
    of its layers keeps its gathered weight until backward (measured: Falcon-7B full ZeRO-3 on two H200s, 122.8 GiB; 105.9
    predicted while every ``nn.Linear`` was taken as released). A router that calls ``super().forward`` (Llama-4, above)
    still goes through ``F.linear``."""
    head = 256 // 4
    per_layer = 256 * (256 + 2 * head) + 256 * 256 + 2 * 256 * 1024  # query_key_value, dense, and the 4x MLP
    assert trace_model(FALCON_7B_SHAPE, TraceVariant(trains="all")).params.zero3_retained_per_layer == per_layer


def test_bitsandbytes_replaces_falcon_s_linears_too() -> None:
    """transformers' replace_with_bnb_linear takes every ``nn.Linear`` of the blocks, Falcon's ``FalconLinear`` included:
    with a 4-bit base its projections go through ``F.linear`` like any bitsandbytes layer, so ZeRO-3 releases their
    gathered weights (the 16-bit base above holds them)."""
    adapters = dict(trains="adapters", lora_targets=["query_key_value"], lora_rank=8, zero3=True)
    assert trace_model(FALCON_7B_SHAPE, TraceVariant(**adapters)).params.zero3_retained_per_layer > 0
    assert trace_model(FALCON_7B_SHAPE, TraceVariant(**adapters, bnb_base=True)).params.zero3_retained_per_layer == 0


def test_a_family_whose_constructor_fails_names_the_null_field(tmp_path) -> None:
    """A config.json without a field the family's own code reads (Ministral's class defaults leave ``head_dim`` null,
    its attention computes ``self.head_dim**-0.5``) gets one line naming that field and the failing line, not a bare
    TypeError."""
    from transformers import AutoConfig

    config = AutoConfig.for_model("ministral").to_dict()
    assert config.get("head_dim") is None
    with pytest.raises(AdvisorError) as e:
        trace_model(config, TraceVariant(trains="all"))
    message = str(e.value)
    assert "head_dim is null" in message and "modeling_ministral.py" in message and "\n" not in message


def test_qlora_keeps_a_router_that_post_processes_its_product() -> None:
    """PhiMoE's router is an ``nn.Linear`` subclass that calls ``super().forward`` and returns a tuple: the
    bitsandbytes stand-in must leave it (replacing it broke QLoRA of PhiMoE and Llama-4 for one commit)."""
    from transformers import AutoConfig

    config = {**AutoConfig.for_model("phimoe").to_dict(), "num_hidden_layers": 2}
    qlora = TraceVariant(trains="adapters", lora_targets=["q_proj", "k_proj", "v_proj", "o_proj"], lora_rank=8, bnb_base=True)
    assert trace_model(config, qlora).params.trainable > 0


def test_kernels_off_the_vectorized_path_are_told_apart() -> None:
    """PyTorch's vectorized elementwise path takes contiguous operands of the output's shape; a broadcast, a transposed
    operand, a concatenation or an outer reduction runs the generic kernel, bound by the SMs (own anatomy of Bamba's
    Mamba-2 scan, 2026-11-29); a reduction over the innermost dimension (a norm's mean) streams."""
    import torch

    from probes.trace import strided

    x = torch.empty(4, 8, 16)
    assert not strided([x, torch.empty(4, 8, 16)], [torch.empty(4, 8, 16)])  # same shape, contiguous
    assert strided([x, torch.empty(16)], [torch.empty(4, 8, 16)])  # a broadcast weight
    assert strided([x.transpose(1, 2)], [torch.empty(4, 16, 8)])  # a transposed operand
    assert strided([x, x], [torch.empty(8, 8, 16)])  # a concatenation
    assert not strided([x], [torch.empty(4, 8, 1)])  # a mean over the innermost dimension
    assert strided([x], [torch.empty(4, 1, 16)])  # a sum over an outer one
    assert not strided([x, torch.empty(())], [torch.empty(4, 8, 16)])  # a scalar operand
    qwen = trace_model(QWEN3_TOY, TraceVariant(trains="all"))
    for part in (qwen.layer, qwen.head()):
        for phase in ("fwd", "bwd"):
            st, other = getattr(part, f"strided_bytes_{phase}"), getattr(part, f"other_bytes_{phase}")
            assert 0 < st.per_token < other.per_token  # RMSNorm's broadcasts are strided, its casts and SiLU are not
    # eager attention's softmax over the s x s scores runs row passes, not a stream: the s² bytes are strided ones too
    eager = trace_model(QWEN3_TOY, TraceVariant(trains="all", attention="eager"))
    assert eager.layer.strided_bytes_fwd.per_token_seq > 0 and eager.layer.strided_bytes_bwd.per_token_seq > 0


def test_a_config_json_with_nulls_lists_and_many_experts_is_read(tmp_path) -> None:
    """GPT-Neo writes "intermediate_size": null (a 4x MLP), Gemma-3n one MLP width per layer, Doge 16,384 experts:
    transformers builds each, so the reader takes them (the first two were refused as a missing field and a wrong type)."""
    import json

    from knowledge.catalog import resolve_model

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**FALCON_TOY, "intermediate_size": None}))
    assert resolve_model(str(path)).intermediate_size == 4 * 128
    path.write_text(json.dumps({**QWEN3_TOY, "intermediate_size": [256, 512, 256]}))
    assert resolve_model(str(path)).intermediate_size == 512
    path.write_text(json.dumps({**QWEN3_TOY, "model_type": "qwen3_moe", "num_experts": 16384, "num_experts_per_tok": 8,
                                "moe_intermediate_size": 64}))
    assert resolve_model(str(path)).num_local_experts == 16384


def test_lora_targets_peft_refuses_say_why() -> None:
    """'all-linear' on a Mamba hybrid takes in Mamba's out_proj, which PEFT refuses: the error gives PEFT's reason and
    the projections that can be named (it had said PEFT found none of them, then offered 'all-linear' again)."""
    toy = {"model_type": "falcon_h1", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "mamba_d_ssm": 64,
           "mamba_n_heads": 4, "mamba_d_head": 16, "mamba_d_state": 16, "mamba_n_groups": 1, "mamba_chunk_size": 16}
    with pytest.raises(AdvisorError) as e:
        trace_model(toy, TraceVariant(trains="adapters", lora_targets="all-linear", lora_rank=4))
    text = str(e.value)
    assert "refuses" in text and "incompatible" in text
    assert "q_proj" in text.split("instead:")[1] and "out_proj" not in text.split("instead:")[1]


def test_a_strided_kernels_offset_work_grows_with_its_dimensions():
    """The generic kernel computes every operand's offset of every output element, dimension by dimension: a 6-D
    broadcast (Mamba-2's torch path) does more of that work per byte than a 3-D copy of the same output."""
    import torch

    from probes.trace import elem_dims, strided

    b = torch.empty(2, 3, 1, 4, 5, 6)
    c = torch.empty(2, 3, 7, 1, 5, 6)
    out6 = torch.empty(2, 3, 7, 4, 5, 6)
    src = torch.empty(6, 7 * 4 * 5, 2 * 3).transpose(0, 2)
    out3 = torch.empty(6, 7 * 4 * 5, 2 * 3)
    assert strided([b, c], [out6]) and strided([src], [out3])
    assert elem_dims([b, c], [out6]) == out6.numel() * 6 * 3
    assert elem_dims([src], [out3]) == out3.numel() * 3 * 2
    assert elem_dims([b, c], [out6]) / out6.numel() > 2 * elem_dims([src], [out3]) / out3.numel()


def _nemotron_h_toy() -> dict:
    """Nemotron-H's four default layers (Mamba-2, MoE, attention, MLP), narrow."""
    from transformers import AutoConfig

    base = {k: v for k, v in AutoConfig.for_model("nemotron_h").to_dict().items()
            if not k.startswith("_") and k != "transformers_version"}
    return {**base, "hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 32, "vocab_size": 1000, "mamba_num_heads": 8, "mamba_head_dim": 32, "ssm_state_size": 16,
            "n_groups": 1, "chunk_size": 64, "n_routed_experts": 4, "moe_intermediate_size": 64,
            "moe_shared_expert_intermediate_size": 64, "num_hidden_layers": 4,
            "layers_block_type": ["linear_attention", "moe", "full_attention", "mlp"]}


def test_layers_before_the_first_trained_one_run_no_backward() -> None:
    """Nemotron-H's defaults under LoRA on q/k/v/o: its Mamba-2 and MoE layers come before the only adapted one, their
    input needs no gradient, and they run no backward (one H100: 23.7k tokens/s at 20.5 GiB, predicted 10.2k at 35.9
    GiB with both layers' backward priced: the head had dropped what its layers lack of an average one, and the
    longer cut's Mamba-2 backward had set the peak). Under recomputation PEFT makes the input need one."""
    from knowledge.catalog import arch_from_hf_config, resolve_platform
    from knowledge.efficiency import Efficiencies
    from knowledge.schema import TrainCase
    from models.operators import _part_operators, training_operators
    from models.roofline import ceilings
    from models.setup import derive

    toy = _nemotron_h_toy()
    lora = TraceVariant(trains="adapters", lora_targets=["k_proj", "o_proj", "q_proj", "v_proj"], lora_rank=8)
    t = trace_model(toy, lora)
    assert (t.layers, t.rest_layers, t.layers_without_backward) == (4, 4, 2)
    assert trace_model(toy, lora.model_copy(update={"recompute": True})).layers_without_backward == 0
    full = trace_model(toy, TraceVariant(trains="all"))
    assert full.layers_without_backward == 0
    assert t.peak_extra_bytes.at(1, 512) < 0.7 * full.peak_extra_bytes.at(1, 512)  # no Mamba-2 backward at the peak
    # priced as a prediction prices it, the layers x the average layer plus the (signed) head is the model the base cut
    # ran, which here is the whole model
    platform, eff = resolve_platform("h100x1"), Efficiencies()
    case = TrainCase(id="t", hardware="h100x1", model="toy", task="finetune", method="lora", seq_len=512)
    s = derive(case, arch_from_hf_config(toy, "nemotron-h-toy"), platform, t)
    c = ceilings(platform, eff)
    ops = training_operators(s, eff, c)
    priced = sum(op.backward_s * (t.layers if op.per_layer else 1) for op in ops)
    whole = sum(op.backward_s for op in _part_operators(s, t.rest, eff, c, False))
    assert priced == pytest.approx(whole, rel=1e-6)


def test_a_long_pattern_s_first_frozen_layers_are_priced_as_the_whole_model_runs_them() -> None:
    """Granite-4.0-H's kinds traced one layer each: its two Mamba layers before the first attention layer run no
    backward under LoRA on q/v, and the whole model from the kinds' cuts is what a cut of all its layers runs."""
    toy = _granite_4_h_toy()
    v = TraceVariant(trains="adapters", lora_targets=["q_proj", "v_proj"], lora_rank=8)
    t = trace_model(toy, v)
    assert (t.rest_layers, t.layers_without_backward) == (2, 2)
    whole, _, _, _, grads = trace_module._cut(toy, 11, v)
    assert [needs for _, needs in grads] == [False, False] + [True] * 9
    for field in ("saved_bytes", "other_bytes_bwd", "strided_bytes_bwd"):
        assert t.total(field, 1, 512) == pytest.approx(whole[field].at(1, 512), rel=1e-6)
    backward_flops = sum(g.flops.at(1, 512) * (1 if part is t.rest else t.layers - t.rest_layers)
                         for part in (t.rest, t.layer) for g in part.gemms if g.phase == "bwd")
    assert backward_flops == pytest.approx(sum(f.at(1, 512) for k, (f, _, _) in whole["gemms"].items() if k[0] == "bwd"),
                                           rel=1e-6)


def test_only_decoder_layers_decide_which_layers_run_backward() -> None:
    """Granite's SWA model keeps one rotary embedding per attention kind in ``model.rotary_embs.0`` (a numbered module,
    run first, whose output needs no gradient): taken for a decoder layer, it made full training's first layer look
    frozen. Every layer of full training and of LoRA on q/k/v/o runs backward."""
    from transformers import AutoConfig

    base = {k: v for k, v in AutoConfig.for_model("granite_swa").to_dict().items()
            if not k.startswith("_") and k != "transformers_version"}
    toy = {**base, "hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 1000, "num_hidden_layers": 4, "sliding_window": 64,
           "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"]}
    for v in (TraceVariant(trains="all"),
              TraceVariant(trains="adapters", lora_targets=["k_proj", "o_proj", "q_proj", "v_proj"], lora_rank=8)):
        assert trace_model(toy, v).layers_without_backward == 0


def test_a_product_whose_rows_do_not_follow_the_tokens_is_not_priced_by_them():
    # PEFT's "all-linear" on an MoE adapts its expert parameters too: each step forms every expert's B x A over the
    # whole stack (GLM-MoE-DSA: 2**19 rows a call, whatever the batch). Priced by the rows its FLOPs say at the case's
    # length, its bytes stay; priced by the traced length's rows per token they grew with the batch (a 0.63 s step
    # predicted where an H100 ran 0.33: logs/h100-blind-families-4-2026-12-07.jsonl)
    from advisor.predictor import Predictor
    from knowledge.catalog import resolve_model, resolve_platform
    from knowledge.schema import TrainCase
    from models.operators import training_operators
    from models.setup import derive

    p = Predictor()
    platform = resolve_platform("h100x1")
    cal = p.calibration(platform)
    config = "knowledge/data/configs/glm-moe-dsa-defaults-4l.json"
    arch = resolve_model(config)
    moved = {}
    for mb in (1, 4):
        case = TrainCase(id="c", hardware="h100x1", model=config, task="finetune", method="lora",
                         lora_targets="all-linear", engine="pytorch", micro_batch_size=mb, seq_len=2048)
        ops = {o.name: o for o in training_operators(derive(case, arch, platform, p.traces.trace(arch, case)),
                                                     cal.eff, cal.ceilings)}
        moved[mb] = ops["128x6144"], ops["6144x12288"]
    (delta_1, dense_1), (delta_4, dense_4) = moved[1], moved[4]
    assert delta_4.flops == pytest.approx(delta_1.flops, rel=0.02)  # the product's work does not follow the tokens
    assert delta_4.bytes == pytest.approx(delta_1.bytes, rel=0.02)  # nor do its bytes
    assert dense_4.flops == pytest.approx(4 * dense_1.flops, rel=0.02)  # a dense projection's do


def test_a_family_whose_config_refuses_one_kind_of_layer_alone_is_read_and_adapted():
    # OLMo-Hybrid's config class refuses a model without a linear-attention layer and one without an attention layer:
    # its default LoRA targets come from a cut with a layer of each kind (the first layer's names decide, as for any
    # hybrid), its window from the whole config; a one-layer cut of either raised a validation error for every case
    import json

    from advisor.traces import sliding_window
    from probes.trace import default_lora_targets

    config = json.loads(Path("knowledge/data/configs/olmo-hybrid-defaults-8l.json").read_text())
    assert sliding_window(config) is None
    assert default_lora_targets(config, ["q_proj", "k_proj", "v_proj", "o_proj"]) is None  # its delta-net has all four
    qwen35 = json.loads(Path("knowledge/data/configs/qwen3.5-text.json").read_text())
    # a hybrid whose first layer is a delta-net without q/k/v/o: its own projections, as before
    assert default_lora_targets(qwen35, ["q_proj", "k_proj", "v_proj", "o_proj"]) == [
        "in_proj_a", "in_proj_b", "in_proj_qkv", "in_proj_z", "out_proj"]
