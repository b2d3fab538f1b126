"""Run real training steps of a ``TrainCase`` and measure them (step time, tokens/s, peak GiB, phases).

Works as one process (GPU or CPU) and under torchrun / the DeepSpeed launcher (LOCAL_RANK, WORLD_SIZE).
Random token batches, random-init weights: only shapes matter for speed and memory.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

from knowledge.schema import Measured, ModelArch, TrainCase


@dataclass
class Dist:
    rank: int
    local_rank: int
    world: int
    device: Any  # torch.device

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup_distributed(device: str, need_group: bool) -> Dist:
    """Read the launcher's environment, pick this rank's device, init a process group when needed.

    A group is made when WORLD_SIZE > 1 or ``need_group`` (DeepSpeed always wants one): NCCL on CUDA,
    gloo on CPU. A single process without a launcher gets a one-rank group on a free local port.
    """
    import torch
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device.startswith("cuda"):
        dev = torch.device("cuda", local) if device == "cuda" else torch.device(device)
        torch.cuda.set_device(dev)
    else:
        dev = torch.device("cpu")
    if (world > 1 or need_group) and not dist.is_initialized():
        for k, v in (("MASTER_ADDR", "127.0.0.1"), ("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")):
            os.environ.setdefault(k, v)
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo", rank=rank, world_size=world)
    return Dist(rank, local, world, dev)


def is_oom(e: BaseException) -> bool:
    import torch

    return isinstance(e, torch.cuda.OutOfMemoryError) or (isinstance(e, RuntimeError) and "out of memory" in str(e))


def one_line(e: BaseException, limit: int = 300) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:limit]


def peak_gib(dev: Any) -> float | None:
    """``torch.cuda.max_memory_allocated`` since process start, GiB; None off CUDA."""
    import torch

    if dev.type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(dev) / 2**30


def peak_reserved_gib(dev: Any) -> float | None:
    """``torch.cuda.max_memory_reserved`` since process start, GiB (what the caching allocator held: the tensors plus
    its fragmentation, the quantity that runs out); None off CUDA."""
    import torch

    if dev.type != "cuda":
        return None
    return torch.cuda.max_memory_reserved(dev) / 2**30


def oom_measured(e: BaseException, dev: Any) -> Measured:
    return Measured(oom=True, failure="device_oom", peak_mem_gib=peak_gib(dev), peak_reserved_gib=peak_reserved_gib(dev),
                    error=f"CUDA out of memory: {one_line(e, 200)}")


def _reduce_over_ranks(value: float | None, d: Dist, op: str = "max") -> float | None:
    import torch
    import torch.distributed as dist

    if value is None or d.world == 1 or not dist.is_initialized():
        return value
    t = torch.tensor([value], dtype=torch.float64, device=d.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
    return float(t.item())


def sanitize_arch_list(env: Any = None) -> None:
    """Drop arch suffixes ("9.0a" -> "9.0") from TORCH_CUDA_ARCH_LIST in ``env`` (default os.environ).

    DeepSpeed 0.19's op builder parses each entry as numbers and fails on the "a" that CUDA images set for
    Hopper; its JIT-built ops (FusedAdam, CPUAdam) need no arch-specific features.
    """
    import re

    env = os.environ if env is None else env
    value = env.get("TORCH_CUDA_ARCH_LIST")
    if value:
        env["TORCH_CUDA_ARCH_LIST"] = re.sub(r"(\d+\.\d+)[a-z]+", r"\1", value)


def _ds_dtype(ds_config: dict) -> Any:
    import torch

    if ds_config.get("bf16", {}).get("enabled"):
        return torch.bfloat16
    if ds_config.get("fp16", {}).get("enabled"):
        return torch.float16
    return torch.float32


def resolve_ds_config(case: TrainCase, world: int, ds_config: dict | None) -> dict:
    """The DeepSpeed config to use, with batch sizes forced to the case (DeepSpeed checks their product)."""
    if ds_config is None:
        from knowledge.catalog import resolve_platform  # written alongside; imported lazily
        from models.deepspeed_config import deepspeed_config

        ds_config = deepspeed_config(case, resolve_platform(case.hardware).gpu, world)
    cfg = dict(ds_config)
    cfg["train_micro_batch_size_per_gpu"] = case.micro_batch_size
    cfg["gradient_accumulation_steps"] = case.grad_accum
    cfg["train_batch_size"] = case.micro_batch_size * case.grad_accum * world
    return cfg


def run_training(
    case: TrainCase,
    arch: ModelArch,
    *,
    steps: int = 6,
    warmup: int = 3,
    device: str = "cuda",
    ds_config: dict | None = None,
    num_layers: int | None = None,
    phase_timing: bool = True,
) -> Measured:
    """Measure ``steps`` optimizer steps after ``warmup`` ones; step_time_s is their median (seconds).

    tokens_per_s = micro_batch * seq_len * grad_accum * world_size / step_time_s. With ``phase_timing``
    one more step is run with a synchronize around each phase for forward_s / backward_s / optimizer_s
    (summed over the micro-steps). A CUDA OOM returns ``Measured(oom=True)`` with the peak reached.
    """
    from probes.host import HostPeak, max_rss_gib

    d = setup_distributed(device, need_group=case.engine == "deepspeed")
    with HostPeak() as host:
        m = oom_guarded(d, lambda: _run(case, arch, d, steps, warmup, ds_config, num_layers, phase_timing))
    rss = _reduce_over_ranks(max_rss_gib(), d, "sum") if m.failure is None else None
    return m.model_copy(update={"host_peak_gib": round(host.rise_gib, 3), "host_rss_gib": rss and round(rss, 3)})


def oom_guarded(d: Dist, run: Callable[[], Measured]) -> Measured:
    """``run()``, with a CUDA out-of-memory turned into ``Measured(oom=True)`` and the cache released."""
    try:
        return run()
    except Exception as e:
        if is_oom(e):
            return oom_measured(e, d.device)
        raise
    finally:
        if d.cuda:
            import torch

            torch.cuda.empty_cache()


def _run(case: TrainCase, arch: ModelArch, d: Dist, steps: int, warmup: int, ds_config: dict | None,
         num_layers: int | None, phase_timing: bool) -> Measured:
    import torch

    attn = "sdpa" if case.flash_attention else "eager"
    fwd, bwd, opt_step, model = _prepare(case, arch, d, ds_config, num_layers, attn)
    x = torch.randint(0, arch.vocab_size, (case.micro_batch_size, case.seq_len), device=d.device)

    def sync() -> None:
        if d.cuda:
            torch.cuda.synchronize(d.device)

    def step(phases: list[float] | None) -> None:
        # phases: [forward, backward, optimizer] seconds, accumulated when given (one sync per phase)
        for micro in range(case.grad_accum):
            last = micro == case.grad_accum - 1
            t0 = time.perf_counter()
            loss = fwd(x, last)
            if phases is not None:
                sync(); t1 = time.perf_counter(); phases[0] += t1 - t0
            bwd(loss, last)
            if phases is not None:
                sync(); t2 = time.perf_counter(); phases[1] += t2 - t1
            opt_step(last)
            if phases is not None:
                sync(); phases[2] += time.perf_counter() - t2

    for _ in range(warmup):
        step(None)
    times = []
    for _ in range(steps):
        sync()
        t0 = time.perf_counter()
        step(None)
        sync()
        times.append(time.perf_counter() - t0)
    phases = [0.0, 0.0, 0.0] if phase_timing else None
    if phases is not None:
        sync()
        step(phases)
    step_time = statistics.median(times)
    peak = _reduce_over_ranks(peak_gib(d.device), d)
    reserved = _reduce_over_ranks(peak_reserved_gib(d.device), d)
    tokens = case.micro_batch_size * case.seq_len * case.grad_accum * d.world
    del model
    return Measured(
        tokens_per_s=tokens / step_time,
        step_time_s=step_time,
        peak_mem_gib=peak,
        peak_reserved_gib=reserved,
        forward_s=phases[0] if phases else None,
        backward_s=phases[1] if phases else None,
        optimizer_s=phases[2] if phases else None,
    )


Fwd = Callable[[Any, bool], Any]


def _prepare(case: TrainCase, arch: ModelArch, d: Dist, ds_config: dict | None, num_layers: int | None,
             attn: str) -> tuple[Fwd, Callable[[Any, bool], None], Callable[[bool], None], Any]:
    """Build model + optimizer for the engine; returns (forward, backward, optimizer step, model)."""
    import torch

    from probes.hf_model import apply_method, build_model, trainable_parameters

    if case.engine == "deepspeed":
        sanitize_arch_list()  # before DeepSpeed JIT-builds its optimizer ops
        import deepspeed

        cfg = resolve_ds_config(case, d.world, ds_config)
        dtype = _ds_dtype(cfg)
        stage3 = cfg.get("zero_optimization", {}).get("stage", 0) == 3
        model = build_model(arch, device=d.device, dtype=dtype, num_layers=num_layers, attn_impl=attn,
                            quantization=case.quantization, zero3_config=cfg if stage3 else None)
        model = apply_method(model, case)
        model.train()
        params = trainable_parameters(model)
        # A config without an "optimizer" section gets a torch AdamW (fused on CUDA), as HF Trainer does
        opt = None if "optimizer" in cfg else torch.optim.AdamW(params, lr=1e-5, fused=d.cuda or None)
        engine, *_ = deepspeed.initialize(model=model, model_parameters=params, optimizer=opt, config=cfg)

        def fwd(x: Any, last: bool) -> Any:
            return engine(input_ids=x, labels=x).loss

        def bwd(loss: Any, last: bool) -> None:
            engine.backward(loss)

        def step(last: bool) -> None:
            engine.step()  # DeepSpeed counts micro-steps and only updates at the accumulation boundary

        return fwd, bwd, step, engine

    # Plain PyTorch / PEFT loop.
    full = case.method == "full"
    if full:
        dtype = torch.float32  # fp32 weights, bf16 math under autocast (the contract's pytorch engine)
    else:
        dtype = torch.bfloat16 if d.cuda else torch.float32  # frozen 16-bit base; fp32 on CPU for speed
    model = build_model(arch, device=d.device, dtype=dtype, num_layers=num_layers, attn_impl=attn,
                        quantization=case.quantization)
    model = apply_method(model, case)
    model.train()
    params = trainable_parameters(model)
    opt = torch.optim.AdamW(params, lr=1e-5, fused=True if d.cuda else None)
    wrapped = model
    if d.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        wrapped = DistributedDataParallel(model, device_ids=[d.local_rank] if d.cuda else None)

    def no_sync(last: bool) -> Any:
        # DDP all-reduces only on the last micro-step; it decides that in the forward, so both are wrapped
        return wrapped.no_sync() if (d.world > 1 and not last) else contextlib.nullcontext()

    def fwd(x: Any, last: bool) -> Any:
        # bf16 autocast for every method, as Trainer(bf16=True): fp32 weights / PEFT's fp32 adapters run in bf16
        with torch.autocast(d.device.type, dtype=torch.bfloat16), no_sync(last):
            return wrapped(input_ids=x, labels=x).loss / case.grad_accum

    def bwd(loss: Any, last: bool) -> None:
        with no_sync(last):
            loss.backward()

    def step(last: bool) -> None:
        if last:
            opt.step()
            opt.zero_grad(set_to_none=True)

    return fwd, bwd, step, wrapped
