"""The engine-style layer (probes.engine_model) builds the families outside Llama's structure as their own code lays
them out, from their configs cut down to toy size: the parameters are transformers' own count, a prefill and a decode
agree (across a sliding window too), a sliding window's decode and prefill read only the window, the MoE's grouped
path and its loop fallback equal every expert computed by hand, the kernels a layer launches are what serving charges
(models.serving.engine_layer_kernels), and engine_sweep's rows say which paths ran."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from knowledge.catalog import resolve_model
from knowledge.engines import ENGINE_LAYER_KERNELS
from knowledge.schema import Measurement
from models.serving import engine_layer_kernels
from probes import engine_sweep
from probes.engine_model import EngineDecoder, Shapes
from tests.test_engine_kernels import _Kernels

WINDOW = 4
VOCAB = 128
MIXTRAL = {"model_type": "mixtral", "hidden_size": 2048, "intermediate_size": 4096, "num_local_experts": 8,
           "num_experts_per_tok": 2, "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4,
           "vocab_size": 32000, "tie_word_embeddings": False}
FAMILIES = ["starcoder2-3b", "gemma-2-2b", "phi-3-mini-4k", "qwen3-4b", "olmoe-1b-7b", "qwen1.5-moe-a2.7b", "granite-3.0-2b", "mixtral"]
MOE = ["olmoe-1b-7b", "qwen1.5-moe-a2.7b", "mixtral"]
WINDOWED = ["starcoder2-3b", "gemma-2-2b", "phi-3-mini-4k"]


def tiny_config(name: str, **changes) -> dict:
    """A bundled config (or Mixtral's shape) cut down to toy size, its structure kept."""
    cfg = dict(MIXTRAL) if name == "mixtral" else json.loads(open(f"knowledge/data/configs/{name}.json").read())
    cfg.update(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
               num_hidden_layers=2)
    cfg.pop("layer_types", None)
    for key, value in (("head_dim", 16), ("sliding_window", WINDOW), ("moe_intermediate_size", 32), ("num_experts", 8),
                       ("num_local_experts", 8), ("num_experts_per_tok", 2), ("shared_expert_intermediate_size", 48)):
        if key in cfg:
            cfg[key] = value
    if name in ("mixtral", "olmoe-1b-7b"):
        cfg["intermediate_size"] = 32  # their intermediate_size is each expert's
    return {**cfg, **changes}


def tiny(name: str, tmp_path, **changes):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(tiny_config(name, **changes)))
    return resolve_model(str(path))


def shapes(arch) -> Shapes:
    return Shapes.of(arch)


def decoder(name: str, tmp_path, dtype=torch.float32) -> EngineDecoder:
    return EngineDecoder(shapes(tiny(name, tmp_path)), torch.device("cpu"), dtype)


def prompt(b: int, t: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (b, t), generator=torch.Generator().manual_seed(0))


def hand_attention(q, k, v, scale, allowed=None):
    """Attention with K/V repeated to every query head, scores masked where ``allowed`` [t, L] is False."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    scores = (q @ k.transpose(-1, -2)) * scale
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v


def hand_experts(dec: EngineDecoder, x, L):
    """Each token through the experts its router picks, one by one, weighted (renormalised where the config says)."""
    s = dec.s
    out = torch.zeros_like(x)
    for n in range(x.shape[0]):
        probs = (L["router"] @ x[n]).softmax(-1)
        weights, ids = probs.topk(s.top_k)
        if s.norm_topk:
            weights = weights / weights.sum()
        for w, e in zip(weights, ids):
            gate, up = (L["w13"][e] @ x[n]).chunk(2)
            act = torch.nn.functional.gelu(gate, approximate="tanh") if s.gelu else torch.nn.functional.silu(gate)
            out[n] += w * (L["w2"][e] @ (act * up))
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_parameters_are_transformers_own(name, tmp_path):
    """The same count as transformers' model of the same config, built on the meta device (OLMoE's q/k norms span all
    heads here as there; Gemma's norms are one weight each here as there)."""
    import transformers

    from probes.hf_model import config_from_dict

    arch = tiny(name, tmp_path)
    dec = EngineDecoder(shapes(arch), torch.device("cpu"), torch.float32)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config_from_dict(arch.hf_config))
    assert dec.parameter_count() == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", FAMILIES)
def test_decode_continues_the_prefill(name, tmp_path):
    """Prefill 6 tokens then decode the next, or prefill all 7: the same greedy token (past a 4-token window, where
    the family has one: the decode reads the window, the prefill masks to it)."""
    dec = decoder(name, tmp_path)
    ids = prompt(2, 6)
    dec.allocate(2, 7)
    first = dec.forward(ids, 0)
    step = dec.forward(first[:, None], torch.tensor([6]))
    dec.allocate(2, 7)
    assert torch.equal(step, dec.forward(torch.cat([ids, first[:, None]], 1), 0))


