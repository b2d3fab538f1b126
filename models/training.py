"""A training or fine-tuning prediction: memory model + step-time model -> the contract's fields."""

from __future__ import annotations

from knowledge.efficiency import Efficiencies
from knowledge.schema import ModelArch, PlatformSpec, Profile, TrainBreakdown, TrainCase, TrainPrediction
from knowledge.units import GiB
from models.memory import TrainMemory, training_memory, usable_gib
from models.roofline import apply_profile, ceilings
from models.setup import TrainSetup, derive
from models.step_time import StepTime, tokens_per_step, training_step_time


def _fits(s: TrainSetup, mem: TrainMemory, eff: Efficiencies) -> tuple[bool, str | None]:
    cap = usable_gib(s.platform.gpu.memory_gib, eff)
    peak = mem.peak / GiB
    if peak > cap:
        return False, f"needs {peak:.1f} GiB per GPU, {cap:.1f} GiB usable of {s.platform.gpu.memory_gib:.1f}"
    host_gib = mem.host / GiB
    if host_gib > 0.95 * s.platform.host.host_ram_gib:
        return False, f"offload needs {host_gib:.0f} GiB of host RAM, the server has {s.platform.host.host_ram_gib:.0f}"
    return True, None


def breakdown(mem: TrainMemory, t: StepTime) -> TrainBreakdown:
    return TrainBreakdown(
        forward_s=t.forward, backward_s=t.backward, optimizer_s=t.optimizer, communication_s=t.communication,
        offload_s=t.offload, overhead_s=t.overhead, weights_gib=mem.weights / GiB, grads_gib=mem.grads / GiB,
        optimizer_states_gib=mem.optimizer_states / GiB, activations_gib=mem.activations / GiB,
        buffers_gib=mem.buffers / GiB, overhead_gib=mem.overhead / GiB,
    )


def predict_training(
    case: TrainCase,
    arch: ModelArch,
    platform: PlatformSpec,
    eff: Efficiencies,
    profile: Profile | None = None,
    rel_error: float | None = None,
) -> TrainPrediction:
    """Predict one training case. ``rel_error`` (held-out MAPE) widens the throughput interval."""
    eff = apply_profile(eff, platform, profile)
    s = derive(case, arch, platform)
    mem = training_memory(s, eff)
    t = training_step_time(s, eff, ceilings(platform, eff))
    step = t.total
    tps = tokens_per_step(s) / step
    fits, why = _fits(s, mem, eff)
    interval = None
    if rel_error:
        interval = {"tokens_per_s": (tps / (1 + rel_error), tps * (1 + rel_error)), "step_time_s": (step / (1 + rel_error), step * (1 + rel_error))}
    return TrainPrediction(
        id=case.id, tokens_per_s=tps, step_time_s=step, peak_mem_gib=mem.peak / GiB, fits=fits,
        breakdown=breakdown(mem, t), interval=interval, host_mem_gib=mem.host / GiB or None,
        capacity_gib=platform.gpu.memory_gib, why_not_fits=why,
    )
