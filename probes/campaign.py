"""Run a grid of cases, each in its own process, within a time budget: ``python -m probes.campaign``.

    python -m probes.campaign --grid h100 --out OUTDIR [--budget-s 500] [--timeout-s 90] [--dry-run]

Each case runs as ``python -m probes.run_case`` (``torchrun --nproc_per_node G`` for gpus > 1) with a wall
limit, so an OOM, a crash or a hang loses only that case, and still leaves a row (with ``error``) in
OUTDIR/measurements.jsonl. Every case's output goes to OUTDIR/campaign.log. No case is launched unless it
could finish inside the budget: the campaign ends before ``--budget-s`` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from knowledge.schema import Measured, Measurement
from probes.grids import grid
from probes.run_case import META_KEYS, environment
from probes.train_step import sanitize_arch_list

REPO = Path(__file__).resolve().parent.parent
# NVLink multicast can take shared GPUs out of service; keep it off in every child (see the device notes)
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def child_env() -> dict[str, str]:
    env = {**os.environ, **SAFE_ENV, "PYTHONUNBUFFERED": "1"}
    sanitize_arch_list(env)
    return env


def gpu_inventory() -> tuple[str | None, int]:
    """(first GPU's name, GPU count) from nvidia-smi, without touching CUDA in this process."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None, 0
    names = [n.strip() for n in out.splitlines() if n.strip()]
    return (names[0] if names else None), len(names)


def detect_hardware(name: str | None, count: int) -> str | None:
    """The catalog platform id of this machine (``h100x1``), or None when unknown."""
    if not name or count < 1:
        return None
    from knowledge.catalog import match_gpu

    gpu = match_gpu(name)
    return f"{gpu.id}x{count}" if gpu else None


def names_own_platform(hardware: object) -> bool:
    """A platform file or object in a grid says what nvidia-smi cannot (the box run with NCCL_P2P_DISABLE=1, say):
    'auto' keeps it rather than the catalog id of the GPUs it finds."""
    return isinstance(hardware, dict) or str(hardware).endswith(".json")


LOCAL_HOSTS = ("localhost", "127.0.0.1")


def deepspeed_launcher() -> list[str]:
    """DeepSpeed's `deepspeed` launcher of this interpreter's environment (the script beside python, else PATH)."""
    import shutil

    beside = Path(sys.executable).with_name("deepspeed")
    found = str(beside) if beside.exists() else shutil.which("deepspeed")
    return [found] if found else [sys.executable, "-c", "from deepspeed.launcher.runner import main; main()"]


def hostfile_launch(hostfile: Path, hosts: list[str], nodes: int, per_node: int) -> list[str]:
    """``deepspeed --hostfile`` on ``nodes`` hosts of the file, ``per_node`` ranks each. With local hosts only: no
    ssh check and the master on this machine, so DeepSpeed's launcher runs the ranks here itself (it reaches
    other hosts through pdsh over ssh, and learns the master's address from the first host)."""
    cmd = deepspeed_launcher() + ["--hostfile", str(hostfile), "--num_nodes", str(nodes), "--num_gpus", str(per_node)]
    if all(h in LOCAL_HOSTS for h in hosts[:nodes]):
        cmd += ["--no_ssh_check", "--master_addr", "127.0.0.1"]
    return cmd + ["--no_local_rank", "--module"]


def case_gpus(case: dict[str, Any]) -> int:
    """The processes a case is launched as: its ``gpus`` for training, one for serving."""
    return int(case.get("gpus") or 1) if case.get("task") != "serve" else 1


def case_command(case: dict[str, Any], out_file: Path, args: argparse.Namespace) -> list[str]:
    gpus = case_gpus(case)
    cmd = [sys.executable, "-m"]
    if getattr(args, "hostfile", None):
        nodes = int(case.get("nodes") or 1)
        cmd = hostfile_launch(args.hostfile, args.hosts, nodes, max(gpus // nodes, 1))
    elif gpus > 1:
        cmd += ["torch.distributed.run", "--standalone", f"--nproc_per_node={gpus}", "-m"]
    clean = {k: v for k, v in case.items() if k not in META_KEYS}
    cmd += ["probes.run_case", "--case", json.dumps(clean), "--out", str(out_file),
            "--steps", str(case.get("_steps", args.steps)), "--warmup", str(case.get("_warmup", args.warmup)),
            "--dataset", args.dataset, "--source", f"probes.campaign --grid {args.grid}"]
    if args.device:
        cmd += ["--device", args.device]
    return cmd


def rows_since(path: Path, offset: int) -> list[dict]:
    if not path.exists():
        return []
    with open(path) as f:
        f.seek(offset)
        return [json.loads(line) for line in f if line.strip()]


def _last_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln or "Killed" in ln:
            return ln[:300]
    return lines[-1][:300] if lines else "no output"


def run_omp_threads(case: dict[str, Any], env: dict[str, str], args: argparse.Namespace) -> int | None:
    """The OpenMP threads each rank of ``case`` runs with, so that its row records them: the case's own, else the
    environment's, else torchrun's default of one a process when it starts several (a case without the field is
    predicted at the launch line's cores / ranks: a two-GPU ZeRO-Offload row stored without it on 2026-11-28 ran 2.5x
    slower than its prediction for that reason alone); None for one process, which takes every core, and for a
    serving case, whose contract has no such field."""
    if case.get("task") == "serve":
        return None
    if case.get("omp_threads"):
        return int(case["omp_threads"])
    if env.get("OMP_NUM_THREADS", "").isdigit():
        return int(env["OMP_NUM_THREADS"])
    return 1 if case_gpus(case) > 1 and not getattr(args, "hostfile", None) else None


def run_one(case: dict[str, Any], out_file: Path, log_file: Path, timeout: float, args: argparse.Namespace
            ) -> tuple[dict | None, float]:
    """Run one case in a fresh process group; returns (its Measurement row or None, seconds taken)."""
    offset = out_file.stat().st_size if out_file.exists() else 0
    t0 = time.monotonic()
    tmp_log = log_file.with_suffix(".current")
    with open(tmp_log, "w") as logf:
        # start_new_session: the case and its torchrun workers form one group we can kill on a timeout
        env = child_env()
        threads = run_omp_threads(case, env, args)
        if threads:  # the threads the case's ranks run with (torch and DeepSpeed's CPU Adam read it), in its row too
            case = {**case, "omp_threads": threads}
            env["OMP_NUM_THREADS"] = str(threads)
        proc = subprocess.Popen(case_command(case, out_file, args), stdout=logf, stderr=subprocess.STDOUT,
                                cwd=REPO, env=env, start_new_session=True)
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
            _kill_group(proc)
    took = time.monotonic() - t0
    text = tmp_log.read_text(errors="replace")
    with open(log_file, "a") as f:
        f.write(f"===== {case['id']} (rc={rc}, {took:.1f} s)\n{text}\n")
    tmp_log.unlink(missing_ok=True)
    mine = [r for r in rows_since(out_file, offset) if r.get("case", {}).get("id") == case["id"]]
    if mine:
        return mine[-1], took
    failure = failure_kind(rc, text)
    error = f"timeout after {timeout:.0f} s" if rc is None else f"{failure} (exit code {rc}): {_last_error_line(text)}"
    return _append_error(case, out_file, error, args, failure), took


def failure_kind(rc: int | None, log: str) -> str:
    """Why a case process ended without writing its row: timeout, host_oom (a SIGKILL: the kernel's OOM
    killer, also when torchrun reports a worker's exitcode -9) or crash."""
    if rc is None:
        return "timeout"
    killed = rc in (-9, 137) or "exitcode  : -9" in log or "Signals.SIGKILL" in log or "signal 9" in log.lower()
    return "host_oom" if killed or "Killed" in log.splitlines()[-1:] else "crash"


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _append_error(case: dict[str, Any], out_file: Path, error: str, args: argparse.Namespace,
                  failure: str = "crash") -> dict:
    from knowledge.store import append_jsonl

    row = Measurement(dataset=args.dataset, source=f"probes.campaign --grid {args.grid}",
                      case={k: v for k, v in case.items() if k not in META_KEYS},
                      measured=Measured(error=error, failure=failure),
                      environment=environment(" ".join(case_command(case, out_file, args)[1:]), light=True))
    append_jsonl(out_file, [row])
    return json.loads(row.model_dump_json())


def describe(row: dict | None) -> str:
    """One short result: tokens/s and GiB, serving times, OOM, or the error."""
    if row is None:
        return "skipped"
    m = row["measured"]
    gib = f"{m['peak_mem_gib']:.1f} GiB" if m.get("peak_mem_gib") is not None else "- GiB"
    if m.get("oom"):
        return f"OOM (peak {gib})"
    if m.get("error"):
        return f"ERROR {m['error'][:110]}"
    if m.get("tokens_per_s") is not None:
        host = f"  host +{m['host_peak_gib']:.1f} GiB" if m.get("host_peak_gib") is not None else ""
        return f"{m['tokens_per_s']:>10,.0f} tok/s  step {m['step_time_s']:.3f} s  {gib}{host}"
    parts = [f"prefill {m['prefill_s'] * 1e3:.1f} ms", f"decode {m['decode_step_s'] * 1e3:.2f} ms"]
    if m.get("e2e_output_tokens_per_s"):
        parts.append(f"e2e {m['e2e_output_tokens_per_s']:,.0f} tok/s")
    return "  ".join(parts + [gib])


def prebuild_ops(cases: list[dict[str, Any]], timeout: float, log_file: Path) -> float:
    """JIT-build the DeepSpeed optimizer extensions once, before any case's clock starts (seconds taken)."""
    needed = set()
    for c in cases:
        if c.get("engine", "deepspeed") == "deepspeed" and c.get("task") != "serve":
            needed.add("CPUAdamBuilder" if c.get("offload", "none") != "none" else "FusedAdamBuilder")
    if not needed:
        return 0.0
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", f"from deepspeed.ops.op_builder import {b}; {b}().load()"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                              env=child_env(), start_new_session=True) for b in sorted(needed)]
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1.0, timeout - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            _kill_group(p)
            out = "timeout"
        with open(log_file, "a") as f:
            f.write(f"===== prebuild (rc={p.returncode})\n{out}\n")
    took = time.monotonic() - t0
    print(f"prebuilt DeepSpeed ops {', '.join(sorted(needed))} in {took:.0f} s", flush=True)
    return took


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m probes.campaign", description=__doc__.splitlines()[0])
    ap.add_argument("--grid", required=True, help="grid name in probes.grids (h100, h200x2, toy-cpu)")
    ap.add_argument("--out", required=True, help="folder for measurements.jsonl and campaign.log")
    ap.add_argument("--budget-s", type=float, default=500.0, help="launch nothing that could end after this")
    ap.add_argument("--timeout-s", type=float, default=90.0, help="per-case wall limit unless the case sets one")
    ap.add_argument("--steps", type=int, default=5, help="timed training steps per case")
    ap.add_argument("--warmup", type=int, default=2, help="untimed training steps per case")
    ap.add_argument("--hardware", default="auto",
                    help="'auto' (this machine, from nvidia-smi), 'grid' (as written), or a platform id")
    ap.add_argument("--dataset", default="own", help="Measurement.dataset of the rows")
    ap.add_argument("--device", default=None, help="force cuda or cpu in every case")
    ap.add_argument("--only", default=None, help="comma-separated substrings; run only ids containing one")
    ap.add_argument("--exclude", default=None, help="comma-separated substrings; skip ids containing one")
    ap.add_argument("--skip-done", default=None, help="a measurements.jsonl whose measured ids are skipped")
    ap.add_argument("--no-prebuild", action="store_true", help="do not pre-compile DeepSpeed ops")
    ap.add_argument("--dry-run", action="store_true", help="print the cases and commands, run nothing")
    return ap.parse_args(argv)


def select(args: argparse.Namespace) -> list[dict[str, Any]]:
    cases = grid(args.grid)
    if args.only:
        keys = [k for k in args.only.split(",") if k]
        cases = [c for c in cases if any(k in c["id"] for k in keys)]
    if args.exclude:
        keys = [k for k in args.exclude.split(",") if k]
        cases = [c for c in cases if not any(k in c["id"] for k in keys)]
    if args.skip_done and Path(args.skip_done).exists():
        done = {r["case"].get("id") for r in rows_since(Path(args.skip_done), 0)
                if not r["measured"].get("error") or r["measured"].get("oom")}
        cases = [c for c in cases if c["id"] not in done]
    return cases


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cases = select(args)
    name, count = gpu_inventory()
    hw = {"auto": detect_hardware(name, count), "grid": None}.get(args.hardware, args.hardware)
    for c in cases:
        if hw and not (args.hardware == "auto" and names_own_platform(c["hardware"])):
            c["hardware"] = hw
    out = Path(args.out)
    out_file, log_file = out / "measurements.jsonl", out / "campaign.log"
    print(f"grid {args.grid}: {len(cases)} cases on {name or 'no GPU'} x{count} (hardware {hw or 'as in grid'}), "
          f"budget {args.budget_s:.0f} s", flush=True)
    if args.dry_run:
        for c in cases:
            print(f"{c['id']}: {' '.join(case_command(c, out_file, args)[1:])}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    if count and not args.no_prebuild:
        prebuild_ops(cases, min(300.0, args.budget_s / 2), log_file)
    results: list[tuple[str, dict | None, float]] = []
    skipped: list[str] = []
    for c in cases:
        timeout = float(c.get("_timeout_s", args.timeout_s))
        gpus = int(c.get("gpus") or 1)
        if time.monotonic() - start + timeout > args.budget_s:
            skipped.append(c["id"])
            continue
        if count and gpus > count:
            row, took = _append_error(c, out_file, f"needs {gpus} GPUs, this machine has {count}", args), 0.0
        else:
            row, took = run_one(c, out_file, log_file, timeout, args)
        results.append((c["id"], row, took))
        print(f"{c['id']:<44} {describe(row)}  [{took:.0f} s]", flush=True)
    _summary(results, skipped, time.monotonic() - start)
    return 0


def _summary(results: list[tuple[str, dict | None, float]], skipped: list[str], total: float) -> None:
    print(f"\n{'case':<44} result")
    print("-" * 100)
    for cid, row, took in results:
        print(f"{cid:<44} {describe(row)}")
    ok = sum(1 for _, r, _ in results if r and not r["measured"].get("error"))
    oom = sum(1 for _, r, _ in results if r and r["measured"].get("oom"))
    print(f"{len(results)} run ({ok} measured, {oom} OOM, {len(results) - ok - oom} failed) in {total:.0f} s; "
          f"{len(skipped)} skipped for the budget" + (f": {', '.join(skipped)}" if skipped else ""))


if __name__ == "__main__":
    sys.exit(main())