@pytest.mark.parametrize("attn", ["sdpa", "bmm"])
@pytest.mark.parametrize("name", WINDOWED)
def test_chunked_prefill_across_the_window_equals_one_prefill(name, attn, tmp_path):
    """A 10-token prompt in chunks of 3 (each chunk sees the cache so far, masked to the window) or whole: the same
    next token and the same cache."""
    whole, chunked = decoder(name, tmp_path), decoder(name, tmp_path)
    ids = prompt(2, 10)
    for d in (whole, chunked):
        d.allocate(2, 10)
    ref = whole.forward(ids, 0, attn=attn)
    for s in range(0, 10, 3):
        out = chunked.forward(ids[:, s:s + 3], s, attn=attn)
    assert torch.equal(out, ref)
    for a, b in zip(whole.k_cache + whole.v_cache, chunked.k_cache + chunked.v_cache):
        assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("name", WINDOWED)
def test_the_windows_are_the_configs(name, tmp_path):
    s = shapes(tiny(name, tmp_path, num_hidden_layers=4))
    assert s.windows == ((WINDOW, None, WINDOW, None) if name == "gemma-2-2b" else (WINDOW,) * 4)  # Gemma-2 alternates


def test_the_windows_are_the_layouts_the_advisor_reads_from_transformers(tmp_path):
    """The layer's windows and the serving layout's KV groups (read from transformers' own attention modules) agree:
    Phi-3-mini-4k slides 2,047 on all 32 layers, in the emulation and in the prediction alike."""
    from advisor.predictor import Predictor

    arch = resolve_model("knowledge/data/configs/phi-3-mini-4k.json")
    layout = Predictor().serving_layout(arch)
    assert [(g.layers, g.window) for g in layout.kv_groups] == [(32, 2047)]
    assert shapes(arch).windows == (2047,) * 32


@pytest.mark.parametrize("attn", ["sdpa", "bmm"])
@pytest.mark.parametrize("name", WINDOWED)
def test_a_sliding_window_decode_reads_its_window_only(name, attn, tmp_path):
    dec = decoder(name, tmp_path)
    q = torch.randn(1, 4, 1, 16, dtype=torch.float64)
    kc, vc = torch.randn(1, 2, 20, 16, dtype=torch.float64), torch.randn(1, 2, 20, 16, dtype=torch.float64)
    got = dec._attend(q, kc, vc, torch.tensor([19]), 1, attn, window=WINDOW)
    scale = dec.s.attn_scale or 1 / math.sqrt(16)  # Gemma-2: query_pre_attn_scalar ** -0.5
    assert torch.allclose(got, hand_attention(q, kc[:, :, -WINDOW:], vc[:, :, -WINDOW:], scale), atol=1e-12)


@pytest.mark.parametrize("attn", ["sdpa", "bmm"])
@pytest.mark.parametrize("first,t", [(0, 9), (5, 6), (2, 3), (3, 13)])
def test_a_sliding_window_prefill_chunk_sees_the_window_only(first, t, attn, tmp_path):
    """Query at position p sees keys p - window + 1 .. p (itself included), as vLLM's and transformers' windows."""
    dec = decoder("starcoder2-3b", tmp_path)
    q = torch.randn(1, 4, t, 16, dtype=torch.float64)
    kc, vc = torch.randn(1, 2, first + t, 16, dtype=torch.float64), torch.randn(1, 2, first + t, 16, dtype=torch.float64)
    got = dec._attend(q, kc, vc, first, t, attn, window=WINDOW)
    q_pos, k_pos = first + torch.arange(t)[:, None], torch.arange(first + t)[None]
    allowed = (k_pos <= q_pos) & (q_pos - k_pos < WINDOW)
    assert torch.allclose(got, hand_attention(q, kc, vc, 1 / math.sqrt(16), allowed), atol=1e-12)


@pytest.mark.parametrize("name", MOE)
def test_both_moe_paths_equal_every_expert_by_hand(name, tmp_path):
    dec = decoder(name, tmp_path)  # float32: torch._grouped_mm runs on CPU in this torch (not in float64)
    x = torch.randn(7, 64)
    want = hand_experts(dec, x, dec.layers[0])
    assert torch.allclose(dec._experts(x, dec.layers[0]), want, atol=1e-6)
    assert dec.moe_path == "grouped_mm"
    dec.moe_path = "loop"  # as where it does not run: the fallback, one expert after another
    assert torch.allclose(dec._experts(x, dec.layers[0]), want, atol=1e-6)
    assert "moe=loop" in dec.paths()


