"""Where one training step's time and memory go, on a real GPU: kernel time by kind, and memory at each moment.

For a ``TrainCase`` (as ``probes.run_case`` takes it), after warm-up steps one step runs under ``torch.profiler``:
the CUDA kernels' time summed by kind (GEMM, grouped GEMM, attention, elementwise, reductions, index/sort/scatter,
dequantization, optimizer, copies, NCCL), the busiest kernels by name, and the wall time the GPU sat idle (the CPU
dispatching, or a synchronisation). Memory is read at the moments the memory model names: after the build (model
states), at the end of forward, after backward, after the optimizer step, with the peak of each phase.
This is what the step-time and memory models are checked against operator by operator, not only in total.

    python -m probes.anatomy --case '{"id": ..., "hardware": "h100x1", ...}' --out anatomy.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from typing import Any

KINDS = (  # first match wins: kernel names of cuBLAS/CUTLASS, FlashAttention, ATen, bitsandbytes, apex/torch optimizers
    ("grouped_gemm", r"grouped|_gmm|GroupedGemm|ptr_array|GemmUniversalINS5_17Gr|KernelPtrArray"),
    ("gemm", r"gemm|nvjet|cutlass|xmma|sm\d+_.*_tn|ampere_|hopper_|cublas"),
    ("attention", r"flash|fmha|attention|_efficient_attention|softmax_warp"),
    ("dequant", r"kDequantize|dequant|kQuantize|int8|igemmlt|kgemm_4bit"),
    ("optimizer", r"multi_tensor|fused_adam|adam|FusedOptimizer"),
    ("nccl", r"nccl"),
    ("sort_index_scatter", r"sort|radix|scan|index|scatter|gather|histc|histogram|nonzero|topk|cumsum|bincount|embedding"),
    ("reduce", r"reduce|norm|sum_kernel|mean|max_kernel|log_softmax|nll_loss|cross_entropy"),
    ("copy", r"copy|memcpy|memset|cat_|CatArray|fill"),
    ("elementwise", r"elementwise|vectorized|unrolled|pointwise|silu|gelu|mul|add|tanh|exp|pow|rsqrt"),
)


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return kind
    return "other"


def _gib(n: float) -> float:
    return round(n / 2**30, 3)


def phase_walls(step_phases: Any, sync: Any) -> dict[str, float]:
    """Wall seconds of forward, backward and the optimizer step of one step, the GPU drained after each."""
    out: dict[str, float] = {}
    for name, phase in step_phases:
        sync()
        t0 = time.perf_counter()
        phase()
        sync()
        out[name] = round(time.perf_counter() - t0, 4)
    return out


def cpu_top(run_step: Any, sync: Any, n: int = 40) -> dict[str, Any]:
    """One step under cProfile: the wall it took so (the profiler's own cost included) and the functions that held the
    CPU longest by their own time, with their calls: what a CPU-bound step spends its host time on."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    sync()
    t0 = time.perf_counter()
    prof.enable()
    run_step()
    sync()
    prof.disable()
    wall = time.perf_counter() - t0
    stats = pstats.Stats(prof)

    def s(x: float) -> float:  # one rounding for every time here: a function's time never exceeds the step's by it
        return round(x, 5)

    def listed(key: int, count: int) -> list[dict[str, Any]]:  # (file, line, name) -> (cc, nc, tt, ct, callers)
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][key])[:count]
        return [{"fn": f"{k[0].split('site-packages/')[-1]}:{k[1]}:{k[2]}"[-140:], "calls": v[1],
                 "tottime_s": s(v[2]), "cumtime_s": s(v[3])} for k, v in rows]

    return {"wall_s": s(wall), "total_tt_s": s(sum(v[2] for v in stats.stats.values())),
            "top": listed(2, n), "top_cumulative": listed(3, 2 * n)}


