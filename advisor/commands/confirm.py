"""`advisor confirm`: run the top pick for real on the local GPUs, compare, keep the row, refit."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Optional

import typer

from advisor.output import check_writable, console, err_console, fail, fail_input, print_hanging, warn



def default_out() -> Path:
    """ADVISOR_HOME/measurements/confirm.jsonl: the user's rows, read after the bundled ones."""
    from knowledge.paths import user_measurements_dir

    return user_measurements_dir() / "confirm.jsonl"


def refit_into_home() -> dict:
    """Refit the correction on every row (bundled + ADVISOR_HOME) into ADVISOR_HOME/calibration/fitted.json.

    The first refit starts from a copy of the bundled fit, so its held-out figures carry over; the
    package's own fitted.json is never written.
    """
    from advisor.calibrate import fast_refit
    from knowledge.paths import BUNDLED_CALIBRATION, user_calibration_path
    from knowledge.store import atomic_write_bytes

    target = user_calibration_path()
    if not target.exists() and BUNDLED_CALIBRATION.exists():
        atomic_write_bytes(target, BUNDLED_CALIBRATION.read_bytes())
    return fast_refit(out=target)  # seconds: the new row's machine learns its factors; `calibrate --full` refits all


def _pick_case(hardware: str, task: str, model: str, seq_len: int, global_batch: Optional[int], gpus: Optional[int],
               case_json: Optional[str], nodes: int = 1, network: Optional[str] = None) -> dict:
    """The case to run: given with --case, or the top recommendation for the job."""
    from advisor.commands.recommend import _model_arg
    from advisor.search import SearchSpec, run_search
    from knowledge.efficiency import load_efficiencies

    if case_json:
        from advisor.cases import MalformedFile, case_from_arg

        try:
            given = case_from_arg(case_json)
        except MalformedFile as e:
            fail(f"--case: {e}", code=2)
        if nodes > 1 and given.nodes not in (1, nodes):
            fail(f"--case has nodes={given.nodes}, the --hostfile lists {nodes} hosts")
        return given.model_dump() | ({"nodes": nodes, "gpus": getattr(given, "gpus", None), "network": network or given.network}
                                     if nodes > 1 else {})
    if task not in ("pretrain", "finetune"):
        fail(f"--task {task!r}: confirm runs training jobs (pretrain, finetune); for serving, `advisor recommend --task "
             "serve` prints the engine's launch line", code=2)  # a bad choice of option: 2, as deepspeed-config says it
    from advisor.cases import context_length
    from knowledge.catalog import resolve_model

    arch_model = _model_arg(model)
    ctx = context_length(resolve_model(arch_model))
    if ctx is not None and seq_len > ctx:
        fail(f"--seq-len {seq_len} exceeds the {ctx}-token context of {model}")
    spec = SearchSpec(hardware=hardware, model=arch_model, task=task, gpus=gpus, seq_len=seq_len, global_batch=global_batch,
                      nodes=nodes, network=network)
    ranked, _, _ = run_search(spec, load_efficiencies())
    if not ranked:
        fail(f"nothing fits {model} {task} on {hardware}; see `advisor recommend` for what would")
    case = ranked[0].case.model_dump()
    from knowledge.catalog import resolve_platform

    case["id"] = f"confirm-{resolve_platform(hardware).id}-{task}-{case['method']}-z{case['zero_stage']}-mb{case['micro_batch_size']}-{int(time.time())}"
    return case


def _read_hostfile(path: Path) -> dict[str, int]:
    """{host: slots} of a DeepSpeed hostfile; every host must offer the same slots (one job, even ranks)."""
    from advisor.multinode import parse_hostfile
    from knowledge.errors import AdvisorError
    from knowledge.store import InputFileError, read_bounded_text

    try:
        hosts = parse_hostfile(read_bounded_text(path, 1 << 20, "--hostfile"), f"--hostfile {str(path)!r}")
    except (InputFileError, AdvisorError) as e:
        fail(str(e), code=2)
    if len(set(hosts.values())) > 1:
        fail(f"--hostfile {str(path)!r}: hosts offer different slots ({', '.join(f'{h}={n}' for h, n in hosts.items())}); "
             "a job spreads its ranks evenly")
    return hosts