def test_a_failing_grouped_gemm_falls_back_to_the_loop_and_says_so(tmp_path, monkeypatch):
    dec = decoder("olmoe-1b-7b", tmp_path)
    x = torch.randn(5, 64)
    want = hand_experts(dec, x, dec.layers[0])

    def fails(*args, **kwargs):
        raise RuntimeError("grouped_mm: not on this device")

    monkeypatch.setattr(torch, "_grouped_mm", fails)
    assert torch.allclose(dec._experts(x, dec.layers[0]), want, atol=1e-6)
    assert dec.moe_path == "loop"


def test_each_moe_family_routes_as_its_code(tmp_path):
    olmoe, qwen, mixtral = (shapes(tiny(n, tmp_path)) for n in MOE)
    assert (olmoe.experts, olmoe.top_k, olmoe.norm_topk, olmoe.shared_inter, olmoe.inter) == (8, 2, False, 0, 32)
    assert olmoe.qk_norm and olmoe.qk_norm_full  # over all heads' q and k, not per head
    assert (qwen.norm_topk, qwen.shared_inter, qwen.shared_gate, qwen.qkv_bias, qwen.inter) == (False, 48, True, True, 32)
    assert (mixtral.norm_topk, mixtral.shared_inter, mixtral.inter) == (True, 0, 32)  # Mixtral always renormalises


@pytest.mark.parametrize("name", FAMILIES)
def test_serving_charges_the_kernels_the_layer_launches(name, tmp_path):
    arch = tiny(name, tmp_path)
    s = shapes(arch)

    def calls(layers: int):
        dec = EngineDecoder(dataclasses.replace(s, layers=layers, windows=s.windows[:layers]), torch.device("cpu"),
                            torch.float32)
        dec.allocate(2, 9)
        with _Kernels() as k:
            dec.forward(torch.zeros(2, 1, dtype=torch.long), torch.tensor([8]))
        return k.calls

    assert sum((calls(2) - calls(1)).values()) == engine_layer_kernels(arch, ENGINE_LAYER_KERNELS)


def test_the_notes_say_what_ran(tmp_path):
    paths = {n: decoder(n, tmp_path).paths() for n in FAMILIES}
    assert "mlp=fc-gelu_tanh-proj with biases" in paths["starcoder2-3b"]
    assert "norm=layernorm+bias" in paths["starcoder2-3b"] and f"window={WINDOW} on 2 of 2 layers" in paths["starcoder2-3b"]
    gemma = paths["gemma-2-2b"]
    assert "mlp=gate_up-gelu_tanh*up-down" in gemma and f"window={WINDOW} on 1 of 2 layers" in gemma
    assert "norm=rmsnorm+post_norms" in gemma and "attn_softcap=50 not applied" in gemma and "final_softcap=30" in gemma
    assert "mlp=gate_up-silu*up-down" in paths["qwen3-4b"] and "qk_norm=per_head" in paths["qwen3-4b"]
    assert "window=none" in paths["qwen3-4b"] and "qk_norm" not in paths["granite-3.0-2b"]
    assert "qk_norm=full_width" in paths["olmoe-1b-7b"] and "moe=not run (8 experts, top 2)" in paths["olmoe-1b-7b"]
    assert "shared expert 48 with sigmoid gate" in paths["qwen1.5-moe-a2.7b"]
    assert "top 2, renormalised" in paths["mixtral"]


def test_a_family_it_cannot_build_is_named(tmp_path):
    arch = tiny("pythia-1.4b", tmp_path)  # GPT-NeoX's parallel residual is not built
    with pytest.raises(ValueError, match="gpt_neox"):
        Shapes.of(arch)
    with pytest.raises(ValueError, match="mlp_only_layers"):  # Qwen2-MoE with dense layers among the MoE ones
        Shapes.of(tiny("qwen1.5-moe-a2.7b", tmp_path, mlp_only_layers=[0]))


def test_the_sweep_writes_the_paths_into_its_rows(tmp_path):
    config, out = tmp_path / "olmoe.json", tmp_path / "rows.jsonl"
    config.write_text(json.dumps(tiny_config("olmoe-1b-7b")))
    rc = engine_sweep.main(["--model", str(config), "--hardware", "cpu", "--out", str(out), "--device", "cpu",
                            "--batches", "1,2", "--kv", "6", "--chunk", "8", "--repeats", "1", "--prefill-repeats", "1"])
    assert rc == 0
    rows = [Measurement.model_validate_json(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r.measured.decode_step_s and r.measured.prefill_s for r in rows)
    assert all("moe=grouped_mm (8 experts, top 2)" in r.notes and "qk_norm=full_width" in r.notes
               and "window=none" in r.notes for r in rows)


def test_needed_memory_is_the_built_weights_and_cache(tmp_path):
    dec = decoder("gemma-2-2b", tmp_path, torch.float32)
    dec.allocate(3, 11)
    held = sum(t.numel() * 4 for t in dec.weights() + dec.k_cache + dec.v_cache)
    assert engine_sweep.needed_gib(dec, 3, 10) * 2**30 == pytest.approx(held)
