"""The calibration a prediction uses: one immutable object per (platform, profile), built at the entry point.

Without a profile: the parameters fitted on every measured run (``knowledge/calibration/fitted.json``), with
the platform's own learned factors where that server has rows, against datasheet ceilings.

With a profile written by ``advisor probe`` on that machine, each ceiling comes from what was measured
there and replaces (never multiplies) the fitted efficiency for it: GEMM throughput at the models' shapes,
fused attention, copy bandwidth, pinned host<->device bandwidth, DeepSpeed's CPU Adam, NCCL bus bandwidth.
Then the framework terms no micro probe measures (dispatch per kernel, autograd, DeepSpeed's hooks, the
optimizer step) are refitted on the profile's real layers: the user's architecture cut to one and two
layers under a design of real configurations. So nothing is corrected twice: the global fit's
efficiencies, which absorbed framework overhead against datasheet peaks, are not stacked on measured ceilings.

Pure functions: the profile and the fitted values come in as arguments; nothing here reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from knowledge.efficiency import Efficiencies
from knowledge.schema import PlatformSpec, Profile
from models.memory import usable_host_gib
from models.platform_factors import bounds, platform_values
from models.roofline import Ceilings, ceilings

# Terms the profile's real layers decide (the micro probes measure everything else directly).
LOCAL_PARAMS = ("kernel_time_s", "backward_dispatch_factor", "step_overhead_s", "zero12_hook_s",
                "zero3_module_overhead_s", "optimizer_eff", "gemm_half_tokens")
# FlashAttention forward + backward = 1 + 2.5 times the forward's FLOPs (models.operators.ATTENTION_BACKWARD)
_ATTENTION_FWD_BWD = 3.5


@dataclass(frozen=True)
class Calibration:
    """What every prediction on one platform divides by."""

    eff: Efficiencies
    ceilings: Ceilings
    host_ram_gib: float  # usable host RAM of one node
    source: str  # "fit" or "profile <gpu> <date>"
    measured: dict[str, float] = field(default_factory=dict)  # which ceilings the profile replaced, and their values


def from_fit(platform: PlatformSpec, fitted: Efficiencies, platform_factors: dict[str, dict[str, float]] | None = None) -> Calibration:
    """The calibration without a profile: the global fit with the platform's learned factors."""
    eff = Efficiencies(**platform_values(fitted.model_dump(), platform, platform_factors or {}))
    return Calibration(eff, ceilings(platform, eff), usable_host_gib(platform.host.host_ram_gib), "fit")


def check_profile(profile: Profile, platform: PlatformSpec) -> str | None:
    """Why ``profile`` cannot calibrate ``platform`` (another GPU, a CPU profile), or None."""
    if profile.gpu_count == 0 or profile.gpu_name == "cpu":
        return "the profile was measured on a CPU, not a GPU"
    if profile.gpu_id and profile.gpu_id != platform.gpu.id:
        return f"the profile is of {profile.gpu_id} ({profile.gpu_name}), the case runs on {platform.gpu.id}"
    return None


def gemm_curve(profile: Profile, peak_tflops: float) -> tuple[float, float] | None:
    """(gemm_eff_max, gemm_half_tokens) of eff = max * m / (m + half), least squares in log space over the
    profile's GEMM sweep at the models' shapes (m = token rows), as fractions of ``peak_tflops``."""
    pts = [(p.m, p.tflops / peak_tflops) for p in profile.gemm if p.tflops > 0]
    if len(pts) < 3:
        return None
    m = np.array([p[0] for p in pts], float)
    e = np.array([p[1] for p in pts], float)
    best = None
    for half in np.geomspace(8, 8192, 200):
        shape = m / (m + half)
        emax = float(np.exp(np.mean(np.log(e) - np.log(shape))))
        err = float(np.sum((np.log(emax * shape) - np.log(e)) ** 2))
        if best is None or err < best[0]:
            best = (err, min(emax, 1.0), float(half))
    return best[1], best[2]


def attention_efficiency(profile: Profile, peak_tflops: float) -> float | None:
    """Fused causal attention forward + backward FLOPs over time, as a fraction of the 16-bit peak."""
    vals = []
    for a in profile.attention:
        if a.fused_fwd_bwd_s:
            fwd = 2 * 2.0 * a.batch * a.seq_len**2 * a.heads * a.head_dim / 2
            vals.append(_ATTENTION_FWD_BWD * fwd / a.fused_fwd_bwd_s / (peak_tflops * 1e12))
    return min(1.0, float(np.median(vals))) if vals else None


def measured_values(profile: Profile, platform: PlatformSpec, eff: Efficiencies) -> dict[str, float]:
    """The efficiencies the micro probes measured directly on this machine."""
    g = platform.gpu
    out: dict[str, float] = {"memory_eff": min(1.0, profile.memory_bandwidth_gbs / g.memory_bandwidth_gbs)}
    curve = gemm_curve(profile, g.matmul_tflops)
    if curve:
        out["gemm_eff_max"], out["gemm_half_tokens"] = curve
    else:
        out["gemm_eff_max"] = min(1.0, profile.matmul_tflops / g.matmul_tflops)
    att = attention_efficiency(profile, g.matmul_tflops)
    if att:
        out["attention_eff"] = att
    if profile.h2d_gbs:
        out["h2d_eff"] = min(1.0, profile.h2d_gbs / g.pcie_gbs)
    if profile.cpu_adam_gparams_per_s and profile.cpu_adam_impl == "deepspeed-cpu-adam":
        threads = profile.cpu_adam_threads or platform.host.cpu_cores
        # rate = 1 / (1 / (T r1) + 1 / R): keep the per-thread rate, solve the bandwidth cap R
        linear = threads * eff.cpu_adam_thread_gparams_s
        rate = profile.cpu_adam_gparams_per_s
        if rate < linear:
            out["cpu_adam_bandwidth_gparams_s"] = 1.0 / (1.0 / rate - 1.0 / linear)
        else:
            out["cpu_adam_thread_gparams_s"] = rate / threads * 1.25
            out["cpu_adam_bandwidth_gparams_s"] = 5.0 * rate
    big = [p for p in profile.collectives if p.size_bytes >= 64 * 2**20]
    if big and platform.count > 1 and platform.link_gbs > 0:
        key = "link_eff_nvswitch" if platform.interconnect == "nvswitch" else "link_eff_pcie"
        out[key] = min(1.0, max(p.busbw_gbs for p in big) / platform.link_gbs)
    return {k: _clip(k, v) for k, v in out.items()}


def _clip(name: str, value: float) -> float:
    lo, hi = bounds(name)
    return min(max(value, lo), hi)


def from_profile(platform: PlatformSpec, base: Calibration, profile: Profile, local_fit=None) -> Calibration:
    """The calibration of a probed machine: measured ceilings, then the framework terms refitted on the
    profile's real layers by ``local_fit(eff, profile) -> Efficiencies`` (the caller's estimator; None
    skips the refit)."""
    why = check_profile(profile, platform)
    if why:
        raise ValueError(why)
    measured = measured_values(profile, platform, base.eff)
    eff = base.eff.model_copy(update=measured)
    if local_fit is not None and profile.macro:
        eff = local_fit(eff, profile)
    # the probe read this node's usable RAM (MemTotal or the cgroup limit)
    host = profile.host.usable_ram_gib if profile.host and profile.host.usable_ram_gib > 0 else base.host_ram_gib
    source = f"profile {profile.gpu_name} x{profile.gpu_count} ({profile.environment.date[:10]})"
    return Calibration(eff, ceilings(platform, eff), host, source, measured)
