"""Full training over a quantized base (the study's "Q" pre-training: NF4 projections frozen, embeddings, head and norms
trained), against its runs on one H200 (own/h200-study-quant-2026-11-29.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.predictor import Predictor
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import TrainCase
from models.setup import derive
from models.step_time import trainable_tensors

RUNS = Path(__file__).resolve().parents[1] / "knowledge/measurements/own/h200-study-quant-2026-11-29.jsonl"


def test_a_quantized_base_trains_the_norms_of_its_layers_only():
    """The hand count (catalog Llama) and the trace (a config.json) agree: the projections are frozen."""
    def tensors(model: str, quantization: str) -> float:
        case = TrainCase(id="q", hardware="h200x1", model=model, task="pretrain", quantization=quantization, seq_len=350)
        from advisor.traces import TraceBook

        arch = resolve_model(model)
        return trainable_tensors(derive(case, arch, resolve_platform("h200x1"), TraceBook().trace(arch, case)))

    assert tensors("llama2-7b", "nf4") == 2 * 32 and tensors("llama2-7b", "int8") == 2 * 32
    assert tensors("llama2-7b", "none") == 9 * 32


def test_the_q_runs_without_recomputation_come_out_within_their_measured_steps():
    rows = [json.loads(x) for x in RUNS.read_text().splitlines() if x.strip()]
    plain = [r for r in rows if not r["case"]["recompute"]]
    assert len(plain) == 5
    p = Predictor()
    for r in plain:
        # 0.05 s of per-tensor optimizer loops (288 tensors) made the 7B ones 17-24% slow before
        assert p.predict(TrainCase.model_validate(r["case"])).step_time_s == pytest.approx(r["measured"]["step_time_s"], rel=0.25)
