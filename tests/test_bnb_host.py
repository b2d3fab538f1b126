"""bitsandbytes' 4-bit projections on the host: measured by ``probes.bnb_host``, priced by ``models.step_time``.

Anatomy 38 (one H200, host-bound at 1 x 1,024) ran QLoRA of Qwen3-8B and Qwen2.5-3B at 1.37x and 1.47x the step of LoRA
of the same model; the model said 1.10x while it priced two kernels a 4-bit call and the trace hid every LoRA-adapted
projection from quantization. The per-call cost now comes from a micro-probe on another lease (tiny shapes, no model
of anatomy 38's), so the ratios below are a check of it, not a fit to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cases import parse_case
from advisor.predictor import Predictor
from knowledge.bnb_host import BNB_HOST_COST
from knowledge.traces import TraceVariant
from probes.bnb_host import table
from probes.trace import trace_model

ROOT = Path(__file__).resolve().parents[1]
ANATOMY = ROOT / "knowledge/measurements/own/logs/h200x1-anatomy-38-2026-11-30.jsonl"
LLAMA_TOY = {"model_type": "llama", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000}


def _case(model: str, method: str) -> object:
    q = {"quantization": "nf4"} if method == "qlora" else {}
    return parse_case({"id": f"{model}-{method}", "hardware": "h200x1", "model": f"knowledge/data/configs/{model}.json",
                       "task": "finetune", "engine": "pytorch", "method": method, "micro_batch_size": 1,
                       "seq_len": 1024, **q})


def _ratios() -> list[tuple[float, float]]:
    steps = {json.loads(x)["id"]: json.loads(x)["step_s"] for x in ANATOMY.read_text().splitlines()}
    p = Predictor()
    out = []
    for model, tag in (("qwen3-8b", "qwen3-8b"), ("qwen2.5-3b", "qwen25-3b")):
        measured = steps[f"a38-{tag}-qlora"] / steps[f"a38-{tag}-lora"]
        out.append((p.predict(_case(model, "qlora")).step_time_s / p.predict(_case(model, "lora")).step_time_s, measured))
    return out


def test_qlora_over_lora_as_one_h200_measured() -> None:
    for predicted, measured in _ratios():
        assert measured > 1.3
        assert predicted == pytest.approx(measured, rel=0.10)


def test_a_lora_adapted_projection_is_still_one_quantization_replaces() -> None:
    # PEFT's wrapper forwards ``weight`` to its base layer; before trace schema 24 it hid q/k/v/o from quantization
    t = trace_model(LLAMA_TOY, TraceVariant(trains="adapters", lora_targets=["q_proj", "k_proj", "v_proj", "o_proj"],
                                            lora_rank=8, bnb_base=True))
    quantized = {(g.k, g.n) for g in t.layer.gemms if g.quantizable and g.phase == "fwd"}
    assert quantized == {(64, 128), (128, 128), (128, 256)}  # k/v, q/o, gate/up/down (shapes as sorted pairs)
    assert sum(g.calls for g in t.layer.gemms if g.quantizable and g.phase == "fwd") == 7


def test_the_host_cost_counts_every_4bit_projection_and_the_adapted_ones_again() -> None:
    from knowledge.catalog import resolve_model, resolve_platform
    from models.setup import derive
    from models.step_time import bnb_host_calls

    cost = BNB_HOST_COST
    arch, platform = resolve_model("llama3.2-3b"), resolve_platform("h200x1")

    def calls(method: str, quant: str, task: str = "finetune") -> tuple[float, float]:
        case = parse_case({"id": method, "hardware": "h200x1", "model": "llama3.2-3b", "task": task,
                           "method": method, "quantization": quant})
        return bnb_host_calls(derive(case, arch, platform))  # the hand count: 7 projections, q/k/v/o adapted

    layers = arch.num_hidden_layers
    assert calls("lora", "none") == (0.0, 0.0) and calls("full", "int8", "pretrain") == (0.0, 0.0)
    fwd, bwd = calls("qlora", "nf4")
    assert fwd == pytest.approx(layers * (7 * cost.nf4_fwd_calls + 4 * cost.qlora_wrapper_fwd_calls))
    assert bwd == pytest.approx(layers * (7 * cost.nf4_bwd_calls + 4 * cost.qlora_wrapper_bwd_calls))
    # the study's Q pre-training: every projection 4-bit, no PEFT wrapper
    assert calls("full", "nf4", "pretrain") == pytest.approx((layers * 7 * cost.nf4_fwd_calls, layers * 7 * cost.nf4_bwd_calls))


def _row(run: int, variant: str, autocast: bool, f: float, b: float) -> dict:
    return {"run": run, "variant": variant, "autocast": autocast, "forward_s": f, "backward_s": b,
            "launch_s": 1e-5, "launch_after_s": 1e-5}


def test_the_table_is_extra_time_in_bf16_projection_calls() -> None:
    rows = [_row(r, v, a, f, b) for r in (0, 1) for a in (False, True) for v, f, b in
            (("linear", 10e-6, 20e-6), ("linear4bit", 40e-6, 80e-6), ("lora", 100e-6, 200e-6), ("qlora", 150e-6, 300e-6))]
    t = table(rows, "test")
    assert t["nf4_fwd_calls"] == 3.0 and t["nf4_bwd_calls"] == 3.0  # (40 - 10) / 10, (80 - 20) / 20
    assert t["qlora_wrapper_fwd_calls"] == 2.0 and t["qlora_wrapper_bwd_calls"] == 2.0  # (50 - 30) / 10, (100 - 60) / 20


def test_the_bundled_table_says_where_it_was_measured() -> None:
    cost = BNB_HOST_COST
    assert "probes.bnb_host" in cost.source and "bitsandbytes" in cost.source
    assert 1 < cost.nf4_fwd_calls < 10 and 1 < cost.nf4_bwd_calls < 10


def test_an_expert_that_shares_a_projections_shape_stays_unquantized() -> None:
    # Granite-MoE's experts are 3-D parameters (bitsandbytes replaces nn.Linear only) whose output half is the k/v
    # projections' shape (1536 x 512 at 3B-A800M). Told by shape, they were priced as 4-bit projections under QLoRA and
    # the grid's run came out 24% faster than predicted; trace schema 25 tells a product by its weight's storage
    toy = {"model_type": "granitemoe", "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
           "vocab_size": 1000}
    t = trace_model(toy, TraceVariant(trains="adapters", lora_targets=["q_proj", "v_proj"], lora_rank=8, bnb_base=True))
    fwd = [g for g in t.layer.gemms if g.phase == "fwd" and not g.adapter]
    assert {(g.k, g.n) for g in fwd if g.grouped} == {(32, 64), (64, 64)}  # the experts' two products
    assert {(g.k, g.n) for g in fwd if not g.grouped and g.quantizable} == {(32, 64), (64, 64)}  # k/v, q/o
    assert not any(g.quantizable for g in fwd if g.grouped)
