"""How the box is wired, measured: what ``models.host_links`` assumes from the catalog.

- the peer-to-peer matrix (``torch.cuda.can_device_access_peer``);
- all-reduce, all-gather and reduce-scatter bus bandwidth by message size, with peer-to-peer on and off
  (``NCCL_P2P_DISABLE=1`` in a child ``torchrun``: NCCL then stages every hop in host memory, as on a
  GeForce 40-series box);
- pinned host<->device copies from every GPU at once (they share switch uplinks, root complexes, DRAM);
- DeepSpeed CPU Adam run by N processes at once (each rank of a node steps its own shard on one host).

``python -m probes.links --out DIR [--toy]`` writes DIR/links.json (a ``LinksProbe``) and one JSON line per
measurement to DIR/links.jsonl. ``--toy`` runs every path on the CPU at toy size (gloo, host copies, the
torch AdamW fallback) so tests cover it without a GPU.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from knowledge.schema import CpuAdamPoint, LinkCollectivePoint, LinksProbe
from models.step_time import launch_omp_threads
from probes.host import usable_cores

LINK_SIZES: tuple[int, ...] = (2**20, 2**23, 2**26, 2**28)  # 1 MiB .. 256 MiB
TOY_SIZES: tuple[int, ...] = (2**12, 2**16)


def p2p_matrix() -> list[list[bool]]:
    """can_device_access_peer(i, j) for every pair of visible GPUs (True on the diagonal); [] on CPU."""
    import torch

    if not torch.cuda.is_available():
        return []
    n = torch.cuda.device_count()
    return [[i == j or bool(torch.cuda.can_device_access_peer(i, j)) for j in range(n)] for i in range(n)]


def collectives(p2p: bool, nproc: int, sizes: tuple[int, ...], toy: bool, repeats: int = 5,
                timeout_s: float = 300) -> list[LinkCollectivePoint]:
    """Bus bandwidth by size in a child torchrun of ``nproc`` ranks; ``p2p=False`` sets NCCL_P2P_DISABLE=1."""
    env = dict(os.environ)
    env.pop("NCCL_P2P_DISABLE", None)
    if not p2p:
        env["NCCL_P2P_DISABLE"] = "1"
    env["OMP_NUM_THREADS"] = env.get("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "c.jsonl"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               "-m", "probes.collectives", "--out", str(out), "--sizes", ",".join(map(str, sizes)),
               "--repeats", str(repeats)] + (["--toy"] if toy else [])
        subprocess.run(cmd, env=env, check=True, timeout=timeout_s, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return [LinkCollectivePoint(**json.loads(line), p2p=p2p) for line in out.read_text().splitlines() if line]


def concurrent_copies(n_bytes: int, toy: bool = False, repeats: int = 5) -> tuple[float, float, float]:
    """(one GPU alone H2D, per-GPU H2D with all copying at once, per-GPU D2H all at once), GB/s.

    Every GPU gets its own pinned buffer and stream; the copies are issued back to back and the clock
    stops when the last device finishes (the slowest GPU's share is what an offloading rank sees). On the
    CPU, host-to-host copies stand in so the path runs (toy numbers)."""
    import torch

    cuda = torch.cuda.is_available() and not toy
    devs = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if cuda else ["cpu", "cpu"]
    n = n_bytes // 4
    hosts = [torch.empty(n, pin_memory=cuda).normal_() for _ in devs]
    bufs = [torch.empty(n, device=d) for d in devs]

    def sync() -> None:
        if cuda:
            for i in range(len(devs)):
                torch.cuda.synchronize(i)

    def run(which: list[int], h2d: bool) -> float:
        for _ in range(2):  # warm-up
            for i in which:
                (bufs[i].copy_(hosts[i], non_blocking=True) if h2d else hosts[i].copy_(bufs[i], non_blocking=True))
        sync()
        t0 = time.perf_counter()
        for _ in range(repeats):
            for i in which:
                (bufs[i].copy_(hosts[i], non_blocking=True) if h2d else hosts[i].copy_(bufs[i], non_blocking=True))
        sync()
        return n * 4 * repeats / (time.perf_counter() - t0) / 1e9

    everyone = list(range(len(devs)))
    return run([0], True), run(everyone, True), run(everyone, False)


def _adam_child(n_params: int, threads: int, barrier, queue, allow_build: bool) -> None:  # pragma: no cover - child
    import torch

    torch.set_num_threads(threads)
    from probes.micro import _deepspeed_adam
    from probes.timing import time_fn

    p = torch.nn.Parameter(torch.randn(n_params))
    p.grad = torch.randn(n_params) * 1e-3
    opt = _deepspeed_adam([p], allow_build)
    impl = "deepspeed-cpu-adam"
    if opt is None:
        opt, impl = torch.optim.AdamW([p], lr=1e-4), "torch-adamw"
    opt.step()
    barrier.wait()  # every process steps at once: they contend for the cores and DRAM
    t = time_fn(opt.step, "cpu", warmup=1, repeats=3)
    queue.put((n_params / t / 1e9, impl))


def cpu_adam_concurrent(processes: int, n_params: int, threads: int, allow_build: bool = False,
                        timeout_s: float = 300) -> CpuAdamPoint:
    """CPU Adam in ``processes`` processes at once, ``threads`` threads each: the slowest one's rate."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(processes), ctx.Queue()
    procs = [ctx.Process(target=_adam_child, args=(n_params, threads, barrier, queue, allow_build)) for _ in range(processes)]
    for p in procs:
        p.start()
    rates = [queue.get(timeout=timeout_s) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return CpuAdamPoint(processes=processes, threads=threads, params=n_params, gparams_per_s=min(r for r, _ in rates))


def measure_links(toy: bool = False, procs: tuple[int, ...] = (1, 2), adam_params: int | None = None,
                  copy_bytes: int | None = None, threads: int | None = None, allow_build: bool = False,
                  log=None) -> LinksProbe:
    """Every measurement of this module on this box; ``log(dict)`` gets each as it is taken."""
    import torch

    log = log or (lambda rec: None)
    gpus = 0 if toy or not torch.cuda.is_available() else torch.cuda.device_count()
    matrix = [] if toy else p2p_matrix()
    log({"kind": "p2p_matrix", "matrix": matrix})
    points: list[LinkCollectivePoint] = []
    nproc = 2 if gpus == 0 else gpus
    for p2p in (True, False):
        for pt in collectives(p2p, nproc, TOY_SIZES if toy else LINK_SIZES, toy=gpus == 0):
            log({"kind": "collective", **pt.model_dump()})
            points.append(pt)
    single, h2d, d2h = concurrent_copies(copy_bytes or (2**16 if toy else 2**28), toy=gpus == 0)
    log({"kind": "copies", "single_h2d_gbs": single, "concurrent_h2d_gbs": h2d, "concurrent_d2h_gbs": d2h, "gpus": max(gpus, 2)})
    adam = []
    cores = usable_cores()
    for n in procs:
        # each process with the threads advisor's launch line gives a rank (or ``threads``)
        pt = cpu_adam_concurrent(n, adam_params or (100_000 if toy else 50_000_000), threads or launch_omp_threads(cores, n), allow_build)
        log({"kind": "cpu_adam", **pt.model_dump()})
        adam.append(pt)
    return LinksProbe(gpus=gpus, p2p_matrix=matrix, collectives=points, single_h2d_gbs=single,
                      concurrent_h2d_gbs=h2d, concurrent_d2h_gbs=d2h, cpu_adam=adam)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m probes.links", description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory: links.json (LinksProbe) and links.jsonl")
    ap.add_argument("--toy", action="store_true", help="CPU, toy sizes (tests)")
    ap.add_argument("--procs", default="1,2", help="CPU Adam process counts, e.g. 1,2,8")
    ap.add_argument("--threads", type=int, default=None,
                    help="OpenMP threads of each CPU Adam process (default: the launch line's, cores / processes; torchrun's: 1)")
    ap.add_argument("--adam-params", type=int, default=None)
    ap.add_argument("--allow-build", action="store_true", help="JIT-build DeepSpeed's CPU Adam if needed (~1 min)")
    args = ap.parse_args(argv)
    from knowledge.store import atomic_write_text

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = out / "links.jsonl"

    def log(rec: dict) -> None:
        with lines.open("a") as f:
            f.write(json.dumps(rec) + "\n")

    probe = measure_links(args.toy, tuple(int(x) for x in args.procs.split(",")), args.adam_params,
                          threads=args.threads, allow_build=args.allow_build, log=log)
    atomic_write_text(str(out / "links.json"), probe.model_dump_json(indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
