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

import argparse
import bisect
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from knowledge.op_launches import ACCUMULATING_INDEX_PUT

# CUDA runtime and driver calls that put one activity on the GPU (a kernel, a memset, a copy)
LAUNCH_NAMES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaMemsetAsync", "cudaMemcpyAsync", "cudaLaunchCooperativeKernel",
                "cudaMemset", "cudaMemcpy")
PREFIX = "@op:"


def _is_launch(name: str) -> bool:
    return name.startswith(LAUNCH_NAMES)


def _mode(phase: list[str]) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from probes.trace import counted

    class Ranges(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if not counted(func):
                return func(*args, **kwargs)
            with torch.profiler.record_function(f"{PREFIX}{phase[0]}:{func.overloadpacket.__name__}"):
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
        if e.device_type.name != "CPU":  # a range's copy on the GPU's timeline (gpu_user_annotation), kernels
            continue
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
    for rs in by_thread.values():
        rs.sort()
    index = {th: (rs, [r[0] for r in rs]) for th, rs in by_thread.items()}
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
    out["ranges"] = "cpu"  # rows without it (anatomy 37) counted each range twice: its CPU range and its GPU annotation
    out["device_activities"] = sum(1 for e in prof.events()
                                   if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0)
    return out


# Operators whose launches the table does not take: products, whose cuBLAS heuristics split some (split-K) by shape, and
# attention, which the trace sees as the CPU's kernels (``_scaled_dot_product_flash_attention_for_cpu``), a GPU as cuDNN's
MEASURED_ELSEWHERE = ("mm", "addmm", "bmm", "baddbmm", "_scaled_dot_product")
MULTI_LAUNCH = 1.5  # launches per call from which an operator counts as several kernels
MIN_CALLS = 10


def table(rows: list[dict[str, Any]]) -> dict[str, float]:
    """{operator (``index_put`` with accumulation as ``index_put:accumulate``): launches per call}: the median over the
    rows' models of each operator's launches per call, for operators at ``MULTI_LAUNCH`` or more over ``MIN_CALLS`` calls
    (``index_put`` without accumulation is one kernel; with it, the backward of indexing, twenty)."""
    per_model: dict[str, list[float]] = defaultdict(list)
    calls_of: dict[str, float] = defaultdict(float)
    for r in rows:
        ol = r.get("op_launches")
        if not ol:
            continue
        copies = 1 if ol.get("ranges") == "cpu" else 2
        pooled: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for key, (calls, launches) in ol["ops"].items():
            name = key.split(":", 1)[1]
            pooled[name][0] += calls / copies
            pooled[name][1] += launches
        for name, (calls, launches) in pooled.items():
            if calls > 0:
                per_model[name].append(launches / calls)
                calls_of[name] += calls
    out = {}
    for name, ratios in sorted(per_model.items()):
        if name.startswith(MEASURED_ELSEWHERE) or calls_of[name] < MIN_CALLS:
            continue
        per_call = statistics.median(ratios)
        if per_call >= MULTI_LAUNCH:
            out[ACCUMULATING_INDEX_PUT if name == "index_put" else name] = round(per_call, 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the launches-per-call table from anatomy rows run with --op-launches")
    ap.add_argument("rows", nargs="+", help="anatomy JSON lines")
    ap.add_argument("--out", required=True, help="the table to write (knowledge/data/op_launches.json)")
    ap.add_argument("--source", required=True, help="where the rows come from: GPU, versions, date, command")
    args = ap.parse_args(argv)
    try:
        rows = [json.loads(line) for path in args.rows for line in Path(path).read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as e:  # a missing file, a line that is not JSON: one line, no table written
        print(f"error: cannot read the anatomy rows: {e}", file=sys.stderr)
        return 2
    from knowledge.store import atomic_write_json

    atomic_write_json(args.out, {"source": args.source, "rows": args.rows, "launches_per_call": table(rows)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