def confirm(
    task: str = typer.Option("finetune", "--task", "-t", help="pretrain or finetune."),
    model: str = typer.Option("7b", "--model", "-m", help="Catalog name, config.json / HF model directory (architecture only), or inline JSON."),
    hardware: str = typer.Option("auto", "--hardware", "-H", help="Platform id; 'auto' = the local GPUs."),
    seq_len: int = typer.Option(2048, "--seq-len", min=1, max=1 << 20, help="Tokens per training sequence (at most the model's context)."),
    global_batch: Optional[int] = typer.Option(None, "--global-batch", min=1, max=1 << 20, help="Sequences per optimizer step over all GPUs (sets gradient accumulation)."),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, max=1024, help="GPUs to use (default: all local)."),
    host_ram_gib: Optional[float] = typer.Option(None, "--host-ram-gib", min=1.0, max=float(1 << 20), help="Host RAM, GiB (overrides the platform's)."),
    cpu_cores: Optional[int] = typer.Option(None, "--cpu-cores", min=1, max=1 << 16, help="CPU cores (overrides the platform's)."),
    case: Optional[str] = typer.Option(None, "--case", help="Run this contract case (inline JSON or file) instead of the top pick."),
    hostfile: Optional[Path] = typer.Option(None, "--hostfile", help="A DeepSpeed hostfile ('<host> slots=<GPUs>' lines): run on every host through DeepSpeed's launcher (pdsh over ssh from the first host; the same repository path on each)."),
    network: Optional[str] = typer.Option(None, "--network", help="With --hostfile: the fabric between the hosts, NAME[:NICs] (default: what such a server usually has)."),
    device: str = typer.Option("cuda", "--device", help="cuda, or cpu: a toy-size run on the CPU (tests)."),
    steps: int = typer.Option(8, "--steps", min=1, max=10_000, help="Timed optimizer steps."),
    warmup: int = typer.Option(3, "--warmup", min=0, max=10_000, help="Untimed steps first."),
    timeout_s: float = typer.Option(900.0, "--timeout-s", min=10, max=7 * 86400, help="Kill the run after this long (at most a week); recorded as a timeout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Measurements file the row is appended to (default: ADVISOR_HOME/measurements/confirm.jsonl)."),
    refit: bool = typer.Option(True, "--refit/--no-refit", help="Refit the correction with the new row."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what it would run, for how long and what it compares; run nothing (works without a GPU)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output (with --dry-run: the plan: case, command, prediction)."),
) -> None:
    """Run the top pick end to end (random-init weights), report measured vs predicted, store the row."""
    from advisor.predictor import Predictor
    from advisor.cases import check_plausible, parse_case
    from knowledge.errors import AdvisorError
    from probes.campaign import case_command, detect_hardware, gpu_inventory, run_one

    if device not in ("cuda", "cpu"):
        fail(f"--device {device!r}: use cuda or cpu", code=2)
    hosts: dict[str, int] = {}
    if hostfile is not None:
        hosts = _read_hostfile(hostfile)
    nodes = len(hosts) or 1
    per_node = min(hosts.values()) if hosts else None
    if network and nodes == 1:
        fail("--network describes the network between nodes: give a --hostfile of 2 or more hosts")
    name, local = gpu_inventory()
    if hardware == "auto":
        detected = detect_hardware(name, local)
        if detected is None and dry_run:  # a plan needs no GPU: show the one for the machine the package knows best
            detected = DRY_RUN_EXAMPLE
            warn(f"no local GPU recognised: planning for {DRY_RUN_EXAMPLE} (pass --hardware ID for your machine)")
        if detected is None:
            fail("no local GPU recognised (nvidia-smi found none or an unknown one); pass --hardware and run where the GPUs are")
        hardware = detected
    if out is not None:
        check_writable(out, "--out")
    try:
        from knowledge.catalog import with_host

        hardware = with_host(hardware, host_ram_gib, cpu_cores)
        if hosts and gpus is None:
            gpus = nodes * per_node
        picked = _pick_case(hardware, task, model, seq_len, global_batch, gpus, case, nodes, network)
        parsed = parse_case(picked)
        check_plausible(parsed)
        pred = Predictor().predict(parsed)
    except AdvisorError as e:
        fail_input(e)
    n = int(picked.get("gpus") or 1)
    if out is None:
        from knowledge.paths import user_measurements_dir

        out = default_out() if not dry_run else user_measurements_dir(create=False) / "confirm.jsonl"
    from knowledge.catalog import resolve_platform

    args = argparse.Namespace(steps=steps, warmup=warmup, dataset=f"own-{resolve_platform(hardware).id}", grid="confirm",
                              device="cpu" if device == "cpu" else None, hostfile=hostfile, hosts=list(hosts))
    cmd = case_command(picked, out, args)
    if dry_run:
        plan = {"case": picked, "command": cmd, "predicted": json.loads(pred.model_dump_json()), "row_file": str(out),
                "steps": steps, "warmup": warmup, "timeout_s": timeout_s, "refit": refit,
                "hostfile": str(hostfile) if hostfile else None, "network": network}
        if as_json:
            print(json.dumps(plan, indent=2, default=str))
        else:
            _print_plan(plan, resolve_platform(hardware), parsed)
        return
    need = n // nodes  # on this machine: the first host of a hostfile runs its share
    if device != "cpu" and local < need:
        fail(f"the pick needs {need} GPUs{' per node' if nodes > 1 else ''}, this machine has {local}{' (' + name + ')' if name else ''}")
    from advisor.progress import timed_run

    row, took = timed_run(lambda: run_one(picked, out, out.with_suffix(".log"), timeout_s, args),
                          f"running {picked['id']} on {n} GPU(s)", timeout_s, disable=as_json)
    result = {"row": row, "took": took}
    row = row or {}
    meas = row.get("measured", {})
    report = {
        "case": picked, "seconds": result.get("took"),
        "predicted": {"tokens_per_s": pred.tokens_per_s, "peak_mem_gib": pred.peak_mem_gib, "fits": pred.fits,
                      "host_mem_gib": pred.host_mem_gib},
        "measured": meas, "row_file": str(out),
    }
    if meas.get("tokens_per_s"):
        report["error_tokens_per_s"] = pred.tokens_per_s / meas["tokens_per_s"] - 1
    if meas.get("peak_mem_gib"):
        report["error_peak_mem"] = pred.peak_mem_gib / meas["peak_mem_gib"] - 1
    if refit and meas.get("tokens_per_s"):
        with err_console.status("refitting the correction"):
            from knowledge.paths import user_calibration_path

            report["refit"] = {k: v for k, v in refit_into_home().items() if k in ("train_mape", "fitted_on")}
            report["refit_file"] = str(user_calibration_path())
    if as_json:
        print(json.dumps(report, indent=2, default=str))
        return
    if meas.get("oom"):
        console.print(f"[red]out of memory[/] (predicted fits={pred.fits}, {pred.peak_mem_gib:.1f} GiB)")
    elif meas.get("error"):
        warn(f"run failed: {meas['error']}")
    else:
        console.print(f"tokens/s: measured {meas['tokens_per_s']:,.0f}, predicted {pred.tokens_per_s:,.0f} ({report['error_tokens_per_s']:+.0%})")
        if meas.get("peak_mem_gib"):
            console.print(f"peak GiB/GPU: measured {meas['peak_mem_gib']:.1f}, predicted {pred.peak_mem_gib:.1f} ({report['error_peak_mem']:+.0%})")
        if meas.get("host_peak_gib") is not None and pred.host_mem_gib:
            console.print(f"host RAM GiB: measured {meas['host_peak_gib']:.1f} (rise of the node's used RAM), predicted {pred.host_mem_gib:.1f}")
    console.print(f"row kept in {out}")
    if report.get("refit_file"):
        console.print(f"correction refitted into {report['refit_file']} (the package's own fit is unchanged)")


