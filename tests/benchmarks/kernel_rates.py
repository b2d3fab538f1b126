"""The kernel-level rate of a traced model's memory-bound kernels, fitted to real kernel times on two GPUs.

``probes/anatomy.py`` timed every CUDA kernel of one step of the same 15 cases on one H100 and on one H200
(``knowledge/measurements/own/logs/h{100,200}-anatomy*-2026-11-24.jsonl``). The two chips have the same SMs at the
same clock (132 x 1.98 GHz) and 1.41x the memory bandwidth on the H200. Contiguous (vectorized) elementwise kernels
ran 0.70-0.72x as long on the H200, as the bandwidth says; strided ones (non-contiguous copies, ``elementwise_kernel
<128, ...>``, concatenations) ran 0.94-1.00x: they are bound by the SMs, not by memory. One rate per byte priced
every memory-bound kernel at the bandwidth, so every traced step on the H200 came out ~9% fast.

The model: the traced bytes of memory-bound kernels cost ``trace_stream_hbm_fraction / bandwidth`` plus
``trace_stream_sm_cycles_per_byte / (SMs x clock)``; bytes of kernels that follow an index (routing) cost
``1 / (bandwidth x trace_irregular_bytes_eff)`` more. Fitted by non-negative least squares on the relative error of
the PyTorch cases (DeepSpeed's steps add its own copies, priced elsewhere), checked by leaving each family out.

    python tests/benchmarks/kernel_rates.py > tests/benchmarks/kernel_rates.out.txt
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from advisor.predictor import Predictor
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import TrainCase
from models.operators import training_operators
from models.training import derive

LOGS = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own" / "logs"
FILES = ("h100-anatomy-2026-11-24.jsonl", "h100-anatomy-2-2026-11-24.jsonl", "h200-anatomy-2026-11-24.jsonl")
ATTENTION_FILES = FILES + ("h100-anatomy-3-2026-11-24.jsonl",)  # + Gemma-2/3 (head size 256) and Granite (64)
MEMORY_KINDS = ("elementwise", "reduce", "copy", "sort_index_scatter")


def rows(files: tuple[str, ...] = FILES) -> list[dict]:
    """Per anatomy step: the traced memory-bound and irregular bytes, the GPU's ceilings, the measured kernel time;
    the fused attention's time priced at the head-128 rate beside the measured one."""
    p = Predictor()
    flat = p.efficiencies.model_copy(update={"attention_hd64_factor": 1.0, "attention_hd96_factor": 1.0,
                                             "attention_hd256_factor": 1.0})
    out = []
    for name in files:
        for line in (LOGS / name).read_text().splitlines():
            r = json.loads(line)
            if r.get("failure"):
                continue
            case = TrainCase.model_validate(r["case"])
            platform = resolve_platform(case.hardware, case.gpus, nodes=case.nodes)
            arch = resolve_model(case.model)
            case = p.traces.with_default_lora_targets(arch, case)
            s = derive(case, arch, platform, p.traces.trace(arch, case))
            c = p.calibration(platform).ceilings
            b, n, t = case.micro_batch_size, case.seq_len, s.trace

            def total(field: str) -> float:
                parts = [(t.layer, arch.num_hidden_layers), (t.head(), 1)]
                return sum(k * (getattr(q, f"{field}_fwd").at(b, n) + getattr(q, f"{field}_bwd").at(b, n))
                           for q, k in parts)

            attention_s = sum((op.time_s + op.backward_s) * (arch.num_hidden_layers if op.per_layer else 1)
                              for op in training_operators(s, flat, c) if op.kind == "attention")
            out.append({"id": r["id"], "gpu": r["gpu"], "family": r["id"].split("-")[1], "bw": c.memory_bps,
                        "head_size": arch.head_size, "attention_priced_s": attention_s,
                        "attention_s": r["by_kind_s"].get("attention", 0.0),
                        "sm": c.sm_cycles_per_s, "stream": total("other_bytes"), "irregular": total("irregular_bytes"),
                        "measured_s": sum(r["by_kind_s"].get(k, 0.0) for k in MEMORY_KINDS),
                        "pytorch": case.engine == "pytorch"})
    return out


