"""The host's time for kernels a model's own code launches beyond a Llama layer's (models.step_time): a scan's loop
body, forward and backward, from the trace's own counts; and MFU's numerator for routed experts."""

from __future__ import annotations

import pytest

from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import Efficiencies
from knowledge.schema import ModelArch, TrainCase
from knowledge.traces import TraceVariant
from models.setup import derive
from models.step_time import (KERNELS_PER_LAYER_BWD, KERNELS_PER_LAYER_FWD, _dispatch, _pass, extra_kernel_cpu_s,
                              model_flops_per_step)
from probes.trace import trace_model

# a gated delta-net layer (Qwen3.5) without its fused kernel: a Python loop over 64-token chunks
Q35_TOY = {"model_type": "qwen3_5_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000,
           "linear_key_head_dim": 32, "linear_value_head_dim": 32, "linear_num_key_heads": 2,
           "linear_num_value_heads": 4,
           "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"]}


def _setup(seq: int, recompute: bool = False):
    arch = ModelArch(name="q35-toy", hf_model_type="qwen3_5_text", hidden_size=128, intermediate_size=256,
                     num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=1000,
                     hf_config=Q35_TOY)
    case = TrainCase(id="t", hardware="h200x1", model="q35-toy", task="pretrain", engine="pytorch", seq_len=seq,
                     recompute=recompute)
    t = trace_model(Q35_TOY, TraceVariant(trains="all", fp32_weights=True, recompute=recompute))
    return derive(case, arch, resolve_platform("h200x1"), t), t


def test_a_scan_s_loop_kernels_cost_the_host_forward_and_backward() -> None:
    eff = Efficiencies()
    per = extra_kernel_cpu_s(eff)
    # a fraction of a Llama layer's CPU per traced kernel (45 forward + 77 backward)
    assert per == pytest.approx(eff.extra_kernel_ratio * eff.kernel_time_s * KERNELS_PER_LAYER_FWD
                                * (1 + eff.backward_dispatch_factor) / (KERNELS_PER_LAYER_FWD + KERNELS_PER_LAYER_BWD))
    s1, t = _setup(1024)
    s2, _ = _setup(2048)
    from advisor.predictor import calibration_for

    c = calibration_for(resolve_platform("h200x1")).ceilings
    p1, p2 = _pass(s1, eff, c), _pass(s2, eff, c)
    layers = 4
    # 1024 more tokens: the loop body's kernels, forward and backward, the trace's own counts per token
    assert p2.extra_fwd - p1.extra_fwd == pytest.approx(layers * t.layer.kernels_seq_fwd * 1024)
    assert p2.extra_bwd - p1.extra_bwd == pytest.approx(layers * t.layer.kernels_seq_bwd * 1024)
    assert t.layer.kernels_seq_bwd > 2 * t.layer.kernels_seq_fwd  # autograd's loop is longer than the forward's
    f1, b1 = _dispatch(s1, eff, p1, _pass(s1, eff, c, layers_only=True))
    f2, b2 = _dispatch(s2, eff, p2, _pass(s2, eff, c, layers_only=True))
    assert f2 - f1 == pytest.approx((p2.extra_fwd - p1.extra_fwd) * per)
    assert b2 - b1 == pytest.approx((p2.extra_bwd - p1.extra_bwd) * per)


def test_a_llama_layer_has_no_extra_kernels_under_deepspeed_s_bf16() -> None:
    from advisor.predictor import calibration_for
    from probes.hf_model import config_dict

    arch = resolve_model("llama3.2-1b")
    c = calibration_for(resolve_platform("h200x1")).ceilings
    ds = TrainCase(id="t", hardware="h200x1", model="llama3.2-1b", task="pretrain", zero_stage=1)
    t = trace_model(config_dict(arch), TraceVariant(trains="all", autocast=False))
    p = _pass(derive(ds, arch, resolve_platform("h200x1"), t), Efficiencies(), c, layers_only=True)
    assert p.extra_fwd == 0 and p.extra_bwd == 0  # its layers: the count kernel_time_s is fitted per
    # PyTorch's fp32 weights under autocast: each projection's weight is cast to bf16 in every forward, kernels a
    # Llama layer of the fit (bf16) never launched
    pt = ds.model_copy(update={"engine": "pytorch", "zero_stage": 0})
    t32 = trace_model(config_dict(arch), TraceVariant(trains="all", fp32_weights=True))
    p32 = _pass(derive(pt, arch, resolve_platform("h200x1"), t32), Efficiencies(), c, layers_only=True)
    assert p32.extra_fwd >= 7 * arch.num_hidden_layers


def test_mfu_counts_only_the_experts_a_token_visits() -> None:
    arch = resolve_model("mixtral-8x7b")
    case = TrainCase(id="t", hardware="h200x1", model="mixtral-8x7b", task="finetune", method="qlora", seq_len=1024)
    s = derive(case, arch, resolve_platform("h200x1"))
    # Mixtral: 2 of 8 experts per token, 12.9B of its 46.7B parameters multiply a token (Mistral AI's figures)
    active = model_flops_per_step(s) / 1024 / 4.0  # a frozen base: 4 FLOPs per multiplying parameter and token
    attention = 12.0 * arch.num_hidden_layers * arch.num_attention_heads * arch.head_size * 1024 / 4.0
    assert (active - attention) / 1e9 == pytest.approx(12.9, rel=0.03)


def test_a_recomputed_forward_costs_the_host_its_own_factor_in_backward_only() -> None:
    """The checkpointed forward run again inside backward is priced at ``recompute_dispatch_factor`` per forward
    kernel of the layers; without recomputation the factor changes nothing."""
    from advisor.predictor import calibration_for

    c = calibration_for(resolve_platform("h100x1")).ceilings
    arch = resolve_model("llama2-7b")
    for recompute in (True, False):
        case = TrainCase(id="t", hardware="h100x1", model="llama2-7b", task="pretrain", engine="pytorch",
                         recompute=recompute, micro_batch_size=1, seq_len=512)
        s = derive(case, arch, resolve_platform("h100x1"))
        one, two = Efficiencies(recompute_dispatch_factor=1.0), Efficiencies(recompute_dispatch_factor=2.0)
        full, layers = _pass(s, one, c), _pass(s, one, c, layers_only=True)
        f1, b1 = _dispatch(s, one, full, layers)
        f2, b2 = _dispatch(s, two, full, layers)
        assert f1 == f2
        assert b2 - b1 == pytest.approx(layers.kernels * one.kernel_time_s if recompute else 0.0)
        assert layers.kernels > 0
