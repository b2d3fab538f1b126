"""Per-platform factors of the learned correction, applied without importing the fitting machinery.

The host and its links differ between servers of the same GPU (PCIe topology, CPU, NUMA) and nothing
in a datasheet says how. Where a platform has measurements the fit learns a factor for each parameter
of ``PLATFORM_PARAMS``; a platform without rows keeps the global values.
"""

from __future__ import annotations

import math

from knowledge.efficiency import Efficiencies
from knowledge.schema import PlatformSpec

PLATFORM_PARAMS = ("link", "h2d_eff", "cpu_adam_thread_gparams_s", "kernel_time_s")
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
