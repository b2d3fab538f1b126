"""Micro probes: the ceilings the roofline model needs, measured on this machine. They write nothing.

Units: seconds, FLOP/s as TFLOP/s (10^12), bytes/s as GB/s (10^9). All data is random normal, never
zeros (zeros can run faster than real data). Sizes default to ones that fill an H100; the ``toy``
sizes (device ``"cpu"``) finish in well under a second so tests cover every line.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from knowledge.schema import AttentionPoint, GemmPoint
from probes.timing import time_fn

_ROTATE_BYTES = 256 * 2**20  # input bytes to cycle through per timed region: several times any L2
_MAX_SETS = 16

# A model's forward GEMMs are (tokens, in) x (out, in)^T: q/o projections hidden->hidden, gate/up
# hidden->intermediate, down intermediate->hidden. (hidden, intermediate) of common Llama-style models.
MODEL_DIMS: tuple[tuple[int, int], ...] = (
    (2048, 8192),  # Llama-3.2-1B
    (4096, 11008),  # Llama-2-7B
    (4096, 14336),  # Llama-3-8B, Mistral-7B
    (5120, 13824),  # Llama-2-13B
    (8192, 28672),  # Llama-2/3-70B
)
TOKENS: tuple[int, ...] = (256, 1024, 4096, 16384)
TOY_GEMM_SHAPES: tuple[tuple[int, int, int], ...] = ((64, 128, 128), (64, 256, 128), (64, 128, 256))


def model_gemm_shapes(dims: tuple[tuple[int, int], ...], tokens: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(m, n, k) = (tokens, out features, in features) of each distinct forward GEMM of the models."""
    shapes: list[tuple[int, int, int]] = []
    for t in tokens:
        for h, i in dims:
            for s in ((t, h, h), (t, i, h), (t, h, i)):
                if s not in shapes:
                    shapes.append(s)
    return shapes


def default_gemm_shapes(quick: bool = False) -> list[tuple[int, int, int]]:
    """The sweep the profile runs on a GPU: every model and token count, or a handful when quick."""
    if quick:
        return model_gemm_shapes(((4096, 14336), (8192, 28672)), (1024, 4096))
    return model_gemm_shapes(MODEL_DIMS, TOKENS)


