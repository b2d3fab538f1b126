"""A training or fine-tuning prediction: memory model + step-time model -> the contract's fields."""

from __future__ import annotations

import dataclasses
import math

from knowledge.schema import ModelArch, PlatformSpec, TrainBreakdown, TrainCase, TrainPrediction
from knowledge.traces import ArchTrace
from knowledge.units import GiB
from models.calibration import Calibration
from models.memory import (STAGE3_PERSISTENCE_THRESHOLD, TrainMemory, fragmentation_bytes, host_pinned_bytes,
                           host_swept_bytes, training_memory, usable_gib)
from models.oom import P_OOM_FITS, oom_risk
from models.setup import TrainSetup, derive
from models.step_time import StepTime, model_flops_per_step, tokens_per_step, training_step_time


FRAGMENTATION_NAMED = 0.1  # of the need: the allocator's reserve beside the tensors named in the message from this share on


def _fits(s: TrainSetup, mem: TrainMemory, cal: Calibration, held_gib: float) -> tuple[bool, str | None, str | None, float]:
    """(fits, why not, failure kind, p_oom): fits only when P(OOM) <= 5% (models.oom). ``held_gib``: what the allocator
    holds beside the peak's tensors (``models.memory.fragmentation_bytes``)."""
    outside = zero3_unfetched(s)
    if outside:
        return False, (f"ZeRO-3 would crash: the model's code reads {outside} outside the forward of the module holding "
                       "it, where DeepSpeed has not gathered it (mark that module a ZeRO-3 leaf with "
                       "deepspeed.utils.set_z3_leaf_modules, or use ZeRO-2)"), "crash", 1.0
    cap = usable_gib(s.platform.gpu.memory_gib, cal.eff)
    need = required_gib(mem, held_gib)
    host_gib = mem.host / GiB
    host_cap = host_capacity_gib(cal)
    risk = oom_risk(need, cap, host_gib, host_cap)
    p = risk.total
    # the message rounds the need up and the capacity down, so what it prints always shows the shortfall
    # the allocator's reserve beside the tensors, when a sizeable part of the need, is named: it is not in the peak
    again = f" ({round_up(mem.peak / GiB)} GiB of tensors, {round_up(held_gib)} the allocator holds as each layer asks for " \
        "its largest block again)" if held_gib > FRAGMENTATION_NAMED * need else ""
    if need > cap:
        return False, (f"needs {round_up(need)} GiB per GPU{again}, {round_down(cap)} GiB usable of "
                       f"{s.platform.gpu.memory_gib:.1f}"), "device_oom", p
    swap = f" and {round_down(cal.host_swap_gib, 0)} GiB of swap" if cal.host_swap_gib else ""
    if host_gib > host_cap:
        return False, f"needs {round_up(host_gib, 0)} GiB of host RAM, {round_down(cal.host_ram_gib, 0)} GiB usable on the node{swap}", "host_oom", p
    pinned = host_pinned_bytes(s) / GiB
    if pinned > cal.host_ram_gib:  # page-locked buffers cannot go to swap
        return False, f"pins {round_up(pinned, 0)} GiB of host RAM, {round_down(cal.host_ram_gib, 0)} GiB usable on the node", "host_oom", 1.0
    if p > P_OOM_FITS:
        where = "GPU memory" if risk.device >= risk.host else "host RAM" + (" and swap" if swap else "")
        failure = "device_oom" if where == "GPU memory" else "host_oom"
        used = need / cap if failure == "device_oom" else host_gib / host_cap
        why = f"{used:.0%} of usable {where}{again if failure == 'device_oom' else ''}"
        return False, f"too close to the limit: {why}, P(OOM) {p:.0%} > {P_OOM_FITS:.0%}", failure, p
    return True, None, None, p


def required_gib(mem: TrainMemory, held_gib: float) -> float:
    """What the verdict weighs against the usable memory: the peak and ``held_gib``, what the allocator holds beside it
    as each decoder layer asks for its largest block again (``models.memory.fragmentation_bytes``)."""
    return mem.peak / GiB + held_gib


