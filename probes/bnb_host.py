"""What a bitsandbytes 4-bit projection costs the host: one call's forward and backward CPU time against a bf16 one.

Anatomy 38 (one H200, host-bound at 1 x 1,024) measured QLoRA steps 1.37-1.47x LoRA's of the same model: 354-362 us
more per 4-bit projection a step, where the trace (whose stand-in for ``Linear4bit`` is a bf16 product) and the
dequantize kernels' bytes price 79. This probe takes the projection apart on tiny shapes (the GPU finishes each kernel
long before the host issues the next, so a call's wall time is its host time): a chain of ``LAYERS`` projections of
``WIDTH`` x ``WIDTH`` built as training builds them (``probes.hf_model._to_bnb``: NF4, double quantization, bf16
compute; PEFT's LoRA as ``probes.hf_model.apply_method`` configures it), each variant timed forward and backward,
with and without bf16 autocast (the PyTorch engine runs under it, DeepSpeed does not), beside the launch probe's
seconds per tiny kernel on the same host and the CUDA launches each call makes.

    python -m probes.bnb_host --out rows.jsonl
    python -m probes.bnb_host --table knowledge/data/bnb_host.json rows_a.jsonl rows_b.jsonl   (the bundled table)

The table prices each extra in bf16 projection calls of the same host (a frozen ``nn.Linear``'s forward, its
backward), the unit in which the step-time model's per-kernel CPU cost is fitted (one traced kernel each way), so the
numbers carry to a host of another speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

LAYERS = 64
WIDTH = 256
ROWS = 16
VARIANTS = ("linear", "linear4bit", "lora", "qlora")  # frozen bf16, frozen NF4, LoRA on each


def build(variant: str, device: Any, rank: int = 64) -> Any:
    import torch

    from probes.hf_model import _bnb, _to_bnb

    layers = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH, bias=False, dtype=torch.bfloat16)
                                   for _ in range(LAYERS)]).to(device)
    for p in layers.parameters():
        p.requires_grad_(False)
    if variant in ("linear4bit", "qlora"):
        bnb = _bnb()
        for i in range(LAYERS):
            layers[i] = _to_bnb(bnb, layers[i], "nf4", device)
    if variant in ("lora", "qlora"):
        from peft import LoraConfig, inject_adapter_in_model

        cfg = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, bias="none",
                         target_modules=[str(i) for i in range(LAYERS)])
        layers = inject_adapter_in_model(cfg, layers)
        # get_peft_model's default (autocast_adapter_dtype=True) keeps a bf16 base's adapters in fp32
        for n, p in layers.named_parameters():
            if "lora_" in n:
                p.data = p.data.float()
                p.requires_grad_(True)
    return layers


def _input(device: Any) -> Any:
    import torch

    return torch.randn(ROWS, WIDTH, device=device, dtype=torch.bfloat16, requires_grad=True)


def _forward(layers: Any, x: Any, autocast: bool) -> Any:
    """A forward of the chain (under bf16 autocast if asked) to a scalar whose backward runs the chain's."""
    import contextlib

    import torch

    with torch.autocast(x.device.type, dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
        return layers(x).float().sum()


def time_calls(layers: Any, device: Any, autocast: bool, repeats: int = 30) -> tuple[float, float]:
    """(forward, backward) seconds per projection: medians over ``repeats`` steps, each synchronized at its end."""
    from probes.timing import sync

    x = _input(device)
    fwd, bwd = [], []
    for i in range(repeats + 5):
        sync(str(device))
        t0 = time.perf_counter()
        y = _forward(layers, x, autocast)
        sync(str(device))
        t1 = time.perf_counter()
        y.backward()
        sync(str(device))
        t2 = time.perf_counter()
        if i >= 5:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    return statistics.median(fwd) / LAYERS, statistics.median(bwd) / LAYERS


def launches_per_call(layers: Any, device: Any, autocast: bool) -> tuple[float, float]:
    """CUDA launches (kernels, memsets, copies) per projection, forward and backward, from torch's profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from probes.timing import sync

    def count(fn: Any) -> int:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            sync(str(device))
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)

    x = _input(device)
    _forward(layers, x, autocast).backward()  # warm: the profiled step is not the first
    state = {}
    n_fwd = count(lambda: state.update(y=_forward(layers, x, autocast)))
    n_bwd = count(lambda: state["y"].backward())
    return n_fwd / LAYERS, n_bwd / LAYERS


def measure(device: str = "cuda") -> list[dict[str, Any]]:
    import torch

    from probes.micro import launch_overhead_s

    dev = torch.device(device)
    launch_s = launch_overhead_s(device)
    rows = []
    for variant in VARIANTS:
        layers = build(variant, dev)
        for autocast in (False, True):
            time_calls(layers, dev, autocast, repeats=3)  # warm: bitsandbytes' first calls load and cache
            f, b = time_calls(layers, dev, autocast)
            lf, lb = launches_per_call(layers, dev, autocast)
            rows.append({"variant": variant, "autocast": autocast, "forward_s": f, "backward_s": b,
                         "launches_fwd": lf, "launches_bwd": lb, "launch_s": launch_s,
                         "layers": LAYERS, "width": WIDTH, "rows": ROWS})
        del layers
        torch.cuda.empty_cache()
    launch_after = launch_overhead_s(device)
    for r in rows:
        r["launch_after_s"] = launch_after
    return rows


def table(rows: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """Per phase, what a 4-bit projection adds to a bf16 one (``nf4_*``) and what PEFT's LoRA on a 4-bit projection
    adds beyond that and beyond LoRA on a bf16 one (``qlora_wrapper_*``), each as a mean over the runs and autocast
    settings, in mean bf16 projection calls of the phase (noisy pair by pair on a shared host: means, not ratios)."""
    by = {(r["run"], r["variant"], r["autocast"]): r for r in rows}
    runs = sorted({r["run"] for r in rows})
    out: dict[str, Any] = {"source": source, "unit": "one frozen bf16 nn.Linear call of the same phase, same host"}
    for phase, key in (("fwd", "forward_s"), ("bwd", "backward_s")):
        pairs = [(run, ac) for run in runs for ac in (False, True)]
        lin = statistics.mean(by[(r, "linear", a)][key] for r, a in pairs)
        nf4 = statistics.mean(by[(r, "linear4bit", a)][key] - by[(r, "linear", a)][key] for r, a in pairs)
        wrap = statistics.mean((by[(r, "qlora", a)][key] - by[(r, "lora", a)][key])
                               - (by[(r, "linear4bit", a)][key] - by[(r, "linear", a)][key]) for r, a in pairs)
        out[f"linear_call_{phase}_s"] = lin
        out[f"nf4_{phase}_calls"] = round(nf4 / lin, 2)
        out[f"qlora_wrapper_{phase}_calls"] = round(wrap / lin, 2)
    out["launch_s"] = [statistics.mean([r["launch_s"], r["launch_after_s"]]) for r in
                       (next(x for x in rows if x["run"] == run) for run in runs)]
    return out


def _write_table(path: str, files: list[str]) -> int:
    from knowledge.store import atomic_write_json

    rows = []
    try:
        for run, f in enumerate(files):
            with open(f) as fh:
                rows += [{**json.loads(line), "run": run} for line in fh if line.strip()]
        env = rows[0]["environment"]
        src = (f"probes.bnb_host on one {env['gpu_name']} host ({env['date'][:10]}, torch {env['torch']}, "
               f"bitsandbytes {env['bitsandbytes']}, peft {env['peft']}), {len(files)} runs: {', '.join(files)}")
        t = table(rows, src)
    except (OSError, ValueError, KeyError, IndexError, StopIteration) as e:
        print(f"error: cannot build the table from {', '.join(files)}: {e!r}")
        return 2
    atomic_write_json(path, t)
    print(json.dumps(t, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="JSON lines to write (one row per variant and autocast)")
    ap.add_argument("--table", nargs="+", metavar=("OUT", "ROWS"),
                    help="write the bundled table OUT from the rows files of one or more runs")
    args = ap.parse_args(argv)
    if args.table:
        if len(args.table) < 2:
            print("error: --table needs the table's path and at least one rows file")
            return 2
        return _write_table(args.table[0], args.table[1:])
    if not args.out:
        print("error: --out ROWS.jsonl (measure) or --table OUT ROWS... (build the table)")
        return 2
    from knowledge.store import atomic_write_text
    from probes.run_case import environment

    env = environment("python -m probes.bnb_host").model_dump()
    rows = measure()
    atomic_write_text(args.out, "".join(json.dumps({**r, "environment": env}) + "\n" for r in rows))
    for r in rows:
        print(f"{r['variant']:<11} autocast={int(r['autocast'])} fwd {r['forward_s'] * 1e6:7.1f} us  bwd "
              f"{r['backward_s'] * 1e6:7.1f} us  launches {r['launches_fwd']:.1f} / {r['launches_bwd']:.1f}")
    print(f"launch {rows[0]['launch_s'] * 1e6:.2f} us before, {rows[0]['launch_after_s'] * 1e6:.2f} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
