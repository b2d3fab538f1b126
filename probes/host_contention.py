"""How a node's ranks contend for its host, measured: what ``models.step_time``'s CPU Adam and offload copies assume.

- DeepSpeed CPU Adam run by P processes at once with T OpenMP threads each, T in {1 (torchrun's
  OMP_NUM_THREADS=1), cores / P (``deepspeed --bind_cores_to_rank``), every core (the DeepSpeed launcher's
  default: it leaves OMP_NUM_THREADS unset, so each rank's OpenMP takes the whole host)};
- the threads a fresh process gets with OMP_NUM_THREADS unset (what the launcher's ranks get);
- host<->device copies of one GPU from pinned and from pageable memory (DeepSpeed's offload buffers are
  pageable unless ``pin_memory`` is set);
- with ``--dispatch-procs``: a host-bound stream of small autograd steps dispatched by P processes at once (each on
  its own GPU), with and without a process group made (NCCL's proxy threads run beside each rank): Qwen3.5's host-bound
  step took 1.87 s alone on a two-GPU machine and 2.05 / 2.95 s per rank with two ranks (2026-11-29), and the model's
  per-platform host factors average that away (``tests/benchmarks/host_bound_ranks.out.txt``).

``python -m probes.host_contention --out DIR [--procs 1,2,4,8] [--params N] [--toy]`` appends one JSON line per
measurement to DIR/host_contention.jsonl. ``--toy`` runs at toy size on the CPU (tests).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from probes.host import usable_cores
from probes.links import cpu_adam_concurrent


def default_threads() -> int:
    """torch's intra-op threads in a fresh process without OMP_NUM_THREADS (a DeepSpeed-launched rank)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def thread_counts(cores: int, procs: int) -> list[int]:
    """1, the cores shared out, and every core (each once)."""
    return sorted({1, max(1, cores // procs), cores})


def _timed_gbs(copy: Callable[[], object], crossed_bytes: int, repeats: int, sync: Callable[[], None], warmups: int = 1,
               ready: Callable[[], None] | None = None) -> float:
    """GB/s of ``copy`` run ``repeats`` times after ``warmups`` untimed runs, each batch closed by ``sync`` (the GPU's
    queue); ``ready`` (several processes' barrier) runs just before the clock starts."""
    for _ in range(warmups):
        copy()
    sync()
    if ready is not None:
        ready()
    t0 = time.perf_counter()
    for _ in range(repeats):
        copy()
    sync()
    return crossed_bytes * repeats / (time.perf_counter() - t0) / 1e9


def copy_rates_gbs(n_bytes: int, toy: bool = False, repeats: int = 5) -> dict[str, float]:
    """One GPU's H2D and D2H from pinned and from pageable host memory, GB/s."""
    import torch

    cuda = torch.cuda.is_available() and not toy
    dev = "cuda:0" if cuda else "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    n = n_bytes // 4
    buf = torch.empty(n, device=dev)
    out: dict[str, float] = {}
    for pinned in (True, False):
        host = torch.empty(n, pin_memory=pinned and cuda).normal_()
        for h2d in (True, False):
            def once() -> None:
                if h2d:
                    buf.copy_(host, non_blocking=pinned)
                else:
                    host.copy_(buf, non_blocking=pinned)
            out[f"{'pinned' if pinned else 'pageable'}_{'h2d' if h2d else 'd2h'}_gbs"] = _timed_gbs(
                once, n_bytes, repeats, sync, warmups=2)
    return out


# what each concurrent process copies, and the bytes that cross the link for it: DeepSpeed's offload moves fp32 and
# 16-bit tensors both ways, and ZeRO-1/2's updated weights go from an fp32 host partition into a 16-bit GPU tensor
# (torch converts on the host first)
COPY_KINDS = ("pageable_d2h", "pageable_h2d", "pageable_h2d_fp32_to_16bit", "pinned_d2h", "pinned_h2d")


def _copy_worker(rank: int, n_bytes: int, repeats: int, toy: bool, barrier, queue) -> None:  # pragma: no cover - subprocess
    import torch

    cuda = torch.cuda.is_available() and not toy
    dev = f"cuda:{rank % torch.cuda.device_count()}" if cuda else "cpu"
    n = n_bytes // 4
    gpu32, gpu16 = torch.empty(n, device=dev), torch.empty(n, device=dev, dtype=torch.bfloat16)
    host32 = torch.empty(n).normal_()
    pin32 = torch.empty(n, pin_memory=cuda).normal_()
    ops = {"pageable_d2h": (lambda: host32.copy_(gpu32), n_bytes),
           "pageable_h2d": (lambda: gpu32.copy_(host32), n_bytes),
           "pageable_h2d_fp32_to_16bit": (lambda: gpu16.copy_(host32), 2 * n),
           "pinned_d2h": (lambda: pin32.copy_(gpu32, non_blocking=True), n_bytes),
           "pinned_h2d": (lambda: gpu32.copy_(pin32, non_blocking=True), n_bytes)}
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    out: dict[str, float] = {}
    for kind in COPY_KINDS:
        fn, crossed = ops[kind]
        out[kind] = _timed_gbs(fn, crossed, repeats, sync, ready=barrier.wait)
        barrier.wait()
    queue.put(out)


def concurrent_copy_rates_gbs(procs: int, n_bytes: int, repeats: int = 8, toy: bool = False) -> dict[str, float]:
    """GB/s of each copy kind (``COPY_KINDS``) per process and summed over ``procs`` processes copying at once (each
    to GPU rank % count): whether a node's ranks share its pageable staging memcpy or each get their own."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=_copy_worker, args=(r, n_bytes, repeats, toy, barrier, queue)) for r in range(procs)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=600) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    out: dict[str, float] = {}
    for kind in COPY_KINDS:
        rates = [r[kind] for r in results]
        out[f"{kind}_gbs_per_proc"] = round(min(rates), 2)
        out[f"{kind}_gbs_node"] = round(sum(rates), 2)
    return out


def _dispatch_worker(rank: int, procs: int, iters: int, toy: bool, group: bool, port: int, barrier,
                     queue) -> None:  # pragma: no cover - subprocess
    import torch

    cuda = torch.cuda.is_available() and not toy
    dev = f"cuda:{rank % torch.cuda.device_count()}" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(dev)
    torch.set_num_threads(1)  # torchrun's OMP_NUM_THREADS=1: the rank's own thread dispatches
    if group:
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=procs)
        t = torch.ones(1, device=dev)
        dist.all_reduce(t)  # the transport's threads are up, as in a training step's ranks
    x = torch.randn(64, 64, device=dev, requires_grad=True)
    w = torch.randn(64, 64, device=dev)
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)

    def step() -> None:  # a small layer's worth of autograd: a few kernels forward, their backward
        loss = (torch.tanh(x * w) + x).sum()
        loss.backward()

    for _ in range(max(iters // 10, 5)):
        step()
    sync()
    barrier.wait()
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    sync()
    queue.put((rank, (time.perf_counter() - t0) / iters * 1e6))
    barrier.wait()
    if group:
        dist.destroy_process_group()


def concurrent_dispatch_us(procs: int, iters: int = 2000, toy: bool = False, group: bool = False) -> dict:
    """Microseconds per small autograd step (a multiply, tanh, add and sum forward, their backward) of each of ``procs``
    processes dispatching at once, each on GPU rank % count (one OpenMP thread each), with a process group made first
    when ``group``: whether a node's ranks slow each other's host-bound dispatch, and whether the collectives' threads
    are what does it."""
    import multiprocessing as mp
    import socket

    with socket.socket() as s:  # a free port for the group's rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=_dispatch_worker, args=(r, procs, iters, toy, group and procs > 1, port, barrier, queue))
               for r in range(procs)]
    for w in workers:
        w.start()
    per = dict(queue.get(timeout=600) for _ in workers)
    for w in workers:
        w.join(timeout=60)
    us = [round(per[r], 2) for r in sorted(per)]
    return {"us_per_step_per_proc": us, "us_per_step_max": max(us), "us_per_step_mean": round(sum(us) / len(us), 2)}


def process_counts(text: str) -> tuple[int, ...]:
    """A comma-separated list of process counts ("1,2,4"; "" for none), each a positive integer: argparse's type for
    --procs, --copy-procs and --dispatch-procs, so a bad value stops the probe before it measures anything."""
    try:
        counts = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        counts = ()
    if text.strip() and (not counts or min(counts) < 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of process counts (e.g. 1,2,4)")
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m probes.host_contention", description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--procs", type=process_counts, default="1,2,4,8")
    ap.add_argument("--params", type=int, default=100_000_000, help="parameters each CPU Adam process steps")
    ap.add_argument("--copy-bytes", type=int, default=2**30)
    ap.add_argument("--copy-procs", type=process_counts, default="", help="also time copies from 1,2,... processes at once (e.g. 1,2,4,8)")
    ap.add_argument("--copies-only", action="store_true", help="skip CPU Adam")
    ap.add_argument("--dispatch-procs", type=process_counts, default="", help="also time host-bound dispatch from 1,2,... processes at once, "
                                                          "without and with a process group (e.g. 1,2,4,8)")
    ap.add_argument("--toy", action="store_true")
    ap.add_argument("--allow-build", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def log(rec: dict) -> None:
        with (out / "host_contention.jsonl").open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)

    cores = usable_cores()
    log({"kind": "host", "cores": cores, "default_threads": default_threads()})
    copy_bytes = 2**16 if args.toy else args.copy_bytes
    log({"kind": "copies", "bytes": copy_bytes, **copy_rates_gbs(copy_bytes, toy=args.toy)})
    each_bytes = copy_bytes // 4  # several processes' copies at once: a quarter each
    for p in args.copy_procs:
        log({"kind": "concurrent_copies", "processes": p, "bytes": each_bytes,
             **concurrent_copy_rates_gbs(p, each_bytes, toy=args.toy)})
    for p in args.dispatch_procs:
        for group in ((False, True) if p > 1 else (False,)):
            log({"kind": "dispatch", "processes": p, "group": group,
                 **concurrent_dispatch_us(p, iters=200 if args.toy else 2000, toy=args.toy, group=group)})
    if args.copies_only:
        return 0
    params = 100_000 if args.toy else args.params
    for p in args.procs:
        for t in thread_counts(cores, p):
            t0 = time.perf_counter()
            pt = cpu_adam_concurrent(p, params, t, args.allow_build)
            log({"kind": "cpu_adam", **pt.model_dump(), "cores": cores, "wall_s": round(time.perf_counter() - t0, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
