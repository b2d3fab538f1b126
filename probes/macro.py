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


# --------------------------------------------------------------------------------------------------
# The design `advisor probe` runs: a few real layers under a small set of real configurations, in this
# process (a fresh interpreter per run would spend the budget importing torch). Each run is a contract case
# whose model is the user's architecture cut to 1 or 2 layers, so the performance model predicts it as it
# predicts any case and the calibration can learn this machine's framework overhead from the difference.

DESIGN_TOKENS = ((1, 256), (4, 1024), (16, 1024))  # (micro-batch, seq): dispatch-bound to compute-bound


def truncated(arch: ModelArch, layers: int) -> dict:
    """``arch`` as an inline contract model with ``layers`` decoder layers."""
    body = arch.model_dump(exclude={"name", "aliases", "param_count", "source"})
    return {**body, "num_hidden_layers": layers, "name": f"{arch.name}[:{layers}]"}


def design_cases(arch: ModelArch, hardware: str, *, quantized: bool = False, gpus: int = 1) -> list[dict]:
    """The probe's configurations, most informative first (the budget may cut the tail)."""
    out: list[dict] = []

    def add(tag: str, **kw) -> None:
        for layers in (1, 2):
            out.append({"id": f"macro-{tag}-L{layers}", "hardware": hardware, "model": truncated(arch, layers),
                        "gpus": gpus, **kw})

    for mb, seq in DESIGN_TOKENS:
        for rc in (False, True):
            add(f"full-pt-mb{mb}-s{seq}{'-rc' if rc else ''}", task="pretrain", engine="pytorch",
                micro_batch_size=mb, seq_len=seq, recompute=rc)
            add(f"lora-pt-mb{mb}-s{seq}{'-rc' if rc else ''}", task="finetune", method="lora", engine="pytorch",
                micro_batch_size=mb, seq_len=seq, recompute=rc)
    for z in (0, 1, 2, 3):
        add(f"full-ds-z{z}-mb1-s256", task="pretrain", engine="deepspeed", zero_stage=z, micro_batch_size=1, seq_len=256)
    add("full-pt-eager-mb4-s1024", task="pretrain", engine="pytorch", flash_attention=False, micro_batch_size=4,
        seq_len=1024)
    add("lora-ds-z2-mb4-s1024", task="finetune", method="lora", engine="deepspeed", zero_stage=2, micro_batch_size=4,
        seq_len=1024)
    if quantized:
        for mb, seq in DESIGN_TOKENS[:2]:
            add(f"qlora-pt-mb{mb}-s{seq}", task="finetune", method="qlora", engine="pytorch", micro_batch_size=mb,
                seq_len=seq)
    return out


def run_design(cases: list[dict], *, device: str = "cuda", budget_s: float = 120.0, steps: int = 3, warmup: int = 2,
               progress=None) -> list[Measurement]:
    """Run ``cases`` in this process until ``budget_s`` is spent; one Measurement each (errors included)."""
    import time

    from pydantic import TypeAdapter

    from knowledge.catalog import resolve_model
    from knowledge.schema import Case
    from probes.run_case import environment
    from probes.train_step import one_line, run_training

    start, rows = time.monotonic(), []
    per_run = None
    for i, obj in enumerate(cases):
        elapsed = time.monotonic() - start
        if per_run is not None and elapsed + per_run > budget_s:
            break
        if progress:
            progress(obj["id"], elapsed / budget_s)
        case = TypeAdapter(Case).validate_python(obj)
        t0 = time.monotonic()
        try:
            _reset_peak(device)
            m = run_training(case, resolve_model(case.model), steps=steps, warmup=warmup, device=device)
        except Exception as e:  # one configuration that cannot run must not cost the others
            m = Measured(failure="crash", error=f"{type(e).__name__}: {one_line(e)}")
        took = time.monotonic() - t0
        per_run = took if per_run is None else max(per_run * 0.7 + took * 0.3, took)
        rows.append(Measurement(dataset="probe-macro", source="probes.macro.run_design", case=case.model_dump(mode="json"),
                                measured=m, environment=environment("advisor probe (macro design)")))
    return rows


def _reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
