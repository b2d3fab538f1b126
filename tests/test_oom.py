"""The fit verdict near the limit (models.oom): a spread fitted to which runs really ran out of GPU memory."""

import json
from pathlib import Path

import pytest

from advisor.cases import parse_case
from advisor.predictor import Predictor
from models.oom import DEVICE_SPREAD, P_OOM_FITS, Spread, oom_risk, p_exceeds

OWN = Path(__file__).resolve().parents[1] / "knowledge" / "measurements" / "own"
GRIDS = ("h200x1-oom-boundary-2026-11-28.jsonl", "h200x1-oom-boundary-2-2026-11-28.jsonl",
         "h200x1-oom-boundary-3-2026-11-28.jsonl", "h200x1-oom-boundary-4-2026-11-28.jsonl")
ROWS = [json.loads(x) for name in GRIDS
        for x in (OWN / name).read_text().splitlines()]


def test_bias_moves_the_need_up():
    at_92 = (92.0, 100.0)
    assert p_exceeds(*at_92, Spread(0.0, 0.03)) < 0.01  # one sigma of 3% around the peak: safe
    assert p_exceeds(*at_92, DEVICE_SPREAD) > P_OOM_FITS  # the spread fitted to which runs ran out: not safe


def test_risk_names_where_it_runs_out():
    """The device and host parts apart, their union as the total: a case at 99% of host RAM and 50% of its GPU runs
    out on the host, and the total is never below either part."""
    risk = oom_risk(50.0, 100.0, 99.0, 100.0)
    assert risk.host > 0.3 and risk.device < 1e-6
    assert risk.total >= max(risk.device, risk.host)
    assert oom_risk(50.0, 100.0, 0.0, 100.0).host == 0.0  # nothing on the host: no host risk


def test_safe_below_the_boundary():
    assert p_exceeds(85.0, 100.0, DEVICE_SPREAD) <= P_OOM_FITS


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["case"]["id"])
def test_no_run_that_ran_out_is_called_fitting(row):
    """The boundary grids' runs (one H200, 80-97% of its memory predicted): none that ran out of memory may be called
    fitting. (Runs that ran may be refused: the rule errs on the side of not crashing.)"""
    p = Predictor(None).predict(parse_case(row["case"]))
    if row["measured"].get("failure") == "device_oom":
        assert not p.fits and p.p_oom > P_OOM_FITS
