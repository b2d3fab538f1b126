"""Run the probes and assemble a :class:`knowledge.schema.Profile` of this machine's ceilings.

``quick`` keeps to about a minute on one H100, the full run to about five. On ``device="cpu"``
everything runs at toy size (seconds), so tests cover the whole path; that profile's gpu_name is
"cpu" and its gpu_count 0. Progress goes to a callback ``(message, fraction done in [0, 1])``; a
negative fraction leaves the bar where it is and marks a message for the user, which starts with
"warning: " or "note: ".
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from knowledge.schema import CollectivePoint, Environment, Profile
from probes import micro
from probes.collectives import MULTICAST_OFF

ProgressFn = Callable[[str, float], None]
_ROOT = Path(__file__).resolve().parents[1]  # folder holding the probes package, for the subprocess


def _version(dist_name: str) -> str | None:
    # Package metadata, not an import: importing deepspeed or transformers costs seconds.
    try:
        return metadata.version(dist_name)
    except metadata.PackageNotFoundError:
        return None


def _driver_version() -> str | None:
    try:
        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=15, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    lines = r.stdout.strip().splitlines()
    return lines[0].strip() if lines else None


def match_catalog(gpu_name: str) -> str | None:
    """Catalog id of ``gpu_name`` when knowledge.catalog offers ``match_gpu`` and knows it."""
    try:
        from knowledge.catalog import match_gpu  # written by another engineer; may not exist yet
    except (ImportError, AttributeError):
        return None
    try:
        spec = match_gpu(gpu_name)
    except Exception:  # a catalog bug must not cost the user their measurements
        return None
    return getattr(spec, "id", None)


def environment(gpu_name: str, gpu_count: int, cuda: bool) -> Environment:
    """Software and hardware this profile was measured with; date is UTC, ISO 8601."""
    import torch

    return Environment(
        gpu_name=gpu_name,
        gpu_count=gpu_count,
        driver=_driver_version() if cuda else None,
        torch=torch.__version__,
        cuda=torch.version.cuda,
        deepspeed=_version("deepspeed"),
        transformers=_version("transformers"),
        peft=_version("peft"),
        bitsandbytes=_version("bitsandbytes"),
        date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        command=shlex.join(sys.argv),
    )


def run_collectives(
    n_gpus: int, *, quick: bool, toy: bool = False, timeout_s: float = 180.0, warn: Callable[[str], None] = print
) -> list[CollectivePoint]:
    """Launch ``torchrun --nproc_per_node=n_gpus -m probes.collectives`` and read its points.

    Any failure (launch, NCCL, timeout, unreadable output) is a warning and no points: the rest of
    the profile is still worth keeping.
    """
    with tempfile.TemporaryDirectory(prefix="advisor-coll-") as d:
        out = Path(d) / "collectives.jsonl"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n_gpus}"]
        cmd += ["-m", "probes.collectives", "--out", str(out)] + (["--toy"] if toy else ["--quick"] if quick else [])
        path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, **MULTICAST_OFF, "PYTHONPATH": path}
        env.setdefault("OMP_NUM_THREADS", "1")  # torchrun sets 1 anyway, with a warning; a user's choice stands
        # Own session, so a timeout ends torchrun and every worker it started, and nothing else.
        proc = subprocess.Popen(
            cmd, env=env, cwd=_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            log, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            warn(f"warning: collectives timed out after {timeout_s:.0f} s; none recorded")
            return []
        if proc.returncode != 0:
            tail = [ln for ln in (log or "").strip().splitlines() if ln.strip()][-1:] or ["no output"]
            warn(f"warning: collectives failed (exit {proc.returncode}): {tail[0][:200]}; none recorded")
            return []
        try:
            return [CollectivePoint(**json.loads(ln)) for ln in out.read_text().splitlines() if ln.strip()]
        except (OSError, ValueError) as e:
            warn(f"warning: collectives output unreadable ({e}); none recorded")
            return []


def run_profile(quick: bool = False, device: str = "cuda", progress: ProgressFn | None = None,
                macro_model: str | None = "llama2-7b", macro_budget_s: float = 120.0) -> Profile:
    """Measure this machine (``device`` "cuda", "cuda:N" or "cpu") and return its Profile.

    A probe that is not essential (GEMM sweep, host transfers, CPU Adam, attention) failing becomes a
    warning and an empty field; the three ceilings Profile requires (square GEMM, copy bandwidth,
    launch overhead) raise.
    """
    import torch

    report: ProgressFn = progress or (lambda msg, frac: None)
    cuda = device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise RuntimeError("device cuda asked for, but torch sees no CUDA GPU")
    if cuda:
        if ":" in device:
            torch.cuda.set_device(device)
        gpu_name, gpu_count = torch.cuda.get_device_name(), torch.cuda.device_count()
    else:
        gpu_name, gpu_count = "cpu", 0
    dtype = micro.default_dtype(device)
    big = 8192 if cuda else 256
    if not cuda:
        gemm_shapes, attn_shapes = list(micro.TOY_GEMM_SHAPES), [(1, 128, 4, 32)]
        adam_params, copy_bytes, link_bytes = 1_000_000, 8 * 2**20, 4 * 2**20
    elif quick:
        gemm_shapes, attn_shapes = micro.default_gemm_shapes(quick=True), [(1, 4096, 32, 128)]
        adam_params, copy_bytes, link_bytes = 20_000_000, 2**30, 256 * 2**20
    else:
        gemm_shapes = micro.default_gemm_shapes()
        attn_shapes = [(1, 2048, 32, 128), (1, 4096, 32, 128), (1, 8192, 32, 128), (4, 4096, 32, 128)]
        adam_params, copy_bytes, link_bytes = 100_000_000, 2**31, 2**30

    result: dict[str, Any] = {}
    warn = lambda msg: report(msg, -1.0)  # noqa: E731  (negative fraction: the bar stays put)

    def optional(key: str, fn: Callable[[], Any], default: Any) -> None:
        try:
            result[key] = fn()
        except Exception as e:  # one broken probe must not discard the others
            warn(f"warning: {key} probe failed ({type(e).__name__}: {str(e)[:160]}); left empty")
            result[key] = default

    def matmul() -> None:
        result["matmul"] = micro.gemm_tflops(big, big, big, dtype, device)

    def sweep() -> None:
        skip = lambda msg: warn(f"warning: {msg}")  # noqa: E731
        optional("gemm", lambda: micro.gemm_sweep(gemm_shapes, device, dtype, on_skip=skip), [])

    def copy() -> None:
        result["copy"] = micro.copy_bandwidth_gbs(device, copy_bytes)

    def launch() -> None:
        result["launch"] = micro.launch_overhead_s(device)

    def link() -> None:
        optional("link", lambda: micro.host_device_gbs(device, link_bytes), (None, None))

    def attention() -> None:
        attn = micro.attention_fwd_bwd
        optional("attention", lambda: [attn(*s, device=device, dtype=dtype) for s in attn_shapes], [])

    def adam() -> None:
        def measure() -> float:
            # A DeepSpeed op build takes minutes: only the full run on a GPU machine may start one.
            rate = micro.cpu_adam_gparams_per_s(adam_params, allow_build=cuda and not quick)
            warn(f"note: CPU Adam measured with {rate.impl} on {rate.threads} threads")
            result["adam_impl"], result["adam_threads"] = rate.impl, rate.threads
            return rate.gparams_per_s

        optional("adam", measure, None)

    def collectives() -> None:
        result["collectives"] = run_collectives(gpu_count, quick=quick, timeout_s=120 if quick else 240, warn=warn)

    steps: list[tuple[str, float, Callable[[], None]]] = [
        ("square GEMM", 1, matmul),
        ("GEMM sweep", 4 if quick else 8, sweep),
        ("copy bandwidth", 1, copy),
        ("launch overhead", 1, launch),
        ("host<->device", 1, link),
        ("attention", 3 if quick else 6, attention),
        ("CPU Adam", 2, adam),
    ]
    if cuda and gpu_count > 1:
        steps.append(("collectives", 8, collectives))

    def macro() -> None:
        from knowledge.catalog import resolve_model
        from probes.macro import design_cases, run_design

        arch = resolve_model(macro_model)
        if not cuda:  # toy size on the CPU: the path runs, the numbers mean nothing
            from probes.grids import TOY_ARCH

            arch = resolve_model(TOY_ARCH)
        hw = _platform_id(gpu_name, gpu_count) if cuda else "h100x1"
        cases = design_cases(arch, hw, quantized=cuda and _has_bnb())
        if not cuda:
            cases = [dict(c, seq_len=16, micro_batch_size=1) for c in cases[:4]]
        optional("macro", lambda: run_design(cases, device=device, budget_s=macro_budget_s), [])

    if macro_model:
        steps.append(("real layers", 12, macro))
    total, done = sum(w for _, w, _ in steps), 0.0
    for name, weight, step in steps:
        report(name, done / total)
        step()
        done += weight
    report("done", 1.0)

    h2d, d2h = result["link"]
    return Profile(
        gpu_name=gpu_name,
        gpu_id=match_catalog(gpu_name) if cuda else None,
        gpu_count=gpu_count,
        environment=environment(gpu_name, gpu_count, cuda),
        quick=quick,
        matmul_tflops=result["matmul"],
        gemm=result["gemm"],
        memory_bandwidth_gbs=result["copy"],
        launch_overhead_s=result["launch"],
        h2d_gbs=h2d,
        d2h_gbs=d2h,
        cpu_adam_gparams_per_s=result["adam"],
        attention=result["attention"],
        collectives=result.get("collectives", []),
        cpu_adam_impl=result.get("adam_impl"),
        cpu_adam_threads=result.get("adam_threads"),
        host=_host_probe(),
        macro=result.get("macro", []),
    )


def _host_probe():
    from knowledge.schema import HostProbe
    from probes.host import host_facts

    return HostProbe(**dataclasses.asdict(host_facts()))  # the same fields, the probe's record of them


def _platform_id(gpu_name: str, count: int) -> str:
    gid = match_catalog(gpu_name)
    return f"{gid}x{count}" if gid else f"h100x{count}"


def _has_bnb() -> bool:
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None
