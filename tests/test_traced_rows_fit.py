"""The traced families' runs are fitted: each row carries the trace its prediction takes, and the fit predicts a row
exactly as ``advisor predict`` predicts its case (one model of the step, whichever path asks)."""

from __future__ import annotations

import pytest

from advisor.evaluation import training_rows
from advisor.predictor import Predictor
from knowledge.measurements import all_measurements


@pytest.fixture(scope="module")
def rows():
    return training_rows(list(all_measurements()))[0]


def test_traced_rows_carry_their_trace_into_the_fit(rows) -> None:
    traced = [r for r in rows if r.trace is not None]
    catalog = [r for r in rows if r.trace is None]
    assert len(traced) > 100 and catalog
    assert {r.arch.hf_model_type for r in traced} >= {"qwen3", "phi3", "gemma2", "deepseek_v2"}
    assert all(r.sample[3] is r.trace for r in traced)
    assert all(len(r.sample) == 4 and r.sample[3] is None for r in catalog)
    hand_only, _ = training_rows(list(all_measurements()), traced_families=False)
    assert len(hand_only) == len(catalog)


def test_a_row_is_predicted_as_advisor_predict_predicts_its_case(rows) -> None:
    p = Predictor()
    picked = [r for r in rows if r.trace is not None and r.has_throughput][:: 40]
    picked += [r for r in rows if r.trace is None and r.has_throughput][:: 60]
    assert len(picked) >= 8
    for r in picked:
        via_row = r.predict(p.calibration(r.platform)).tokens_per_s
        assert via_row == pytest.approx(p.predict(r.case).tokens_per_s, rel=1e-9), r.case.id


def test_the_fit_sees_each_traced_row_as_predict_does(rows) -> None:
    # the fit's own prediction of its rows, at the bundled values, is advisor predict's, row by row
    from knowledge.efficiency import load_efficiencies, load_platform_factors, load_probe_ratios
    from models.correction import EfficiencyCorrection

    picked = [r for r in rows if r.trace is not None and r.has_throughput][:: 25][:12]
    est = EfficiencyCorrection(ratio_table=load_probe_ratios())
    est.efficiencies_, est.platform_factors_ = load_efficiencies(), load_platform_factors()
    p = Predictor()
    for r, f in zip(picked, est.predict([r.sample for r in picked])):
        assert f == pytest.approx(p.predict(r.case).tokens_per_s, rel=1e-6), r.case.id