def run(case_obj: dict, warmup: int, cpu_profile: bool = False, op_launches: bool = False) -> dict[str, Any]:
    import torch
    from pydantic import TypeAdapter
    from torch.profiler import ProfilerActivity, profile

    from knowledge.schema import Case, TrainCase
    from probes.run_case import META_KEYS, resolve_arch, with_advised_targets
    from probes.train_step import _prepare, resolve_ds_config, setup_distributed

    case = TypeAdapter(Case).validate_python({k: v for k, v in case_obj.items() if k not in META_KEYS})
    arch = resolve_arch(case.model)
    if isinstance(case, TrainCase):  # the targets run_case would run (until 2026-11-29 the schema's q/k/v/o here)
        case = with_advised_targets(arch, case, case_obj)
    d = setup_distributed("cuda", need_group=case.engine == "deepspeed")
    attn = "sdpa" if case.flash_attention else "eager"
    torch.cuda.reset_peak_memory_stats()
    ds_config = None
    if case_obj.get("_zero_overrides"):  # an experiment: the advisor's ZeRO settings with some changed (max live, reuse...)
        ds_config = resolve_ds_config(case, d.world, None)
        ds_config["zero_optimization"] = {**ds_config["zero_optimization"], **case_obj["_zero_overrides"]}
    fwd, bwd, opt_step, model = _prepare(case, arch, d, ds_config, None, attn)
    x = torch.randint(0, arch.vocab_size, (case.micro_batch_size, case.seq_len), device=d.device)
    mem: dict[str, float] = {"built": _gib(torch.cuda.memory_allocated())}

    def step(record: bool) -> None:
        for micro in range(case.grad_accum):
            last = micro == case.grad_accum - 1
            if record:
                torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
            loss = fwd(x, last)
            if record:
                torch.cuda.synchronize()
                mem["forward_end"] = _gib(torch.cuda.memory_allocated())
                mem["forward_peak"] = _gib(torch.cuda.max_memory_allocated()); torch.cuda.reset_peak_memory_stats()
            bwd(loss, last)
            del loss
            if record:
                torch.cuda.synchronize()
                mem["backward_end"] = _gib(torch.cuda.memory_allocated())
                mem["backward_peak"] = _gib(torch.cuda.max_memory_allocated()); torch.cuda.reset_peak_memory_stats()
            opt_step(last)
            if record:
                torch.cuda.synchronize()
                mem["step_end"] = _gib(torch.cuda.memory_allocated())
                mem["step_peak"] = _gib(torch.cuda.max_memory_allocated())

    for _ in range(warmup):
        step(False)
    torch.cuda.synchronize()
    # the build's and the first steps' peak (optimizer states created lazily, first gathers): what a run's max shows
    mem["warmup_peak"] = _gib(torch.cuda.max_memory_allocated())
    mem["warmup_reserved_peak"] = _gib(torch.cuda.max_memory_reserved())
    step(True)  # memory at each moment, after warm-up (optimizer states exist)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(2):
        step(False)
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / 2
    extra: dict[str, Any] = {}
    if cpu_profile:  # each phase's wall alone, then a step's host time by function
        assert case.grad_accum == 1, "--cpu-profile times one micro-batch a step"
        box: dict[str, Any] = {}
        extra["phase_s"] = phase_walls((("forward", lambda: box.update(loss=fwd(x, True))),
                                        ("backward", lambda: bwd(box.pop("loss"), True)),
                                        ("optimizer", lambda: opt_step(True))), torch.cuda.synchronize)
        extra["cpu_profile"] = cpu_top(lambda: step(False), torch.cuda.synchronize)
    if op_launches:  # each ATen operator's launches, as the tracer counts operators (probes.op_launches)
        from probes.op_launches import profile_launches

        assert case.grad_accum == 1, "--op-launches attributes one micro-batch"
        extra["op_launches"] = profile_launches(lambda: fwd(x, True), lambda loss: bwd(loss, True))
        opt_step(True)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step(False)
        torch.cuda.synchronize()
    by_kind: dict[str, float] = defaultdict(float)
    by_name: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    count = 0
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA or e.device_time <= 0:
            continue
        us = e.device_time
        by_kind[kind_of(e.name)] += us * 1e-6
        by_name[e.name][0] += us * 1e-6
        by_name[e.name][1] += 1
        count += 1
    busy = sum(by_kind.values())
    top = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:30]
    return {
        "id": case_obj.get("id"), "case": case.model_dump(mode="json"), "zero_overrides": case_obj.get("_zero_overrides"),
        "step_s": wall,
        "tokens_per_s": case.micro_batch_size * case.seq_len * case.grad_accum * d.world / wall,
        "kernel_s": busy, "kernels": count, "idle_s": max(wall - busy, 0.0),
        "by_kind_s": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        "top": [{"name": n[:160], "s": s, "calls": c, "kind": kind_of(n)} for n, (s, c) in top],
        "memory_gib": mem, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, **extra,
    }


def measurement_rows(anatomy: list[dict], cases: list[dict], environment: dict, prefix: str) -> list[dict]:
    """Rank 0's anatomy row of each case as a measurement row (``knowledge.schema.Measurement``, as ``probes.run_case``
    writes them): the peak from the build through warm-up (max_memory_allocated, as ``probes.run_case`` reads it), the
    mean of the two timed steps, a device OOM as one; ``prefix`` names the ids."""
    from knowledge.schema import Measured, Measurement

    by_id = {c["id"]: c for c in cases}
    seen, out = set(), []
    for r in anatomy:
        if r["id"] in seen or r["id"] not in by_id:
            continue
        seen.add(r["id"])
        oom = r.get("failure") == "device_oom"
        if r.get("failure") and not oom:
            continue  # a crash says nothing of speed or memory
        mem = r.get("memory_gib") or {}
        measured = Measured(oom=oom, tokens_per_s=None if oom else r["tokens_per_s"],
                            step_time_s=None if oom else r["step_s"], peak_mem_gib=mem.get("warmup_peak"),
                            error=r.get("error"), failure=r.get("failure"))
        row = Measurement(dataset="own", source="probes.anatomy", case={**by_id[r["id"]], "id": f"{prefix}-{r['id']}"},
                          measured=measured, environment=environment,
                          notes="rank 0's anatomy row; each phase's memory in the anatomy log")
        out.append(row.model_dump(mode="json"))
    return out


def main(argv: list[str] | None = None) -> int:
    from probes.run_case import _quiet, load_json_arg
    from probes.train_step import is_oom, one_line

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--cpu-profile", action="store_true", help="also each phase's wall and one step under cProfile")
    ap.add_argument("--op-launches", action="store_true", help="also the GPU launches of each ATen operator of a step")
    args = ap.parse_args(argv)
    _quiet()
    case_obj = load_json_arg(args.case)
    try:
        row = run(case_obj, args.warmup, args.cpu_profile, args.op_launches)
    except Exception as e:
        row = {"id": case_obj.get("id"), "failure": "device_oom" if is_oom(e) else "crash",
               "error": f"{type(e).__name__}: {one_line(e)}"}
    with open(args.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: row.get(k) for k in ("id", "step_s", "kernel_s", "idle_s", "by_kind_s", "memory_gib",
                                              "failure", "error")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
