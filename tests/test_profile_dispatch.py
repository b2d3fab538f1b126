"""A profile brings its host's CPU speed: the per-kernel dispatch cost follows the host's measured launch of one small
kernel (models.calibration.host_dispatch_scale), with the exponent the bundled fit learned from the probed hosts,
against the probed hosts' launch on a machine the fit never saw, and against the launch of the lease whose profile is
bundled on a platform the fit learned (tests/benchmarks/launch_scaling_leases.out.txt: ten H100 lease grids 11.5 ->
10.7%, signed -4.3 -> +0.3%)."""

import json

import pytest

from advisor.evaluation import dispatch_launch_exponent
from advisor.predictor import calibration_for
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import CALIBRATION_DIR, load_efficiencies
from knowledge.measurements import load_bundled_profiles
from knowledge.schema import TrainCase
from models.calibration import host_dispatch_scale
from models.training import predict_training


def test_scale_is_the_launch_ratio_to_the_exponent():
    assert host_dispatch_scale(2e-5, 1e-5, 0.5) == pytest.approx(2**0.5)
    assert host_dispatch_scale(1e-5, 1e-5, 0.63) == pytest.approx(1.0)
    assert host_dispatch_scale(None, 1e-5, 1.0) == 1.0  # an old profile without the launch probe changes nothing
    assert host_dispatch_scale(1e-5, None, 1.0) == 1.0


def test_the_bundled_exponent_is_the_slope_of_the_bundled_fit():
    fit = json.loads((CALIBRATION_DIR / "fitted.json").read_text())
    exponent = dispatch_launch_exponent(fit["platform_factors"], load_bundled_profiles())
    assert exponent is not None and 0.0 < exponent <= 1.0
    assert load_efficiencies().dispatch_launch_exponent == pytest.approx(exponent, abs=1e-3)


def test_no_slope_from_hosts_that_launch_alike():
    profiles = load_bundled_profiles()
    same = {k: p.model_copy(update={"launch_overhead_s": 7e-6}) for k, p in profiles.items()}
    fit = json.loads((CALIBRATION_DIR / "fitted.json").read_text())
    assert dispatch_launch_exponent(fit["platform_factors"], same) is None


def _cpu_bound_tokens_per_s(hardware: str, launch_s: float) -> float:
    prof = load_bundled_profiles()["h100x1"].model_copy(update={"launch_overhead_s": launch_s})
    platform = resolve_platform(hardware)
    case = TrainCase(id="c", hardware=hardware, model="llama2-7b", task="finetune", method="lora", engine="pytorch",
                     micro_batch_size=1, seq_len=256, gpus=platform.count)
    return predict_training(case, resolve_model("llama2-7b"), platform, calibration_for(platform, prof)).tokens_per_s


def test_a_new_hosts_slower_launch_makes_a_cpu_bound_step_slower():
    # h100x4: no run of it in the fit, so its profile's host is all the prediction knows of its CPU
    from knowledge.efficiency import load_platform_factors

    assert "h100x4" not in load_platform_factors()
    slow, fast = _cpu_bound_tokens_per_s("h100x4", 2e-5), _cpu_bound_tokens_per_s("h100x4", 5e-6)
    assert slow < 0.8 * fast


def test_a_learned_platform_s_host_follows_a_lease_s_launch_against_its_bundled_profile_s():
    # its learned costs hold at the bundled profile's launch: that profile changes no host cost, a lease that launches
    # faster or slower scales them by the ratio to the fitted exponent; the measured ceilings replace the generation's
    platform = resolve_platform("h100x1")
    none = calibration_for(platform)
    bundled = load_bundled_profiles()["h100x1"]
    same = calibration_for(platform, bundled)
    assert same.eff.kernel_time_s == pytest.approx(none.eff.kernel_time_s)
    assert same.source.startswith("profile")
    exponent = none.eff.dispatch_launch_exponent
    for launch in (bundled.launch_overhead_s / 2, bundled.launch_overhead_s * 2):
        cal = calibration_for(platform, bundled.model_copy(update={"launch_overhead_s": launch}))
        ratio = (launch / bundled.launch_overhead_s) ** exponent
        assert cal.eff.kernel_time_s == pytest.approx(none.eff.kernel_time_s * ratio)
        assert cal.measured["kernel_dispatch_scale"] == pytest.approx(ratio)
    slow, fast = (_cpu_bound_tokens_per_s("h100x1", bundled.launch_overhead_s * k) for k in (2.0, 0.5))
    assert slow < fast
