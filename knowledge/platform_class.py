"""The platform class a prediction's error bar comes from, and that error as the last validation measured it.

Held-out error differs by an order of magnitude between a single H100 and an 8-GPU GeForce box, so one
global figure would overstate the one and understate the other. ``advisor validate --holdout platform``
measures the error of each class with its servers held out of the fit; ``fitted.json`` keeps it under
``held_out_by_class`` and every prediction's ``interval`` (table, ``--json``, explorer) reads it here.
"""

from __future__ import annotations

from knowledge.schema import PlatformSpec

CLASSES = ("single GPU", "PCIe consumer", "PCIe datacenter", "NVLink/NVSwitch", "multi-node")
# The classes the serving fit has runs on (own runs: one H100, one H200, two H200s on NVLink with tensor parallelism,
# knowledge/measurements/own). Elsewhere a serving band is no narrower than training's on that class: tensor
# parallelism over PCIe crosses the links whose held-out error that figure holds.
SERVING_MEASURED_CLASSES = ("single GPU", "NVLink/NVSwitch")


def platform_class(platform: PlatformSpec, nodes: int = 1) -> str:
    """One of ``CLASSES``: several nodes first, then one GPU, then how the GPUs of the server are linked
    (NVLink bridge pairs of GeForce cards are PCIe servers: their rings still cross PCIe)."""
    if nodes > 1:
        return "multi-node"
    if platform.count == 1 or platform.interconnect == "single":
        return "single GPU"
    consumer = "geforce" in platform.gpu.name.lower() or platform.gpu.id.startswith("rtx")
    if platform.interconnect == "nvswitch":
        return "NVLink/NVSwitch"
    return "PCIe consumer" if consumer else "PCIe datacenter"


def class_rel_error(by_class: dict[str, dict], cls: str) -> float | None:
    """The held-out MAPE of ``cls``; a class without held-out rows takes the widest measured class's
    (an unmeasured class is not assumed to be easier than the hardest measured one); None when none."""
    row = by_class.get(cls)
    if row and row.get("n"):
        return float(row["mape"])
    measured = [float(r["mape"]) for r in by_class.values() if r.get("n")]
    return max(measured) if measured else None
