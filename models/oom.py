"""The probability that a case runs out of memory, from the memory model's held-out error. Pure functions.

A predicted peak is a number with an error: on held-out runs the memory model misses by a relative error whose
size depends on how the peak was counted (``MEMORY_REL_ERROR``). Treating the true peak as normal around the
prediction with that spread, P(OOM) = P(true peak > what the device or the host can give). A case "fits" only when
that probability is at most ``P_OOM_FITS``, so a pick predicted at 99% of the GPU is not called safe.
"""

from __future__ import annotations

import math

P_OOM_FITS = 0.05  # the contract: fits only when p_oom <= 5%
P_OOM_RANKED_SAFE = 0.02  # the ranking never puts a pick above this ahead of a safer one within 5% of its speed

# Relative error (1 sigma) of the predicted peak, from held-out runs (knowledge/measurements/own, 2026-11-23):
# the Llama hand count 3.7% (H100, n=34) and 4.5% (2xH200, n=16) held out by model; host RAM of offload runs 3.8%
# (n=10). The trace of a model's own code: RMS 1.7% on the 22 runs of nine architectures outside the catalog that
# ran (tests/benchmarks/families*.out.txt, 2026-11-24), but the tracer's last fixes (autocast, fused latent
# attention, ZeRO-0's gradients) were found on those runs: 3%, about twice that, until unseen runs say otherwise.
# ZeRO-3 gathers and frees every layer's parameters, and its peak moves with the allocator's fragmentation: the hand
# count's held-out RMS on our ZeRO-3 runs without offload is 8.3% (n=7, 2026-11-24), and two ZeRO-3 runs outside the
# catalog ran out of memory 5% and 12% above what was predicted (2xH200: Qwen3-8B mb 8 at 130.3 GiB predicted,
# Qwen1.5-MoE; knowledge/measurements/own/h200x2-*-2026-11-24.jsonl): its spread is taken as 8.3% whatever counted it.
MEMORY_REL_ERROR = {"hand": 0.045, "trace": 0.03, "zero3": 0.083, "host": 0.038}


def device_rel_error(traced: bool, zero3: bool) -> float:
    """The relative error (1 sigma) of a predicted GPU peak: by how it was counted, and wider under ZeRO-3."""
    return MEMORY_REL_ERROR["zero3"] if zero3 else MEMORY_REL_ERROR["trace" if traced else "hand"]


def p_exceeds(need: float, capacity: float, rel_error: float) -> float:
    """P(true > capacity) when the true value is normal around ``need`` with sigma ``rel_error * need``."""
    if need <= 0:
        return 0.0
    if capacity <= 0:
        return 1.0
    sigma = max(rel_error * need, 1e-12)
    return 0.5 * math.erfc((capacity - need) / (sigma * math.sqrt(2)))


def p_oom(device_need: float, device_cap: float, host_need: float, host_cap: float, device_error: float) -> float:
    """P(device OOM or host OOM), the two taken as independent; ``device_error`` from ``device_rel_error``."""
    pd = p_exceeds(device_need, device_cap, device_error)
    ph = p_exceeds(host_need, host_cap, MEMORY_REL_ERROR["host"]) if host_need > 0 else 0.0
    return 1.0 - (1.0 - pd) * (1.0 - ph)
