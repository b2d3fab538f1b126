"""`advisor probe`: measure this machine's ceilings and write them as a profile JSON file.

The profile replaces catalog numbers in the performance model. The file is written atomically; an
existing one is first kept as PATH.bak, and a failed run leaves both untouched.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer

from knowledge.store import atomic_write_bytes

OUT_HELP = ("Profile JSON to write (default: ADVISOR_HOME/profiles/<gpu>x<count>[-quick].json, found later by "
            "`--profile <gpu>x<count>`); an existing file is kept as PATH.bak.")
DEVICE_HELP = "cuda, cuda:N or cpu (default: cuda if available, else cpu at toy size)."


def register(app: typer.Typer) -> None:
    """Add the `probe` command to ``app``."""
    app.command("probe")(probe)


def _fail(msg: str) -> NoReturn:
    typer.echo(f"advisor probe: error: {msg}", err=True)
    raise typer.Exit(1)


def _check_writable(out: Path) -> None:
    """Fail before minutes of probing, not after, when ``out`` cannot be written."""
    if out.is_dir():
        _fail(f"--out {out} is a directory")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.", suffix=".check"):
            pass
    except OSError as e:
        _fail(f"cannot write --out {out}: {e.strerror or e}")


def _keep_backup(out: Path) -> Path | None:
    """Copy an existing ``out`` to ``out.bak`` atomically (the original stays until replaced)."""
    if not out.is_file():
        return None
    bak = out.with_name(out.name + ".bak")
    atomic_write_bytes(bak, out.read_bytes())
    return bak


def default_profile_path(profile: Any) -> Path:
    """ADVISOR_HOME/profiles/<gpu id>x<count>[-quick].json: what `--profile <gpu>x<count>` finds."""
    from knowledge.paths import user_profiles_dir

    quick = "-quick" if profile.quick else ""
    if not profile.gpu_id and (profile.gpu_count < 1 or profile.gpu_name.lower().startswith("cpu")):
        # measured on the CPU (no GPU): named for what it is, never '<gpu>x0' as if it were a GPU machine
        import socket

        host = "".join(ch for ch in socket.gethostname().lower() if ch.isalnum() or ch == "-")[:40] or "local"
        return user_profiles_dir() / f"cpu-{host}{quick}.json"
    gpu = profile.gpu_id or "".join(ch for ch in profile.gpu_name.lower() if ch.isalnum()) or "local"
    return user_profiles_dir() / f"{gpu}x{profile.gpu_count}{quick}.json"


def _resolve_device(device: str | None) -> str:
    import torch

    if device is None:
        if torch.cuda.is_available():
            return "cuda"
        typer.echo("advisor probe: warning: no CUDA GPU visible; CPU numbers are toy-size, not a GPU profile", err=True)
        return "cpu"
    if device != "cpu" and not (device == "cuda" or device.startswith("cuda:")):
        _fail(f"--device {device!r}: use cuda, cuda:N or cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        _fail("--device cuda, but torch sees no CUDA GPU")
    if device == "cpu":
        typer.echo("advisor probe: warning: CPU numbers are toy-size, not a GPU profile", err=True)
    return device


def _macro_case(text: str) -> Any:
    """Parse one --macro case (a contract training case) and resolve its architecture, or fail in one line."""
    from advisor.cases import MalformedFile, case_from_arg
    from knowledge.catalog import resolve_model
    from knowledge.errors import AdvisorError
    from knowledge.schema import TrainCase

    try:
        case = case_from_arg(text)
        if not isinstance(case, TrainCase):
            _fail(f"--macro {case.id!r}: macro probes run training cases")
        return case, resolve_model(case.model)
    except (MalformedFile, AdvisorError) as e:
        _fail(f"--macro: {e}")


def _model_or_fail(model: str) -> None:
    from knowledge.catalog import resolve_model
    from knowledge.errors import AdvisorError

    try:
        resolve_model(model)
    except AdvisorError as e:
        _fail(f"--model: {e}")


def summary_title(profile: Any) -> str:
    """'Profile of 1x NVIDIA H100 80GB HBM3', or for a machine without a GPU what its numbers are, never 'cpu x0'."""
    where = (f"{profile.gpu_count}x {profile.gpu_name}" if profile.gpu_count
             else "this machine's CPU (no GPU: toy-size numbers, not a GPU profile)")
    return f"Profile of {where}" + (" (quick)" if profile.quick else "")


def _summary(profile: Any) -> Any:
    """A Rich table of the measured ceilings."""
    from rich.table import Table

    t = Table(title=summary_title(profile))
    t.add_column("ceiling")
    t.add_column("value", justify="right")
    t.add_row("matmul, large square", f"{profile.matmul_tflops:.4g} TFLOP/s")
    if profile.gemm:
        lo, hi = min(p.tflops for p in profile.gemm), max(p.tflops for p in profile.gemm)
        t.add_row(f"model GEMMs ({len(profile.gemm)} shapes)", f"{lo:.4g}-{hi:.4g} TFLOP/s")
    t.add_row("memory copy (read+write)", f"{profile.memory_bandwidth_gbs:.4g} GB/s")
    t.add_row("kernel launch", f"{profile.launch_overhead_s * 1e6:.1f} µs")
    if profile.h2d_gbs is not None and profile.d2h_gbs is not None:
        t.add_row("host→device / device→host", f"{profile.h2d_gbs:.3g} / {profile.d2h_gbs:.3g} GB/s")
    if profile.cpu_adam_gparams_per_s is not None:
        t.add_row("CPU Adam", f"{profile.cpu_adam_gparams_per_s:.3g} Gparams/s")
    for a in profile.attention:
        ms = lambda s: "OOM" if s is None else f"{s * 1e3:.3g}"  # noqa: E731
        t.add_row(
            f"attention fwd+bwd b{a.batch} s{a.seq_len} h{a.heads}x{a.head_dim}",
            f"fused {ms(a.fused_fwd_bwd_s)} / eager {ms(a.eager_fwd_bwd_s)} ms",
        )
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        pts = [p for p in profile.collectives if p.op == op]
        if pts:
            best = max(pts, key=lambda p: p.busbw_gbs)
            t.add_row(f"{op} x{best.ranks} busbw", f"{best.busbw_gbs:.4g} GB/s at {best.size_bytes / 2**20:.0f} MiB")
    if profile.links:
        lk = profile.links
        on, off = lk.large_busbw_gbs(p2p=True), lk.large_busbw_gbs(p2p=False)
        fmt = lambda x: "-" if x is None else f"{x:.4g}"  # noqa: E731
        t.add_row("all_reduce busbw >= 64 MiB, P2P on / off", f"{fmt(on)} / {fmt(off)} GB/s")
        if lk.concurrent_h2d_gbs:
            t.add_row("pinned host→device, every GPU at once", f"{lk.concurrent_h2d_gbs:.3g} GB/s per GPU")
        for pt in lk.cpu_adam:
            t.add_row(f"CPU Adam, {pt.processes} processes at once", f"{pt.gparams_per_s:.3g} Gparams/s each")
    if profile.inter_node:
        n = profile.inter_node
        t.add_row(f"network, {n.nodes} nodes x {n.gpus_per_node} rails", f"{n.busbw_gbs:.4g} GB/s per node")
    if profile.host:
        h = profile.host
        t.add_row("host", f"{h.cpu_cores} cores, {h.usable_ram_gib:.0f} GiB usable RAM"
                  + (f" ({h.cpu_model})" if h.cpu_model else ""))
    design = [m for m in profile.macro if m.dataset == "probe-macro" and m.source == "probes.macro.run_design"]
    if design:
        ok = [m for m in design if m.measured.step_time_s]
        t.add_row("real layers (configurations x depths)", f"{len(ok)} of {len(design)} ran")
    for m in profile.macro:
        if m in design:
            continue
        r = m.measured
        value = r.error or f"{r.tokens_per_s:,.0f} tokens/s" + (f", {r.peak_mem_gib:.1f} GiB" if r.peak_mem_gib else "")
        t.add_row(f"macro {m.case.get('id')} (extrapolated)", value)
    return t


def probe(
    quick: bool = typer.Option(False, "--quick", help="A subset that takes about a minute on one GPU."),
    out: Optional[Path] = typer.Option(None, "--out", help=OUT_HELP),
    device: str | None = typer.Option(None, "--device", help=DEVICE_HELP),
    macro: list[str] = typer.Option([], "--macro", help="A training case (inline JSON or file) to run at 1 and 2 "
                                    "layers of the real model and extrapolate by layer count; repeatable."),
    model: str = typer.Option("llama2-7b", "--model", help="Architecture whose real layers the probe times "
                              "under a small design of configurations (catalog name, inline JSON or config.json)."),
    budget: float = typer.Option(120.0, "--budget", min=0.0, max=3600.0,
                                 help="Seconds for the real-layer design (0 skips it)."),
    links: Optional[bool] = typer.Option(None, "--links/--no-links", help="How the GPUs are wired: P2P matrix, "
                                         "collectives with P2P on and off, concurrent pinned copies, CPU Adam with one "
                                         "process per GPU (default: on with 2 or more GPUs; about two minutes)."),
) -> None:
    """Measure GEMM, memory, launch, host-link, CPU Adam, attention and collective ceilings.

    Launched on several nodes (torchrun --nnodes N, or deepspeed --hostfile), it measures the network between them instead and adds it to the node's profile (written before by a plain `advisor probe` there).
    """
    from probes.internode import launch_shape

    if launch_shape() is not None:
        _probe_across_nodes(out, device, quick)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    from knowledge.paths import user_profiles_dir
    from knowledge.store import atomic_write_json
    from probes.profile import run_profile

    _check_writable(out if out is not None else user_profiles_dir() / "profile.json")
    _model_or_fail(model)
    device = _resolve_device(device)
    macro_cases = [_macro_case(m) for m in macro]
    want_links = _links_wanted(links, _gpu_count(device))
    messages: list[str] = []
    err = Console(stderr=True)
    try:
        columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("starting", total=1.0)

            def progress(msg: str, frac: float) -> None:
                if frac < 0:
                    messages.append(msg)
                else:
                    bar.update(task, description=msg, completed=frac)

            import warnings

            with warnings.catch_warnings():  # the libraries' deprecation notices are not the user's business here
                warnings.simplefilter("ignore", FutureWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                profile = run_profile(quick=quick, device=device, progress=progress,
                                      macro_model=model if budget > 0 else None, macro_budget_s=budget)
            if macro_cases:
                from probes.macro import macro_probe

                rows = []
                for i, (case, arch) in enumerate(macro_cases):
                    bar.update(task, description=f"macro probe {case.id} ({i + 1}/{len(macro_cases)})")
                    rows.append(macro_probe(case, arch, device=device))
                profile = profile.model_copy(update={"macro": list(profile.macro) + rows})
            if want_links:
                from probes.links import measure_links

                bar.update(task, description="links: P2P, collectives P2P on/off, concurrent copies, CPU Adam")
                procs = tuple(sorted({1, profile.gpu_count}))
                measured = measure_links(procs=procs, allow_build=True)
                profile = profile.model_copy(update={"links": measured})
    except KeyboardInterrupt:
        typer.echo("advisor probe: interrupted; nothing written", err=True)
        raise typer.Exit(130)
    except Exception as e:  # a probe crash is one line for the user, never a traceback
        _fail(f"probing failed, nothing written: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    for m in messages:
        err.print(m, style="yellow" if m.startswith("warning") else None, markup=False, highlight=False)
    if out is None:
        out = default_profile_path(profile)
    try:
        bak = _keep_backup(out)
        atomic_write_json(out, profile)
    except OSError as e:
        _fail(f"cannot write --out {out}: {e.strerror or e}")
    Console().print(_summary(profile))
    typer.echo(f"wrote {out}" + (f" (previous kept as {bak})" if bak else ""))


def _gpu_count(device: str) -> int:
    if device == "cpu":
        return 0
    import torch

    return torch.cuda.device_count()


def _links_wanted(links: bool | None, gpus: int) -> bool:
    """``--links`` default: on where there are links to measure (2 or more GPUs); asked for with fewer, one
    line and a non-zero exit before anything is written."""
    if links is None:
        return gpus >= 2
    if links and gpus < 2:
        _fail(f"--links needs 2 or more GPUs; this machine has {gpus}: use --no-links")
    return links


def _probe_across_nodes(out: Path | None, device: str | None, quick: bool) -> None:
    """Every rank measures the rails at once; rank 0 adds the result to this node's profile (``--out``, or
    ADVISOR_HOME/profiles/<gpu>x<count>.json) and says so. The other ranks write nothing."""
    import os

    from advisor.predictor import load_profile
    from knowledge.errors import AdvisorError
    from knowledge.paths import user_profiles_dir
    from knowledge.store import atomic_write_json
    from probes import internode

    device = _resolve_device(device) if int(os.environ.get("RANK", "0")) == 0 else (device or _local_device())
    if out is None:
        if device == "cpu":
            _fail("--out: on the CPU, name the profile to add the network to")
        import torch

        from probes.profile import match_catalog

        name = torch.cuda.get_device_name(0)
        out = user_profiles_dir() / f"{match_catalog(name) or ''.join(c for c in name.lower() if c.isalnum())}x{torch.cuda.device_count()}.json"
    try:
        measured = internode.run(device, quick)
    except Exception as e:  # one line for the user, never a traceback
        _fail(f"probing across nodes failed, nothing written: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if int(os.environ.get("RANK", "0")) != 0:
        return
    summary = (f"network: {measured.busbw_gbs:.4g} GB/s per node one direction ({measured.busbw_gbs * 8:,.0f} Gb/s), "
               f"{measured.nodes} nodes x {measured.gpus_per_node} rails")
    try:
        profile = load_profile(out)
    except AdvisorError as e:
        _fail(f"{summary}; not stored: {e}: run `advisor probe` on one node first (it writes that profile)")
    try:
        bak = _keep_backup(out)
        atomic_write_json(out, profile.model_copy(update={"inter_node": measured}))
    except OSError as e:
        _fail(f"{summary}; cannot write --out {out}: {e.strerror or e}")
    typer.echo(f"{summary}\nadded to {out}" + (f" (previous kept as {bak})" if bak else ""))


def _local_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
