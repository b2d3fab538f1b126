"""One way to time a callable on a device: warm up, repeat, synchronize, take the median (seconds).

Every probe goes through :func:`time_fn`, so the method lives in one place. On CUDA the regions are
timed with ``torch.cuda.Event`` pairs (device time, not host time), and, unless the caller wants the
launch cost in the number, the GPU is first given a short sleep so the host queues every repeat ahead
of it: the events then bracket back-to-back device work and a small kernel is not charged the
Python launch gap in front of it. On the CPU a region is timed with ``time.perf_counter``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

# Sleep cycles per second assumed when converting a head start in seconds to torch.cuda._sleep
# cycles. Hopper boosts near 2 GHz; a lower real clock only makes the head start longer.
_GPU_CYCLES_PER_S = 2.0e9
_MAX_HEAD_START_S = 0.2  # cap: the sleep is dead time the probe pays for


def sync(device: str) -> None:
    """Wait for all queued work on ``device`` (a no-op on the CPU)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def time_fn(
    fn: Callable[[], object],
    device: str,
    *,
    warmup: int = 3,
    repeats: int = 10,
    inner: int = 1,
    head_start: bool = True,
) -> float:
    """Median seconds of one call of ``fn`` on ``device``.

    ``fn`` is called ``warmup`` times untimed (module load, cuBLAS handles and autotuning stay out),
    then ``repeats`` timed regions of ``inner`` calls each; the result is the median region divided
    by ``inner``. ``head_start`` (CUDA only) lets the host queue all regions before the GPU starts
    them, so the number is device time; pass False to keep the host's launch cost in it.
    """
    if repeats < 1 or inner < 1:
        raise ValueError("repeats and inner must be at least 1")
    for _ in range(warmup):
        fn()
    sync(device)
    if device.startswith("cuda"):
        return _time_cuda(fn, device, repeats, inner, head_start) / inner
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) / inner


def _time_cuda(fn: Callable[[], object], device: str, repeats: int, inner: int, head_start: bool) -> float:
    import torch

    if head_start and hasattr(torch.cuda, "_sleep"):
        # One synchronized call on the host clock bounds how long queuing a region takes.
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        torch.cuda.synchronize(device)
        host_s = time.perf_counter() - t0
        ahead_s = min(_MAX_HEAD_START_S, 1.5 * host_s * repeats + 1e-3)
        torch.cuda._sleep(int(ahead_s * _GPU_CYCLES_PER_S))
    stream = torch.cuda.current_stream(device)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for s, e in zip(starts, ends):
        s.record(stream)
        for _ in range(inner):
            fn()
        e.record(stream)
    torch.cuda.synchronize(device)
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1e-3
