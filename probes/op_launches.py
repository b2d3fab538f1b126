"""How many launches each ATen operator of a real training step makes on the GPU, as the tracer counts operators.

The fake-tensor trace (``probes.trace``) counts one kernel per ATen operator it sees below autograd. On a GPU some
operators launch several: ``sort`` runs CUB's radix sort (a histogram, one pass per digit, memsets of its counters),
``nonzero`` counts then selects, ``index_put_`` with accumulation sorts its indices first. A mixture-of-experts layer's
routing is made of them (Qwen3-30B-A3B LoRA on one H200: 16,747 launches a step against 13,467 traced).

One step runs with a dispatch mode that sees the operators exactly where the tracer's does (below autograd, each
operator's own nested calls hidden inside it) and wraps each in a profiler range; every runtime launch (kernel, memset,
memcpy) is attributed to the range around it on its thread. Launches outside every range (a backward run on
a thread the mode does not reach) are attributed to the outermost profiler ``aten::`` event instead and reported apart.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any, Callable

# CUDA runtime and driver calls that put one activity on the GPU (a kernel, a memset, a copy)
LAUNCH_NAMES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaMemsetAsync", "cudaMemcpyAsync", "cudaLaunchCooperativeKernel",
                "cudaMemset", "cudaMemcpy")
PREFIX = "@op:"


def _is_launch(name: str) -> bool:
    return name.startswith(LAUNCH_NAMES)


def _mode(phase: list[str]) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from probes.trace import NO_KERNEL

    class Ranges(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            if func.is_view or name in NO_KERNEL or func.namespace != "aten":
                return func(*args, **kwargs)
            with torch.profiler.record_function(f"{PREFIX}{phase[0]}:{name}"):
                return func(*args, **kwargs)

    return Ranges()


def _containing(ranges: list[tuple[float, float, str]], starts: list[float], t: float) -> str | None:
    """The name of the range (start, end, name) containing time ``t``, of ranges sorted by start that do not overlap
    (the mode's: an operator's nested calls get none; the outermost ``aten::`` events)."""
    i = bisect.bisect_right(starts, t) - 1
    if i >= 0 and ranges[i][0] <= t <= ranges[i][1]:
        return ranges[i][2]
    return None


def attribute(events: list[Any]) -> dict[str, Any]:
    """{"ops": {phase:name: [calls, launches]}, "unattributed": {aten name: launches}, "launches": n} from a profile's
    ``events()``: each launch to the mode's range around it on its thread, else to the outermost ``aten::`` event."""
    by_thread: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    aten: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    launches: list[tuple[int, float]] = []
    for e in events:
        s, t_end = e.time_range.start, e.time_range.end
        if e.name.startswith(PREFIX):
            by_thread[e.thread].append((s, t_end, e.name[len(PREFIX):]))
        elif e.name.startswith("aten::"):
            aten[e.thread].append((s, t_end, e.name[len("aten::"):]))
        elif _is_launch(e.name):
            launches.append((e.thread, s))
    ops: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for rs in by_thread.values():
        for _, _, name in rs:
            ops[name][0] += 1
    index = {th: (sorted(rs), [r[0] for r in sorted(rs)]) for th, rs in by_thread.items()}
    outer: dict[int, list[tuple[float, float, str]]] = {}
    for th, rs in aten.items():  # outermost aten events only: drop those inside another
        rs.sort(key=lambda r: (r[0], -r[1]))
        kept, end = [], -1.0
        for r in rs:
            if r[0] >= end:
                kept.append(r)
                end = r[1]
        outer[th] = kept
    starts = {th: [r[0] for r in rs] for th, rs in outer.items()}
    unattributed: dict[str, int] = defaultdict(int)
    for th, t in launches:
        name = _containing(*index[th], t) if th in index else None
        if name is not None:
            ops[name][1] += 1
            continue
        rs = outer.get(th, [])
        name = _containing(rs, starts[th], t) or "(no aten op)"
        unattributed[name] += 1
    return {"ops": dict(sorted(ops.items())), "unattributed": dict(sorted(unattributed.items(), key=lambda kv: -kv[1])),
            "launches": len(launches)}


def profile_launches(forward: Callable[[], Any], backward: Callable[[Any], None]) -> dict[str, Any]:
    """One forward and backward with every ATen operator's launches attributed (``attribute``)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    phase = ["fwd"]
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with _mode(phase):
            loss = forward()
            phase[0] = "bwd"
            backward(loss)
            del loss
        torch.cuda.synchronize()
    out = attribute(list(prof.events()))
    out["device_activities"] = sum(1 for e in prof.events()
                                   if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0)
    return out
