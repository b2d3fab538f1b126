"""Per-platform factors of the learned correction, applied without importing the fitting machinery.

The host and its links differ between servers of the same GPU (PCIe topology, CPU, NUMA) and nothing
in a datasheet says how. Where a platform has measurements the fit learns a factor for each parameter
of ``PLATFORM_PARAMS``; a platform without rows keeps the global values.
"""

from __future__ import annotations

import math

from knowledge.efficiency import Efficiencies
from knowledge.schema import PlatformSpec

# ZeRO-3's module hooks have a factor of their own, apart from the kernel dispatch's: the same two-H200 platform's
# dispatch-bound runs fit 0.72 of the global per-kernel cost while its hook-bound ZeRO-3 runs asked 1.05 of the global
# per-hook cost, and the study's A800 rows (DeepSpeed of 2023) 0.36 (in sample, bundled fit of 2026-11-28)
PLATFORM_PARAMS = ("link", "h2d_eff", "cpu_adam_thread_gparams_s", "kernel_time_s", "zero3_module_overhead_s")
LINK_PARAM = {"nvswitch": "link_eff_nvswitch", "nvlink-pairs": "link_eff_pcie", "pcie": "link_eff_pcie", "pcie-no-p2p": "link_eff_pcie", "single": None}


def bounds(name: str) -> tuple[float, float]:
    """The declared (lower, upper) bounds of an efficiency parameter."""
    meta = Efficiencies.model_fields[name].metadata
    lo = next((m.ge for m in meta if hasattr(m, "ge")), 0.0)
    hi = next((m.le for m in meta if hasattr(m, "le")), math.inf)
    return lo, hi


def platform_values(values: dict[str, float], platform: PlatformSpec, overrides: dict[str, dict[str, float]]) -> dict[str, float]:
    """Global values with a platform's learned factors applied (efficiencies stay within their bounds)."""
    factors = overrides.get(platform.id)
    if not factors:
        return values
    out = dict(values)
    for key, f in factors.items():
        name = LINK_PARAM[platform.interconnect] if key == "link" else key
        if name:
            lo, hi = bounds(name)
            out[name] = min(max(values[name] * f, lo), hi)
    return out
