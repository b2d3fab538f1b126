"""bitsandbytes' 4-bit linear on the host, as one H200 measured it (anatomy 38): a known miss, kept as a target.

Host-bound QLoRA of Qwen3-8B and Qwen2.5-3B at 1 x 1,024 took 1.37x and 1.47x the step of LoRA of the same model on one
lease; the model, pricing two kernels a quantized linear's call, says 1.10x. A measured per-call cost closed it but moved
the fit elsewhere (``tests/benchmarks/qlora_host.py``), so it is not in the model; this test fails loudly (xfail strict)
the day the model gets it right, and then becomes a plain check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cases import parse_case
from advisor.predictor import Predictor

ROOT = Path(__file__).resolve().parents[1]
ANATOMY = ROOT / "knowledge/measurements/own/logs/h200x1-anatomy-38-2026-11-30.jsonl"


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


def test_qlora_is_slower_than_lora_of_the_same_model() -> None:
    for predicted, measured in _ratios():
        assert measured > 1.3 and predicted > 1.0


@pytest.mark.xfail(strict=True, reason="bitsandbytes' host cost per 4-bit linear is priced as two kernels (anatomy 38)")
def test_qlora_over_lora_as_one_h200_measured() -> None:
    for predicted, measured in _ratios():
        assert predicted == pytest.approx(measured, rel=0.10)
