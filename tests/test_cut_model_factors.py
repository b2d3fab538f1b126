"""The probe's real layers (a model cut to one and two layers) are fitted under a host factor of their own: their
per-step host costs are not a whole model's (advisor.evaluation.CUT_MODEL_FACTORS)."""

from __future__ import annotations

import json

from advisor.evaluation import CUT_MODEL_FACTORS, training_rows
from knowledge.measurements import all_measurements
from knowledge.paths import BUNDLED_CALIBRATION


def test_probe_rows_fit_their_own_platform_factors_but_are_held_out_with_their_platform() -> None:
    rows, _ = training_rows(list(all_measurements()))
    probe = [r for r in rows if r.from_probe]
    runs = [r for r in rows if not r.from_probe]
    assert probe and runs
    for r in probe:
        assert r.sample[2].id == r.platform.id + CUT_MODEL_FACTORS
        assert r.group("platform") == r.platform.id and r.group("server") == r.group("server").replace(CUT_MODEL_FACTORS, "")
        assert "[:" in r.arch.name  # a cut of a model: what the separate factor is for
    assert all(r.sample[2].id == r.platform.id for r in runs)


def test_the_bundled_fit_keeps_the_cut_factors_apart_and_predictions_never_use_them() -> None:
    fit = json.loads(BUNDLED_CALIBRATION.read_text())
    cut = {k for k in fit["platform_factors"] if k.endswith(CUT_MODEL_FACTORS)}
    assert cut, "the bundled fit has no factors of the probe's cut models"
    from knowledge.catalog import resolve_platform

    for key in cut:  # no platform a user can name carries the suffix
        plain = key[: -len(CUT_MODEL_FACTORS)]
        assert resolve_platform(plain).id == plain
        # the cut models asked a CPU cost per kernel of their own: it differs from the whole models' on that host
        assert fit["platform_factors"][key]["kernel_time_s"] != fit["platform_factors"][plain]["kernel_time_s"]
