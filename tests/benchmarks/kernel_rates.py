"""The kernel-level rate of a traced model's memory-bound kernels, fitted to real kernel times on two GPUs.

``probes/anatomy.py`` timed every CUDA kernel of one step of the same 15 cases on one H100 and on one H200
(``knowledge/measurements/own/logs/h{100,200}-anatomy*-2026-11-24.jsonl``). The two chips have the same SMs at the
same clock (132 x 1.98 GHz) and 1.41x the memory bandwidth on the H200. Contiguous (vectorized) elementwise kernels
ran 0.70-0.72x as long on the H200, as the bandwidth says; strided ones (non-contiguous copies, ``elementwise_kernel
<128, ...>``, concatenations) ran 0.94-1.00x: they are bound by the SMs, not by memory. One rate per byte priced
every memory-bound kernel at the bandwidth, so every traced step on the H200 came out ~9% fast.

The model: the traced bytes of contiguous memory-bound kernels cost ``trace_stream_hbm_fraction / bandwidth`` plus
``trace_stream_sm_cycles_per_byte / (SMs x clock)``; those of strided ones (off the vectorized path, which the trace
tells apart since schema 19: ``probes.trace.strided``) ``trace_strided_sm_cycles_per_byte / (SMs x clock)``; bytes of
kernels that follow an index (routing) cost ``1 / (bandwidth x trace_irregular_bytes_eff)`` more; since schema 22 the
strided kernels' offset work besides (output elements x dimensions x operands, which the generic kernel computes one
by one: Mamba-2's 6-D broadcasts address 3.5 element-dimensions per byte, a Llama layer's strided kernels 1.0-1.7)
costs ``trace_strided_sm_cycles_per_elem_dim / (SMs x clock)``. Fitted by
non-negative least squares on the relative error of the PyTorch cases (DeepSpeed's steps add its own copies, priced
elsewhere), checked by leaving each family out, and on the six anatomies of grid h200-blind-families (2026-11-29),
never fitted.

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
HELD_OUT = ("h200-anatomy-30-2026-11-29.jsonl",)  # six model types of grid h200-blind-families
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
                        "strided": total("strided_bytes"), "elem_dims": total("strided_elem_dims"),
                        "measured_s": sum(r["by_kind_s"].get(k, 0.0) for k in MEMORY_KINDS),
                        "pytorch": case.engine == "pytorch"})
    return out


# the per-byte models compared: one rate per byte (before schema 19), contiguous and strided apart (schema 19-21),
# and the strided kernels' offset work (output elements x dimensions x operands) beside their bytes (schema 22)
ONE_RATE, SPLIT, OFFSETS = "one rate", "split", "offsets"


def terms(r: dict, model: str) -> np.ndarray:
    """The per-byte terms of ``r`` over its measured time (each weight multiplies one): contiguous bytes at the
    bandwidth and the SMs, strided ones at the SMs, indexed ones at the bandwidth, and the strided kernels' offset work
    at the SMs; the terms a ``model`` does not have stay 0."""
    split = model != ONE_RATE
    contiguous = r["stream"] - (r["strided"] if split else 0.0)
    return np.array([contiguous / r["bw"], contiguous / r["sm"], r["strided"] / r["sm"] if split else 0.0,
                     r["irregular"] / r["bw"], r["elem_dims"] / r["sm"] if model == OFFSETS else 0.0]) / r["measured_s"]


def fit(rs: list[dict], model: str) -> np.ndarray:
    w, _ = nnls(np.array([terms(r, model) for r in rs]), np.ones(len(rs)))
    return w


def errors(rs: list[dict], w: np.ndarray, model: str) -> list[float]:
    return [float(terms(r, model) @ w - 1.0) for r in rs]


def report(label: str, rs: list[dict], model: str, held_out: list[dict]) -> np.ndarray:
    w = fit(rs, model)
    e = errors(rs, w, model)
    held: list[float] = []
    for fam in sorted({r["family"] for r in rs}):
        held += errors([r for r in rs if r["family"] == fam], fit([r for r in rs if r["family"] != fam], model), model)
    by_gpu = {g: [x for x, r in zip(e, rs) if r["gpu"] == g] for g in sorted({r["gpu"] for r in rs})}
    gpus = ", ".join(f"{g}: signed {100 * np.mean(v):+.1f}% (n={len(v)})" for g, v in by_gpu.items())
    print(f"{label}: HBM fraction {w[0]:.3f}, SM cycles/byte contiguous {w[1]:.4f} strided {w[2]:.4f}, per offset "
          f"element-dimension {w[4]:.4f}, irregular eff {1 / w[3] if w[3] else float('nan'):.3f}; MAPE "
          f"{100 * np.mean(np.abs(e)):.1f}%, {gpus}; each family left out: MAPE {100 * np.mean(np.abs(held)):.1f}%")
    if held_out:
        he = errors(held_out, w, model)
        print("  never fitted (grid h200-blind-families): " + ", ".join(
            f"{r['id'].split('-', 1)[1]} {x:+.0%}" for r, x in zip(held_out, he)) + f" (MAPE {100 * np.mean(np.abs(he)):.1f}%)")
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
    rs, new = rows(), rows(HELD_OUT)
    pt = [r for r in rs if r["pytorch"]]
    print(f"memory-bound kernel time of one step, {len(rs)} anatomy steps ({len(pt)} PyTorch), H100 and H200; strided share "
          f"of the traced bytes {100 * min(r['strided'] / r['stream'] for r in rs):.0f}-{100 * max(r['strided'] / r['stream'] for r in rs):.0f}%\n")
    report("one rate per byte, PyTorch steps (schema 18)", pt, ONE_RATE, new)
    report("contiguous and strided apart, PyTorch steps (schema 19-21)", pt, SPLIT, new)
    w = report("and the strided kernels' offset work, PyTorch steps (adopted, schema 22)", pt, OFFSETS, new)
    report("and the strided kernels' offset work, every step", rs, OFFSETS, [])
    print()
    print(f"{'step':42s} {'GPU':>22s} {'GB':>6s} {'strided':>7s} {'measured ms':>11s} {'model ms':>9s}")
    for r, x in zip(rs + new, errors(rs + new, w, OFFSETS)):
        print(f"{r['id'][:42]:42s} {r['gpu'][-22:]:>22s} {r['stream'] / 1e9:6.0f} {r['strided'] / r['stream']:7.0%} "
              f"{1e3 * r['measured_s']:11.0f} {1e3 * r['measured_s'] * (1 + x):9.0f}")
