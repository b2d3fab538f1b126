"""The step time of a case as a test weighs it: the hand count on its platform's bundled calibration, with chosen
efficiencies set over the fitted ones (one place for the tests that move one term and watch the step)."""

from __future__ import annotations

from advisor.predictor import calibration_for
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import TrainCase
from models.setup import derive
from models.step_time import StepTime, training_step_time


def step_time(case: TrainCase, **efficiencies: float) -> StepTime:
    """``case``'s step on its platform's calibration, ``efficiencies`` (names of ``Efficiencies``) set over the fit."""
    platform = resolve_platform(case.hardware, case.gpus)
    cal = calibration_for(platform)
    eff = cal.eff.model_copy(update=efficiencies) if efficiencies else cal.eff
    return training_step_time(derive(case, resolve_model(case.model), platform), eff, cal.ceilings)
