"""The engine-style layer (probes.engine_model) builds the families outside Llama's structure as their own code lays
them out: the parameters are transformers' own count, a prefill and a decode agree, a sliding window's decode reads
only its window, MoE's grouped path equals every expert computed in turn, and the kernels a layer launches are what
serving charges (models.serving.engine_layer_kernels)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from knowledge.catalog import resolve_model
from knowledge.engines import ENGINE_LAYER_KERNELS, QK_NORM_TYPES
from models.serving import engine_layer_kernels
from probes.engine_model import EngineDecoder, Shapes
from tests.test_engine_kernels import _Kernels

FAMILIES = ["starcoder2-3b", "gemma-2-2b", "qwen3-4b", "olmoe-1b-7b", "qwen1.5-moe-a2.7b", "granite-3.0-2b"]


def tiny(name: str, tmp_path) -> object:
    cfg = json.loads(open(f"knowledge/data/configs/{name}.json").read())
    cfg.update(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
               num_hidden_layers=4)
    cfg.pop("layer_types", None)
    for key, value in (("head_dim", 16), ("sliding_window", 8), ("moe_intermediate_size", 32), ("num_experts", 8),
                       ("num_experts_per_tok", 2), ("shared_expert_intermediate_size", 48)):
        if key in cfg:
            cfg[key] = value
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return resolve_model(str(path))


def shapes(arch) -> Shapes:
    return Shapes.of(arch, qk_norm=arch.hf_model_type in QK_NORM_TYPES)


@pytest.mark.parametrize("name", FAMILIES)
def test_parameters_are_transformers_own(name, tmp_path):
    import transformers

    from probes.hf_model import config_from_dict

    arch = tiny(name, tmp_path)
    dec = EngineDecoder(shapes(arch), torch.device("cpu"), torch.float32)
    tensors = {id(t): t for t in [dec.embed, dec.lm_head, dec.final_norm, dec.final_norm_b]
               + [v for layer in dec.layers for v in layer.values()] if torch.is_tensor(t)}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config_from_dict(arch.hf_config))
    ours, theirs = sum(t.numel() for t in tensors.values()), sum(p.numel() for p in model.parameters())
    # OLMoE's q/k norms span all heads in transformers, one head here (the same kernels); nothing else differs
    assert ours == pytest.approx(theirs, rel=0.01 if arch.hf_model_type == "olmoe" else 0)


@pytest.mark.parametrize("name", FAMILIES)
def test_decode_continues_the_prefill(name, tmp_path):
    """Prefill 6 tokens then decode the next, or prefill all 7: the same greedy token (within the 8-token window)."""
    dec = EngineDecoder(shapes(tiny(name, tmp_path)), torch.device("cpu"), torch.float32)
    ids = torch.randint(0, 100, (2, 6), generator=torch.Generator().manual_seed(0))
    dec.allocate(2, 7)
    first = dec.forward(ids, 0)
    step = dec.forward(first[:, None], torch.tensor([6]))
    dec.allocate(2, 7)
    assert torch.equal(step, dec.forward(torch.cat([ids, first[:, None]], 1), 0))


@pytest.mark.parametrize("name", ["starcoder2-3b", "gemma-2-2b"])
def test_a_sliding_window_decode_reads_its_window_only(name, tmp_path):
    s = shapes(tiny(name, tmp_path))
    assert s.windows and s.windows[0] == 8
    if name == "gemma-2-2b":
        assert s.windows[1] is None  # Gemma-2 alternates sliding and full layers
    dec = EngineDecoder(s, torch.device("cpu"), torch.float32)
    q = torch.randn(1, 4, 1, 16)
    kc, vc = torch.randn(1, 2, 20, 16), torch.randn(1, 2, 20, 16)
    got = dec._attend(q, kc, vc, torch.tensor([19]), torch.tensor([19]), 1, "sdpa", window=8)
    want = torch.nn.functional.scaled_dot_product_attention(q, kc[:, :, -8:], vc[:, :, -8:], enable_gqa=True)
    assert torch.allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("name", ["olmoe-1b-7b", "qwen1.5-moe-a2.7b"])
def test_grouped_experts_equal_every_expert_in_turn(name, tmp_path):
    dec = EngineDecoder(shapes(tiny(name, tmp_path)), torch.device("cpu"), torch.float32)
    x = torch.randn(5, 64)
    grouped = dec._experts(x, dec.layers[0])
    assert dec.moe_path == "grouped_mm"
    dec.moe_path = "loop"
    assert torch.allclose(grouped, dec._experts(x, dec.layers[0]), atol=1e-6)


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


def test_a_family_it_cannot_build_is_named(tmp_path):
    arch = tiny("pythia-1.4b", tmp_path)  # GPT-NeoX's parallel residual is not built
    with pytest.raises(ValueError, match="gpt_neox"):
        Shapes.of(arch)