def terms(r: dict, with_sm: bool) -> np.ndarray:
    """The three per-byte terms of ``r`` over its measured time (each weight multiplies one)."""
    return np.array([r["stream"] / r["bw"], r["stream"] / r["sm"] if with_sm else 0.0, r["irregular"] / r["bw"]]) / r["measured_s"]


def fit(rs: list[dict], with_sm: bool) -> np.ndarray:
    w, _ = nnls(np.array([terms(r, with_sm) for r in rs]), np.ones(len(rs)))
    return w


def errors(rs: list[dict], w: np.ndarray, with_sm: bool) -> list[float]:
    return [float(terms(r, with_sm) @ w - 1.0) for r in rs]


def report(label: str, rs: list[dict], with_sm: bool) -> np.ndarray:
    w = fit(rs, with_sm)
    e = errors(rs, w, with_sm)
    held: list[float] = []
    for fam in sorted({r["family"] for r in rs}):
        held += errors([r for r in rs if r["family"] == fam], fit([r for r in rs if r["family"] != fam], with_sm), with_sm)
    by_gpu = {g: [x for x, r in zip(e, rs) if r["gpu"] == g] for g in sorted({r["gpu"] for r in rs})}
    gpus = ", ".join(f"{g}: signed {100 * np.mean(v):+.1f}% (n={len(v)})" for g, v in by_gpu.items())
    eff = f"HBM fraction {w[0]:.3f} (bandwidth alone: eff {1 / w[0]:.3f})"
    print(f"{label}: {eff}, SM cycles/byte {w[1]:.4f}, irregular eff {1 / w[2] if w[2] else float('nan'):.3f}; "
          f"MAPE {100 * np.mean(np.abs(e)):.1f}%, {gpus}; each family left out: MAPE {100 * np.mean(np.abs(held)):.1f}%")
    return w


def attention_by_head_size(rs: list[dict]) -> None:
    """Measured over priced fused attention time (priced at the head-128 rate), median per head-size class."""
    classes = {"<= 64": lambda h: h <= 64, "65-96": lambda h: 64 < h <= 96, "97-128": lambda h: 96 < h <= 128,
               "> 128": lambda h: h > 128}
    print("fused attention, priced at the head-128 rate over measured (the head-size factors):")
    for label, inside in classes.items():
        ratios = sorted(r["attention_priced_s"] / r["attention_s"] for r in rs if inside(r["head_size"]) and r["attention_s"])
        if ratios:
            print(f"  head size {label:6s}: median {np.median(ratios):.2f} (n={len(ratios)}, {ratios[0]:.2f}-{ratios[-1]:.2f})")


if __name__ == "__main__":
    attention_by_head_size(rows(ATTENTION_FILES))
    print()
    rs = rows()
    pt = [r for r in rs if r["pytorch"]]
    print(f"memory-bound kernel time of one step, {len(rs)} anatomy steps ({len(pt)} PyTorch), H100 and H200\n")
    report("bandwidth only, PyTorch steps", pt, False)
    w = report("bandwidth + SMs, PyTorch steps (adopted)", pt, True)
    report("bandwidth + SMs, every step", rs, True)
    print()
    print(f"{'step':42s} {'GPU':>22s} {'GB':>6s} {'measured ms':>11s} {'model ms':>9s}")
    for r, x in zip(rs, errors(rs, w, True)):
        print(f"{r['id'][:42]:42s} {r['gpu'][-22:]:>22s} {r['stream'] / 1e9:6.0f} {1e3 * r['measured_s']:11.0f} "
              f"{1e3 * r['measured_s'] * (1 + x):9.0f}")
