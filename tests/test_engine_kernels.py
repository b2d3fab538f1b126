"""The engine's decode-step kernel floor counts the kernels its layer launches: the engine-style layer the project
measures (probes.engine_model) counted call by call on CPU, and that count is what the serving model charges."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
import torch
from torch.overrides import TorchFunctionMode

from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import Efficiencies
from knowledge.engines import ENGINE_LAYER_KERNELS, ENGINES, QK_NORM_KERNELS, QK_NORM_TYPES
from knowledge.schema import ModelArch
from models.calibration import from_fit
from models.serve_setup import make_setup
from models.serving import KERNELS_HEAD, fused_moe_kernels, kernels_per_pass, pass_time
from probes.engine_model import EngineDecoder, Shapes

# calls that launch no kernel (views, metadata); a reshape launches a copy only when its input is not contiguous
NO_KERNEL = {"view", "view_as", "transpose", "split", "expand", "__getitem__", "chunk", "size", "dim", "__get__", "is_tensor",
             "unsqueeze", "item", "__index__", "__int__", "__bool__", "__format__", "__iter__", "__hash__", "__len__"}
TOY = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}


class _Kernels(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name == "reshape" and args[0].is_contiguous():
            name = "view"
        if name not in NO_KERNEL:
            self.calls[name] += 1
        return func(*args, **(kwargs or {}))


def _decode_calls(layers: int, qk_norm: bool, shapes: Shapes | None = None) -> Counter:
    arch = ModelArch(name="toy", num_hidden_layers=layers, **TOY)
    shapes = Shapes.of(arch, qk_norm=qk_norm) if shapes is None else dataclasses.replace(shapes, layers=layers)
    dec = EngineDecoder(shapes, torch.device("cpu"), torch.float32)
    dec.allocate(2, 9)
    with _Kernels() as k:
        dec.forward(torch.zeros(2, 1, dtype=torch.long), torch.tensor([8]))
    return k.calls


@pytest.mark.parametrize("qk_norm", [False, True])
def test_engine_layer_kernels_are_the_measured_layers_count(qk_norm):
    per_layer = _decode_calls(2, qk_norm) - _decode_calls(1, qk_norm)
    assert sum(per_layer.values()) == ENGINE_LAYER_KERNELS + (QK_NORM_KERNELS if qk_norm else 0)
    assert per_layer["rms_norm"] == 2 + 2 * qk_norm and per_layer["linear"] == 4


def test_every_engine_charges_that_count_per_layer():
    platform = resolve_platform("h100x1")
    cal = from_fit(platform, Efficiencies())
    llama = resolve_model("llama3-8b")
    for name in ENGINES:
        s = make_setup(llama, platform, cal, engine=name)
        assert kernels_per_pass(s, 1) == ENGINE_LAYER_KERNELS * 32 + KERNELS_HEAD
    qwen3 = resolve_model("knowledge/data/configs/qwen3-8b.json")  # q/k norms: two kernels more per layer
    s = make_setup(qwen3, platform, cal)
    assert kernels_per_pass(s, 1) == (ENGINE_LAYER_KERNELS + QK_NORM_KERNELS) * qwen3.num_hidden_layers + KERNELS_HEAD


def test_the_floor_is_what_a_small_decode_step_adds_per_layer():
    """Batch 1, short cache: the step is the weights' bytes plus the kernels' floor; one layer more adds its weights'
    time and its kernels' floor, nothing else."""
    platform = resolve_platform("h100x1")
    cal = from_fit(platform, Efficiencies())
    base = resolve_model("llama3-8b")
    deeper = base.model_copy(update={"num_hidden_layers": 33})
    p32 = pass_time(make_setup(base, platform, cal), 1, 1, 512, decode=True)
    p33 = pass_time(make_setup(deeper, platform, cal), 1, 1, 512, decode=True)
    assert p33.floor_s - p32.floor_s == pytest.approx(ENGINE_LAYER_KERNELS * cal.eff.graph_kernel_s)
    assert p32.small_kernels_s == p32.floor_s  # at batch 1 the floor, not the elementwise bytes, rules


@pytest.mark.parametrize("config", ["olmoe-1b-7b", "qwen1.5-moe-a2.7b"])
def test_an_moe_layer_charges_what_the_fused_moe_layer_launches(config, tmp_path):
    """vLLM's fused MoE as the engine-style layer builds it (one grouped GEMM for all experts' gate/up, one for the
    downs; a shared expert with its sigmoid gate in Qwen2-MoE): its kernels per layer are what serving charges, a
    constant however many experts a batch hits (a per-expert loop would launch 8 per expert)."""
    cfg = json.loads(open(f"knowledge/data/configs/{config}.json").read())
    cfg.update(hidden_size=64, intermediate_size=32, moe_intermediate_size=32, num_attention_heads=4,
               num_key_value_heads=4, vocab_size=100, num_experts=8, num_experts_per_tok=2, num_hidden_layers=2)
    if "shared_expert_intermediate_size" in cfg:
        cfg["shared_expert_intermediate_size"] = 48
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    arch = resolve_model(str(tmp_path / "config.json"))
    qk = arch.hf_model_type in QK_NORM_TYPES
    shapes = Shapes.of(arch, qk_norm=qk)
    per_layer = _decode_calls(2, qk, shapes) - _decode_calls(1, qk, shapes)
    assert per_layer["_grouped_mm"] == 2
    expected = ENGINE_LAYER_KERNELS + (QK_NORM_KERNELS if qk else 0) + fused_moe_kernels(arch)
    assert sum(per_layer.values()) == expected
    platform = resolve_platform("h100x1")
    s = make_setup(arch, platform, from_fit(platform, Efficiencies()))
    assert kernels_per_pass(s, 1) == kernels_per_pass(s, 512) == expected * arch.num_hidden_layers + KERNELS_HEAD
