"""`advisor calibrate` refits quickly by default (the platform factors over the previous fit); --full refits all."""

from __future__ import annotations

import json
import time

from typer.testing import CliRunner

from advisor import cli
from knowledge.paths import BUNDLED_CALIBRATION


def test_default_calibrate_refits_the_platform_factors_only_and_keeps_the_held_out_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    import advisor.calibrate

    def no_full_refit(*a, **k):  # the default must never fall into the 20-minute path
        raise AssertionError("the full refit ran")

    monkeypatch.setattr(advisor.calibrate, "refit", no_full_refit)
    cli._register()
    t0 = time.perf_counter()
    r = CliRunner().invoke(cli.app, ["calibrate"], env={"COLUMNS": "80"})
    took = time.perf_counter() - t0
    assert r.exit_code == 0, r.output
    assert "quick refit" in r.stdout and "--full" in r.stdout
    fit = json.loads((tmp_path / "calibration" / "fitted.json").read_text())
    bundled = json.loads(BUNDLED_CALIBRATION.read_text())
    assert fit["refit"].startswith("fast") and fit["held_out_from_previous_fit"] is True
    assert fit["parameters"] == bundled["parameters"]  # the shared parameters are the previous fit's
    assert fit["held_out_mape"] == bundled["held_out_mape"] and fit["serving_parameters"] == bundled["serving_parameters"]
    assert set(fit["platform_factors"]) == set(bundled["platform_factors"])
    assert took < 120, took  # about 10 s on 2 cores; a generous bound that still catches the minutes-long full fit


def test_full_is_the_flag_for_the_full_refit():
    cli._register()
    r = CliRunner().invoke(cli.app, ["calibrate", "--help"], env={"COLUMNS": "80"})
    assert "--full" in r.stdout
