"""Macro probe: real layers of the model under the real configuration, extrapolated by layer count."""

from __future__ import annotations

import pytest

from knowledge.catalog import resolve_model
from knowledge.schema import TrainCase
from probes.macro import extrapolate, macro_probe

TOY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 8, "num_attention_heads": 4,
       "num_key_value_heads": 2, "vocab_size": 256}


def test_extrapolate_is_the_line_through_both_points():
    assert extrapolate(1, 2, 0.10, 0.15, 32) == pytest.approx(0.10 + 0.05 * 31)
    assert extrapolate(2, 4, 3.0, 5.0, 2) == 3.0


@pytest.mark.slow
def test_macro_probe_runs_truncated_models_on_cpu():
    case = TrainCase(id="toy", hardware="h100x1", model=TOY, task="pretrain", engine="pytorch", seq_len=16, micro_batch_size=2)
    m = macro_probe(case, resolve_model(TOY), steps=2, warmup=1, device="cpu", timeout_s=240)
    assert m.measured.error is None, m.measured.error
    assert m.measured.step_time_s > 0 and m.measured.tokens_per_s == pytest.approx(32 / m.measured.step_time_s)
    assert '"layers": [1, 2]' in m.notes


def test_macro_probe_reports_a_failure_as_a_row():
    case = TrainCase(id="bad", hardware="h100x1", model=TOY, task="pretrain", engine="pytorch", seq_len=16)
    m = macro_probe(case, resolve_model(TOY), device="cuda:7", timeout_s=120)  # no such GPU here
    assert m.measured.error and m.measured.tokens_per_s is None
