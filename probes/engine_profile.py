"""Where an engine-style prefill chunk spends its GPU time: one chunk of ``probes.engine_model`` under torch's profiler,
CUDA kernel time summed by kind (GEMM, attention, norm, elementwise, copy, other), beside the wall time of the same
chunk. For the families whose prefill the serving model misses (``tests/benchmarks/engine_families.py``).

    python -m probes.engine_profile --model knowledge/data/configs/olmo-2-1b.json --seqs 8 --tokens 1024 --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

from probes.engine_model import EngineDecoder, Shapes
from probes.run_case import environment, resolve_arch

KINDS = (("attention", ("flash", "fmha", "attention", "sdpa", "cudnn")), ("gemm", ("gemm", "sm90", "cutlass", "cublas", "nvjet", "matmul")),
         ("norm", ("norm",)), ("copy", ("copy", "memcpy", "cat", "index")), ("elementwise", ("elementwise", "vectorized", "reduce")))


def kind_of(name: str) -> str:
    low = name.lower()
    return next((k for k, keys in KINDS if any(x in low for x in keys)), "other")


def profile(model: str, seqs: int, tokens: int, repeats: int = 3) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile as torch_profile

    arch = resolve_arch(model)
    dec = EngineDecoder(Shapes.of(arch), torch.device("cuda"), torch.bfloat16)
    ids = torch.randint(0, dec.s.vocab, (seqs, tokens), device="cuda")
    with torch.inference_mode():
        dec.allocate(seqs, tokens + 1)
        for _ in range(3):
            dec.forward(ids, 0)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(repeats):
            dec.forward(ids, 0)
        torch.cuda.synchronize()
        wall_s = (time.perf_counter() - t0) / repeats
        with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
            dec.forward(ids, 0)
            torch.cuda.synchronize()
    by_kind: dict[str, float] = defaultdict(float)
    top: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type.name == "CUDA":
            us = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            by_kind[kind_of(e.name)] += us / 1e6
            top[e.name][0] += us / 1e6
            top[e.name][1] += 1
    kernels = sum(n for _, n in top.values())
    return {"model": model, "seqs": seqs, "tokens": tokens, "wall_s": wall_s, "gpu_busy_s": sum(by_kind.values()),
            "kernels": kernels, "by_kind_s": dict(by_kind),
            "top": sorted(([n[:90], round(v[0], 6), v[1]] for n, v in top.items()), key=lambda x: -x[1])[:24],
            "paths": dec.paths()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--seqs", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    env = environment("python -m probes.engine_profile").model_dump()
    for m in args.model:
        row = {**profile(m, args.seqs, args.tokens), "environment": env}
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps({k: v for k, v in row.items() if k != "environment"}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
