"""The package's validation reports answer a fresh install at once: each was computed from today's rows, code
and profiles, so `advisor validate` prints it in seconds instead of refitting for minutes. A row, a model file or
a profile added without recomputing them (`advisor calibrate --full --bundled`, or ``validation_report`` then
``store_report(..., bundled=True)``) fails here."""

from __future__ import annotations

import json

import pytest

from advisor.validation_cache import fingerprint
from knowledge.efficiency import CALIBRATION_DIR


@pytest.mark.parametrize("holdout", ["model", "platform", "server"])
def test_the_bundled_reports_are_of_todays_inputs(holdout, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))  # the bundled rows only, as on a fresh install
    stored = json.loads((CALIBRATION_DIR / f"validation-all-{holdout}.json").read_text())
    assert stored["fingerprint"] == fingerprint("all", holdout), f"validation-all-{holdout}.json is stale"