DRY_RUN_EXAMPLE = "h100x1"  # a bundled, probed machine: the plan shown by --dry-run where no GPU is found


def _print_plan(plan: dict, platform, case) -> None:
    """The dry run in words: what would run, for how long, what it compares, where the row goes."""
    import shlex

    from advisor.explain import describe

    p = plan["predicted"]
    n = int(plan["case"].get("gpus") or 1)
    host = f", host {p['host_mem_gib']:.0f} GiB" if p.get("host_mem_gib") else ""
    if p.get("fits", True):
        predicted = (f"Predicted now: {p['tokens_per_s']:,.0f} tokens/s, {p['peak_mem_gib']:.1f} GiB per GPU of "
                     f"{platform.gpu.memory_gib:.0f}{host}.")
    else:  # a --case that does not fit: no throughput as if it ran
        need = p.get("required_gib") or p["peak_mem_gib"]
        predicted = (f"Predicted now: does not fit: would need {need:,.0f} GiB per GPU of {platform.gpu.memory_gib:.0f} "
                     "(the run would show where it fails).")
    lines = [
        "Dry run: nothing runs.",
        f"It would run on {platform.id} ({n}× {platform.gpu.name}): {case.model if isinstance(case.model, str) else 'the model'} "
        f"{case.task}, seq {case.seq_len}:",
        f"  {describe(case)}",
        f"  {plan['warmup']} warm-up + {plan['steps']} timed optimizer steps, random-init weights, "
        f"{'DeepSpeed' if case.engine == 'deepspeed' else 'plain PyTorch'}; stopped after {plan['timeout_s']:.0f} s at most",
        predicted,
        "It compares the measured tokens/s, peak GPU memory (torch.cuda.max_memory_allocated) and the node's host RAM "
        f"with these predictions and appends the row to {plan['row_file']}"
        + (", then refits the platform factors (advisor calibrate)." if plan["refit"] else "."),
        "Run it where the GPUs are:",
    ]
    for line in lines:
        print_hanging(line)
    across = "".join(f" --{k} {shlex.quote(plan[k])}" for k in ("hostfile", "network") if plan.get(k))  # every node's run
    console.print(f"  advisor confirm --hardware {platform.id} --task {case.task} --model "
                  f"{shlex.quote(case.model) if isinstance(case.model, str) else 'MODEL'} --seq-len {case.seq_len}{across}",
                  highlight=False, markup=False, soft_wrap=True)
    print_hanging("(--json prints the plan for machines: the case, the exact command, the prediction.)")


def register(app: typer.Typer) -> None:
    app.command("confirm")(confirm)
