"""A node's ranks slow each other's host work (``Efficiencies.node_ranks_host_factor``), measured as the same host-bound
step run by one rank and by two on one two-H200 machine (own/h200x2-rank-pairs-2026-11-29.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.predictor import calibration_for
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import TrainCase
from models.setup import derive
from models.step_time import ranks_contend
from tests.step_times import step_time

PAIRS = Path(__file__).resolve().parents[1] / "knowledge/measurements/own/h200x2-rank-pairs-2026-11-29.jsonl"


def _step(case: TrainCase, factor: float) -> tuple[float, float]:
    """(step s, exposed host s) of ``case`` with the contention factor set to ``factor``."""
    t = step_time(case, node_ranks_host_factor=factor)
    return t.total, t.forward_cpu_exposed + t.backward_cpu_exposed


def test_only_a_node_with_several_ranks_contends():
    kw = dict(hardware="h200x2", model="tinyllama-1.1b", task="finetune", method="lora", engine="pytorch", seq_len=512)
    one, two = TrainCase(id="a", gpus=1, **kw), TrainCase(id="b", gpus=2, **kw)
    assert _step(one, 1.5) == pytest.approx(_step(one, 1.0))  # one rank: nothing to contend with
    step1, host1 = _step(two, 1.0)
    step15, host15 = _step(two, 1.5)
    assert host1 > 0.2 * step1, "the case must be host-bound for the check to mean anything"
    assert step15 > step1 + 0.3 * host1  # the exposed host time grows with the factor


def test_a_gpu_bound_step_barely_feels_it():
    case = TrainCase(id="g", hardware="h200x2", gpus=2, model="llama2-7b", task="pretrain", engine="deepspeed",
                     zero_stage=3, micro_batch_size=4, seq_len=4096)
    assert _step(case, 1.5)[0] == pytest.approx(_step(case, 1.0)[0], rel=0.05)


def test_the_bundled_fit_learned_that_two_ranks_contend():
    """The pairs' own evidence (two of six pairs 1.5-1.6x slower with two ranks, one 1.24x, three unchanged), which the
    bundled fit includes: its factor is above 1 and within what the pairs span."""
    rows = [json.loads(x) for x in PAIRS.read_text().splitlines() if x.strip()]
    assert len(rows) >= 12
    case = TrainCase.model_validate(rows[1]["case"])
    platform = resolve_platform(case.hardware, case.gpus)
    s = derive(case, resolve_model(case.model), platform)
    assert s.per_node == 2
    factor = ranks_contend(s, calibration_for(platform).eff)
    assert 1.05 < factor < 1.7
