"""The fit verdict near the limit (models.oom): a spread fitted to which runs really ran out of GPU memory."""

import json
from pathlib import Path

import pytest

from advisor.cases import parse_case
from advisor.predictor import Predictor
from models.oom import DEVICE_SPREAD, P_OOM_FITS, Spread, p_exceeds, regime_of

ROWS = Path(__file__).resolve().parents[1] / "knowledge" / "measurements" / "own" / "h200x1-oom-boundary-2026-11-28.jsonl"


def test_bias_moves_the_need_up():
    at_92 = (92.0, 100.0)
    assert p_exceeds(*at_92, Spread(0.0, 0.03)) < 0.01  # one sigma of 3% around the peak: safe
    assert p_exceeds(*at_92, Spread(0.094, 0.035)) > 0.5  # DeepSpeed full training's fitted spread: more likely out


def test_regimes():
    assert regime_of("deepspeed", True, False) == "zero3"
    assert regime_of("pytorch", False, True) == "pytorch-adapters"
    assert regime_of("deepspeed", False, False) == "deepspeed-full"
    assert set(DEVICE_SPREAD) == {regime_of(e, False, a) for e in ("pytorch", "deepspeed") for a in (True, False)} | {"zero3"}


def test_full_training_is_refused_sooner_than_adapters():
    """At the same share of the GPU, full training (gradients and optimizer states among the activations) is riskier."""
    need, usable = 91.0, 100.0
    full = p_exceeds(need, usable, DEVICE_SPREAD["pytorch-full"])
    adapters = p_exceeds(need, usable, DEVICE_SPREAD["pytorch-adapters"])
    assert adapters <= P_OOM_FITS < full


@pytest.mark.parametrize("row", [json.loads(x) for x in ROWS.read_text().splitlines()], ids=lambda r: r["case"]["id"])
def test_no_run_that_ran_out_is_called_fitting(row):
    """The boundary grid's runs (one H200, 85-97% of its memory predicted): none that ran out of memory may be called
    fitting. (Runs that ran may be refused: the rule errs on the side of not crashing.)"""
    p = Predictor(None).predict(parse_case(row["case"]))
    if row["measured"].get("failure") == "device_oom":
        assert not p.fits and p.p_oom > P_OOM_FITS