def swap_paging_s(s: TrainSetup, mem: TrainMemory, cal: Calibration) -> float:
    """Seconds a step spends paging when the node runs beyond its RAM: what the step sweeps (``host_swept_bytes``) beyond
    RAM goes out to swap and back in every step, at the swap's rate each way (``Efficiencies.swap_gbs``). Nothing while
    the job fits in RAM, or while only what it seldom touches overflows."""
    ram = cal.host_ram_gib * GiB
    if not cal.host_swap_gib or mem.host <= ram:
        return 0.0
    return 2.0 * max(0.0, min(host_swept_bytes(s), mem.host) - ram) / (cal.eff.swap_gbs * 1e9)


def host_capacity_gib(cal: Calibration) -> float:
    """Host memory a node's job may fill before the kernel kills it: usable RAM, plus swap for pageable memory."""
    return cal.host_ram_gib + cal.host_swap_gib


def zero3_unfetched(s: TrainSetup) -> str | None:
    """A parameter DeepSpeed's ZeRO-3 would leave partitioned where the model reads it, or None. ZeRO-3 gathers a
    module's own parameters when that module's forward starts (not its children's: DeepSpeed's fetch_sub_module recurses
    only into leaf modules), so code that reads a child's weight from the parent (the gated delta-net layers of Qwen3.5's
    torch path read ``self.conv1d.weight``) gets an empty shard, unless the parameter is small enough to stay whole. The
    trace records such reads."""
    if s.case.engine != "deepspeed" or s.zero != 3 or s.trace is None:
        return None
    # a parameter under the persistence threshold stays whole on every rank: Qwen3.5's 32,768-element conv1d weights do
    return next((n for n, k in s.trace.params_outside_module.items() if k >= STAGE3_PERSISTENCE_THRESHOLD), None)


def round_up(x: float, digits: int = 1) -> str:
    """``x`` rounded up to ``digits`` decimals, as text (a need is never printed smaller than it is)."""
    return f"{math.ceil(x * 10**digits) / 10**digits:.{digits}f}"


def round_down(x: float, digits: int = 1) -> str:
    """``x`` rounded down (a capacity is never printed larger than it is)."""
    return f"{math.floor(x * 10**digits) / 10**digits:.{digits}f}"


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
    cal: Calibration,
    rel_error: float | None = None,
    trace: ArchTrace | None = None,
) -> TrainPrediction:
    """Predict one training case. ``rel_error`` (held-out MAPE) widens the throughput interval; ``trace`` is the
    model's own code traced for this case (``advisor.traces``), None for the hand count of a Llama decoder."""
    s = derive(case, arch, platform, trace)
    mem = training_memory(s, cal.eff)
    t = training_step_time(s, cal.eff, cal.ceilings)
    paging = swap_paging_s(s, mem, cal)
    if paging:
        t = dataclasses.replace(t, offload=t.offload + paging)
    step = t.total
    tps = tokens_per_step(s) / step
    held_gib = fragmentation_bytes(s, cal.eff) / GiB  # once: the verdict and the reported need both weigh it
    fits, why, failure, p = _fits(s, mem, cal, held_gib)
    interval = None
    if rel_error:
        interval = {"tokens_per_s": (tps / (1 + rel_error), tps * (1 + rel_error)), "step_time_s": (step / (1 + rel_error), step * (1 + rel_error))}
    return TrainPrediction(
        id=case.id, tokens_per_s=tps, step_time_s=step, peak_mem_gib=mem.peak / GiB, fits=fits,
        breakdown=breakdown(mem, t), interval=interval, host_mem_gib=mem.host / GiB,
        capacity_gib=platform.gpu.memory_gib, why_not_fits=why, failure=failure,
        model_tflops_per_gpu=model_flops_per_step(s) / step / 1e12,
        host_capacity_gib=host_capacity_gib(cal), p_oom=round(p, 4), required_gib=required_gib(mem, held_gib),
        host_swap_gib=round(mem.host / GiB - cal.host_ram_gib, 2) if fits and mem.host / GiB > cal.host_ram_gib else None,
    )