def default_dtype(device: str) -> str:
    """bf16 where the GPU has it, fp16 on older GPUs, fp32 on the CPU (whose bf16 path is emulated)."""
    if device.startswith("cuda"):
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def _torch_dtype(name: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def _is_oom(e: BaseException) -> bool:
    import torch

    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()


def _free(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def gemm_tflops(m: int, n: int, k: int, dtype: str = "bf16", device: str = "cuda", *, repeats: int = 10) -> float:
    """Achieved TFLOP/s of ``F.linear`` on an (m, k) input and an (n, k) weight (2·m·n·k FLOP a call).

    Several input sets are cycled within each timed region so that small shapes are not served from
    L2 on every repeat.
    """
    import torch
    import torch.nn.functional as F

    dt = _torch_dtype(dtype)
    set_bytes = (m * k + n * k) * torch.finfo(dt).bits // 8
    # The GPU's L2 (50-60 MB on Hopper) must not hold the inputs; the CPU runs are toy-size anyway.
    rotate = _ROTATE_BYTES if device.startswith("cuda") else 2**20
    n_sets = max(1, min(_MAX_SETS, math.ceil(rotate / set_bytes)))
    xs = [torch.randn(m, k, device=device, dtype=dt) for _ in range(n_sets)]
    ws = [torch.randn(n, k, device=device, dtype=dt) for _ in range(n_sets)]

    def run() -> None:
        for x, w in zip(xs, ws):
            F.linear(x, w)

    with torch.no_grad():
        t = time_fn(run, device, repeats=repeats) / n_sets
    return 2.0 * m * n * k / t / 1e12


def gemm_sweep(
    shapes: list[tuple[int, int, int]] | None = None,
    device: str = "cuda",
    dtype: str | None = None,
    *,
    repeats: int = 10,
    on_skip: Callable[[str], None] | None = None,
) -> list[GemmPoint]:
    """One GemmPoint per (m, n, k) shape; a shape that does not fit in memory is skipped (``on_skip``)."""
    dtype = dtype or default_dtype(device)
    if shapes is None:
        shapes = default_gemm_shapes() if device.startswith("cuda") else list(TOY_GEMM_SHAPES)
    points = []
    for m, n, k in shapes:
        try:
            points.append(GemmPoint(m=m, n=n, k=k, tflops=gemm_tflops(m, n, k, dtype, device, repeats=repeats)))
        except RuntimeError as e:
            if not _is_oom(e):
                raise
            if on_skip:
                on_skip(f"GEMM {m}x{n}x{k} skipped: out of memory")
        finally:
            _free(device)
    return points


def copy_bandwidth_gbs(device: str = "cuda", n_bytes: int | None = None) -> float:
    """Device copy bandwidth, GB/s, counting bytes read plus bytes written (2·n_bytes per copy)."""
    import torch

    n_bytes = n_bytes or (2**30 if device.startswith("cuda") else 32 * 2**20)
    src = torch.randn(n_bytes // 4, device=device)
    dst = torch.empty_like(src)
    t = time_fn(lambda: dst.copy_(src), device, repeats=20)
    del src, dst
    _free(device)
    return 2.0 * (n_bytes // 4 * 4) / t / 1e9


def launch_overhead_s(device: str = "cuda", n_launches: int = 256) -> float:
    """Seconds per tiny elementwise kernel launched from Python back to back (host cost included)."""
    import torch

    x = torch.randn(256, device=device)

    def run() -> None:
        for _ in range(n_launches):
            x.mul_(1.0001)

    # head_start=False: the launch gap from Python is exactly what this probe measures.
    return time_fn(run, device, warmup=2, repeats=10, head_start=False) / n_launches


def host_device_gbs(device: str = "cuda", n_bytes: int | None = None) -> tuple[float, float]:
    """(host->device, device->host) GB/s through pinned host memory.

    On the CPU there is no device: a host-to-host copy stands in so the code path runs (toy number).
    """
    import torch

    cuda = device.startswith("cuda")
    n = (n_bytes or (256 * 2**20 if cuda else 16 * 2**20)) // 4
    host = torch.empty(n, pin_memory=cuda).normal_()
    dev = torch.randn(n, device=device)
    h2d = time_fn(lambda: dev.copy_(host, non_blocking=True), device, repeats=10)
    d2h = time_fn(lambda: host.copy_(dev, non_blocking=True), device, repeats=10)
    del host, dev
    _free(device)
    return n * 4 / h2d / 1e9, n * 4 / d2h / 1e9


class CpuAdamRate(NamedTuple):
    gparams_per_s: float  # 10^9 parameters updated per second, fp32 params, grads and moments
    impl: str  # "deepspeed-cpu-adam", "torch-adamw-fused" or "torch-adamw"
    threads: int  # OpenMP / torch threads it ran on


@contextlib.contextmanager
def _quiet_fds() -> Iterator[Any]:
    """Silence fds 1 and 2 (DeepSpeed's C++ and ninja print there); yields the file holding it."""
    with tempfile.TemporaryFile(mode="w+") as sink:
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield sink
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _deepspeed_adam(params: list[Any], allow_build: bool) -> Any | None:
    """DeepSpeedCPUAdam if its op is prebuilt, JIT-cached, or ``allow_build`` (a build takes minutes)."""
    try:
        with _quiet_fds():
            from deepspeed.git_version_info import installed_ops
            from deepspeed.ops.adam import DeepSpeedCPUAdam
            from torch.utils.cpp_extension import _get_build_directory

            cached = os.path.exists(os.path.join(_get_build_directory("cpu_adam", False), "cpu_adam.so"))
            if not (installed_ops.get("cpu_adam") or cached or allow_build):
                return None
            return DeepSpeedCPUAdam(params, lr=1e-4, adamw_mode=True)
    except Exception:  # not installed, no compiler, incompatible CPU: the torch fallback is honest
        return None


def cpu_adam_gparams_per_s(
    n_params: int = 10_000_000, *, use_deepspeed: bool = True, allow_build: bool = False, repeats: int = 3
) -> CpuAdamRate:
    """Parameters per second one optimizer step updates on the host, in 10^9/s, and which optimizer."""
    import torch

    p = torch.nn.Parameter(torch.randn(n_params))
    p.grad = torch.randn(n_params) * 1e-3
    opt = _deepspeed_adam([p], allow_build) if use_deepspeed else None
    impl = "deepspeed-cpu-adam"
    if opt is None:
        try:  # the fused CPU kernel is closest to DeepSpeed's vectorised one
            opt, impl = torch.optim.AdamW([p], lr=1e-4, fused=True), "torch-adamw-fused"
            opt.step()
        except (RuntimeError, TypeError):
            opt, impl = torch.optim.AdamW([p], lr=1e-4), "torch-adamw"
    t = time_fn(opt.step, "cpu", warmup=1, repeats=repeats)
    return CpuAdamRate(n_params / t / 1e9, impl, torch.get_num_threads())


def attention_fwd_bwd(
    batch: int, seq: int, heads: int, head_dim: int, device: str = "cuda", dtype: str | None = None, *, repeats: int = 5
) -> AttentionPoint:
    """Seconds of causal attention forward + backward: fused (SDPA) and eager (scores materialised).

    The eager form is what transformers' ``eager`` attention does: scaled scores, additive causal
    mask, softmax in fp32, matmul with V. A form that runs out of memory is recorded as None.
    """
    import torch
    import torch.nn.functional as F

    dt = _torch_dtype(dtype or default_dtype(device))
    q, k, v = (torch.randn(batch, heads, seq, head_dim, device=device, dtype=dt, requires_grad=True) for _ in range(3))
    g = torch.randn(batch, heads, seq, head_dim, device=device, dtype=dt)
    scale = head_dim**-0.5

    def fused() -> None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(out, (q, k, v), g)

    # Built once, as transformers builds it once per forward rather than per layer.
    mask = torch.full((seq, seq), torch.finfo(dt).min, device=device, dtype=dt).triu(1)

    def eager() -> None:
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale + mask
        probs = scores.softmax(dim=-1, dtype=torch.float32).to(dt)
        out = torch.matmul(probs, v)
        torch.autograd.grad(out, (q, k, v), g)

    def timed(fn: Callable[[], None]) -> float | None:
        try:
            return time_fn(fn, device, warmup=2, repeats=repeats)
        except RuntimeError as e:
            if not _is_oom(e):
                raise
            return None
        finally:
            _free(device)

    fused_s, eager_s = timed(fused), timed(eager)
    return AttentionPoint(
        batch=batch, seq_len=seq, heads=heads, head_dim=head_dim, fused_fwd_bwd_s=fused_s, eager_fwd_bwd_s=eager_s
    )
