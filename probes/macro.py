"""Macro probe: a few decoder layers of the real model under the real configuration, extrapolated.

Runs the case twice, truncated to ``layers_lo`` and ``layers_hi`` decoder layers, each in its own process
(``probes.run_case --num-layers``), so an OOM or a crash costs only that run. Step time and peak memory
are linear in the layer count (the embedding, LM head, loss and optimizer overheads are the intercept), so
two points give the whole model:

    step(L) = step(lo) + (step(hi) - step(lo)) / (hi - lo) * (L - lo)

The returned Measurement carries the extrapolated numbers and both raw points in its notes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from knowledge.schema import Measured, Measurement, ModelArch, TrainCase
from knowledge.store import read_jsonl

REPO = Path(__file__).resolve().parents[1]


def extrapolate(lo: int, hi: int, y_lo: float, y_hi: float, layers: int) -> float:
    """The straight line through (lo, y_lo) and (hi, y_hi), at ``layers``."""
    return y_lo + (y_hi - y_lo) / (hi - lo) * (layers - lo)


def _run_truncated(case: TrainCase, layers: int, steps: int, warmup: int, device: str | None, timeout_s: float) -> Measured:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "row.jsonl"
        cmd = [sys.executable, "-m", "probes.run_case", "--case", case.model_dump_json(), "--out", str(out),
               "--steps", str(steps), "--warmup", str(warmup), "--num-layers", str(layers), "--dataset", "probe-macro",
               "--no-phase-timing"]
        if device:
            cmd += ["--device", device]
        try:
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return Measured(error=f"timeout after {timeout_s:.0f} s at {layers} layers")
        rows = [obj for _, obj, err in read_jsonl(out) if obj] if out.exists() else []
        if not rows:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return Measured(error=f"run failed at {layers} layers: {tail[0][:200]}")
        return Measured.model_validate(rows[-1]["measured"])


def macro_probe(case: TrainCase, arch: ModelArch, *, layers_lo: int = 1, layers_hi: int = 2, steps: int = 3,
                warmup: int = 2, device: str | None = None, timeout_s: float = 300.0) -> Measurement:
    """Measure ``case`` at two truncated depths and extrapolate to ``arch.num_hidden_layers``."""
    if not 0 < layers_lo < layers_hi:
        raise ValueError(f"need 0 < layers_lo < layers_hi, got {layers_lo}, {layers_hi}")
    a = _run_truncated(case, layers_lo, steps, warmup, device, timeout_s)
    b = _run_truncated(case, layers_hi, steps, warmup, device, timeout_s)
    points = json.dumps({"layers": [layers_lo, layers_hi], "step_time_s": [a.step_time_s, b.step_time_s],
                         "peak_mem_gib": [a.peak_mem_gib, b.peak_mem_gib]})
    if a.error or b.error or not (a.step_time_s and b.step_time_s):
        measured = Measured(oom=a.oom or b.oom, error=a.error or b.error or "no step time measured")
    else:
        L = arch.num_hidden_layers
        step = max(extrapolate(layers_lo, layers_hi, a.step_time_s, b.step_time_s, L), b.step_time_s)
        tokens = case.micro_batch_size * case.seq_len * case.grad_accum * (case.gpus or 1)
        peak = None
        if a.peak_mem_gib is not None and b.peak_mem_gib is not None:
            peak = extrapolate(layers_lo, layers_hi, a.peak_mem_gib, b.peak_mem_gib, L)
        measured = Measured(tokens_per_s=tokens / step, step_time_s=step, peak_mem_gib=peak)
    return Measurement(dataset="probe-macro", source="probes.macro (extrapolated by layer count)",
                       case=case.model_dump(), measured=measured, notes=points)
