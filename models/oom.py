"""The probability that a case runs out of memory, fitted to which runs really did. Pure functions.

A predicted peak is a number with an error, and what runs out is not the peak the model counts (the tensors alive at
once, ``max_memory_allocated``) but the caching allocator's reserve: the tensors plus its fragmentation, which near the
limit decides. So the true need is taken as normal around the predicted peak times ``1 + bias``, ``sigma`` of it wide
(``Spread``), and P(OOM) = P(that need > what the device or the host can give). A case "fits" only when that
probability is at most ``P_OOM_FITS``, so a pick predicted at 95% of the GPU is not called safe.
"""

from __future__ import annotations

import math
from typing import NamedTuple

P_OOM_FITS = 0.05  # the contract: fits only when p_oom <= 5%
P_OOM_RANKED_SAFE = 0.02  # the ranking never puts a pick above this ahead of a safer one within 5% of its speed


class Spread(NamedTuple):
    """How the true need is spread around a predicted one: mean ``need * (1 + bias)``, sigma ``sigma * need``."""

    bias: float
    sigma: float


# Fitted to outcomes: every own run that ran or ran out of GPU memory, probit maximum likelihood with sigma no tighter
# than the peak itself is predicted (held out 1.7-3%), tests/benchmarks/oom_boundary.py and its output: runs ran out
# from about 90% of the usable memory on. First fitted on 2026-11-28 to 505 runs (+6.0%, 3.8%): held out by family the
# verdicts went from 492/505 right with 8 runs called fitting that crashed (one sigma of 3-8% around the peak, no bias)
# to 481/505 with none. Refitted on 2026-12-08 to 707 runs (312 PyTorch, 262 DeepSpeed ZeRO 0-2, 133 ZeRO-3; 58 out of
# memory): +5.8%, 3.4%; held out by family 674/707 right, none called fitting that crashed, 33 that ran refused (in
# sample the spread of 2026-11-28 had 671/707, the same no crash). A spread per regime (engine, full or adapters,
# ZeRO-3) scores a worse held-out likelihood (-43 to -47 against -31): one spread for all. Host RAM: the offload runs'
# held-out error (3.8%, n=10, 2026-11-23), no bias.
DEVICE_SPREAD = Spread(0.058, 0.034)
HOST_SPREAD = Spread(0.0, 0.038)
# A serving case's requirement against what it may use (the usable memory, or an engine's share: models.serve_memory),
# fitted by probit ML to the 611 own serving runs that ran with their prefill or ran out (15), sigma no tighter than
# the engine runs' peaks near the limit are predicted (0.7-1.1%): held out by family 610/611 verdicts right, none crashed
# (tests/benchmarks/serve_oom_boundary.py, 2026-11-28). The bias the ML found, -1.6% on a 0.2% grid, lies where the
# likelihood is flat (no run between 98.5% and 102.9% ran out); -1.65% puts P(OOM) = 5% exactly at the requirement =
# capacity boundary the engine itself enforces, so "fits" (p_oom <= 5%) and ``max_batch_size`` agree.
SERVE_SPREAD = Spread(-0.0165, 0.010)


def p_exceeds(need: float, capacity: float, spread: Spread) -> float:
    """P(true need > capacity) when the true need is normal around ``need * (1 + bias)`` with sigma ``sigma * need``."""
    if need <= 0:
        return 0.0
    if capacity <= 0:
        return 1.0
    sd = max(spread.sigma * need, 1e-12)
    return 0.5 * math.erfc((capacity - need * (1 + spread.bias)) / (sd * math.sqrt(2)))


class OomRisk(NamedTuple):
    """P(OOM) of a case: of its GPUs' memory, of its node's host RAM, the two taken as independent."""

    device: float
    host: float

    @property
    def total(self) -> float:
        return 1.0 - (1.0 - self.device) * (1.0 - self.host)


def oom_risk(device_need: float, device_cap: float, host_need: float, host_cap: float) -> OomRisk:
    """The device and host probabilities of running out (GiB needed and usable of each)."""
    host = p_exceeds(host_need, host_cap, HOST_SPREAD) if host_need > 0 else 0.0
    return OomRisk(p_exceeds(device_need, device_cap, DEVICE_SPREAD), host)
