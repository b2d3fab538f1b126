"""Collective bus bandwidth against message size, in nccl-tests conventions.

``size_bytes`` is the whole buffer (all-reduce's buffer, all-gather's output, reduce-scatter's
input); algbw = size / time; busbw = algbw x 2(n-1)/n for all-reduce and x (n-1)/n for all-gather
and reduce-scatter, so busbw compares with one link's bandwidth whatever n is (0 when n = 1).

Run inside an initialised process group with :func:`measure_collectives`, or on its own with
``torchrun --nproc_per_node N -m probes.collectives --out FILE`` (rank 0 writes JSON lines).
NVLink multicast (NVLS) stays off: on shared hosts it can take every GPU out of service.
"""

from __future__ import annotations

import argparse
import os
import socket
import warnings
from typing import Any

from knowledge.schema import CollectivePoint
from probes.timing import time_fn

# Forced, not defaulted: a user's NCCL_NVLS_ENABLE=1 must not switch multicast on here.
MULTICAST_OFF: dict[str, str] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
OPS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter")
FULL_SIZES: tuple[int, ...] = tuple(2**20 * 4**i for i in range(6))  # 1 MiB .. 1 GiB
QUICK_SIZES: tuple[int, ...] = (2**22, 2**26, 2**28)  # 4 MiB, 64 MiB, 256 MiB
TOY_SIZES: tuple[int, ...] = (2**12, 2**16)  # 4 KiB, 64 KiB


def multicast_off() -> None:
    """Set the variables that keep NVLink multicast off; NCCL reads them when a communicator starts."""
    os.environ.update(MULTICAST_OFF)


def bus_factor(op: str, ranks: int) -> float:
    """busbw / algbw for ``op`` on ``ranks`` ranks (nccl-tests)."""
    if op == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if op in ("all_gather", "reduce_scatter"):
        return (ranks - 1) / ranks
    raise ValueError(f"unknown collective {op!r}; valid: {', '.join(OPS)}")


def measure_collectives(
    sizes: tuple[int, ...] | list[int] = QUICK_SIZES,
    ops: tuple[str, ...] = OPS,
    *,
    repeats: int = 10,
    warmup: int = 3,
    group: Any = None,
) -> list[CollectivePoint]:
    """Time each op at each size on the current process group; every rank gets the same points.

    The time of a point is the slowest rank's median, as a collective finishes with its last rank.
    Buffers are bf16 on NCCL (what gradients travel as) and fp32 on gloo.
    """
    import torch
    import torch.distributed as dist

    multicast_off()
    n = dist.get_world_size(group)
    cuda = dist.get_backend(group) == "nccl"
    device = f"cuda:{torch.cuda.current_device()}" if cuda else "cpu"
    dt = torch.bfloat16 if cuda else torch.float32
    elt = torch.finfo(dt).bits // 8
    points = []
    for op in ops:
        factor = bus_factor(op, n)
        for size in sizes:
            numel = max(n, size // elt // n * n)  # every rank's shard must be whole
            big = torch.randn(numel, device=device, dtype=dt)
            small = torch.randn(numel // n, device=device, dtype=dt)
            if op == "all_reduce":

                def fn() -> None:
                    dist.all_reduce(big, group=group)

            elif op == "all_gather":

                def fn() -> None:
                    dist.all_gather_into_tensor(big, small, group=group)

            else:

                def fn() -> None:
                    dist.reduce_scatter_tensor(small, big, group=group)

            with warnings.catch_warnings():
                # torch >= 2.13 renames the *_tensor collectives; older torch lacks the new names.
                warnings.simplefilter("ignore", FutureWarning)
                dist.barrier(group=group)
                t = time_fn(fn, device, warmup=warmup, repeats=repeats)
            slowest = torch.tensor([t], device=device, dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=group)
            t = float(slowest.item())
            nbytes = numel * elt
            points.append(
                CollectivePoint(op=op, ranks=n, size_bytes=nbytes, time_s=t, busbw_gbs=nbytes / t / 1e9 * factor)
            )
            del big, small
    return points


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str] | None = None) -> int:
    """Entry under torchrun (or alone, as one rank): measure, and rank 0 writes FILE as JSON lines."""
    ap = argparse.ArgumentParser(prog="python -m probes.collectives", description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON-lines file of CollectivePoint (rank 0 writes it)")
    ap.add_argument("--quick", action="store_true", help="3 sizes, 4 MiB to 256 MiB")
    ap.add_argument("--toy", action="store_true", help="4 KiB and 64 KiB (CPU tests)")
    ap.add_argument("--sizes", help="comma-separated message sizes in bytes (overrides the above)")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    else:
        sizes = TOY_SIZES if args.toy else QUICK_SIZES if args.quick else FULL_SIZES

    multicast_off()
    import torch
    import torch.distributed as dist

    from knowledge.store import atomic_write_text

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")  # alone, without torchrun
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    kwargs: dict[str, Any] = {}
    if torch.cuda.is_available() and not args.toy:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        backend = "nccl"
        kwargs["device_id"] = torch.device("cuda", local)  # binds the communicator to this GPU now
    else:
        backend = "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world, **kwargs)
    try:
        points = measure_collectives(sizes, repeats=args.repeats)
        if rank == 0:
            atomic_write_text(args.out, "".join(p.model_dump_json() + "\n" for p in points))
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
