"""Run ONE contract case for real and append one ``Measurement`` row: ``python -m probes.run_case``.

    python -m probes.run_case --case '{"id": ..., "task": "finetune", ...}' --out rows.jsonl
    torchrun --nproc_per_node 2 -m probes.run_case --case case.json --out rows.jsonl   # gpus > 1

Every outcome becomes a row written by rank 0: numbers, an OOM, or an error in one line. Nothing is lost
short of the process being killed (``probes.campaign`` writes the row then).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import os
import shlex
import subprocess
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from knowledge.schema import Environment, Measured, Measurement, ModelArch

# Keys a row's case may carry that are not part of the contract (campaign bookkeeping).
META_KEYS = ("_timeout_s", "_steps", "_warmup", "_zero_overrides")


def load_json_arg(text: str) -> Any:
    """A JSON value given inline (starts with ``{``) or as a file path."""
    text = text.strip()
    return json.loads(text if text.startswith("{") else Path(text).read_text())


def resolve_arch(model: str | dict) -> ModelArch:
    """The architecture of a case's ``model`` through ``knowledge.catalog``; inline dicts work without it."""
    if importlib.util.find_spec("knowledge.catalog") is not None:
        from knowledge.catalog import resolve_model

        return resolve_model(model)
    if isinstance(model, dict):
        return ModelArch(name="inline", **model)
    raise RuntimeError(f"cannot resolve model {model!r}: knowledge.catalog is not available")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _nvidia_smi(query: str) -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def environment(command: str, light: bool = False) -> Environment:
    """What this machine is: GPU name/count, driver, library versions, date (UTC ISO), command line.

    ``light`` reads GPUs from nvidia-smi and versions from package metadata without importing torch
    (the campaign's own process stays small and never touches CUDA).
    """
    import platform

    smi = _nvidia_smi("name,driver_version")
    if light:
        names = [line.split(",")[0].strip() for line in smi]
        torch_version, cuda = _version("torch"), None
        name, count = (names[0], len(names)) if names else (None, 0)
    else:
        import torch

        torch_version, cuda = torch.__version__, torch.version.cuda
        available = torch.cuda.is_available()
        name = torch.cuda.get_device_name(0) if available else None
        count = torch.cuda.device_count() if available else 0
    from probes.host import host_facts

    facts = host_facts()
    threads = None if light else __import__("torch").get_num_threads()
    return Environment(
        cpu_cores=facts.cpu_cores,
        host_ram_gib=facts.usable_ram_gib,
        omp_threads=threads,
        gpu_name=name or f"cpu ({platform.processor() or platform.machine()})",
        gpu_count=count,
        driver=smi[0].split(",")[-1].strip() if smi else None,
        torch=torch_version,
        cuda=cuda,
        deepspeed=_version("deepspeed"),
        transformers=_version("transformers"),
        peft=_version("peft"),
        bitsandbytes=_version("bitsandbytes"),
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=command,
    )


def _quiet() -> None:
    # A campaign log should show results, not library chatter repeated on every rank.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    for name in ("bitsandbytes", "DeepSpeed", "deepspeed", "torch.distributed"):
        logging.getLogger(name).setLevel(logging.ERROR)


def with_advised_targets(arch: ModelArch, case: Any, case_obj: dict) -> Any:
    """A LoRA case that names no targets runs on the ones the advisor predicts it with (Pythia: query_key_value;
    Qwen3.5: its DeltaNet projections), and ``case_obj`` (what the row records) names the targets that ran. Every
    harness that runs a case goes through here, so a run and its prediction adapt the same modules."""
    from advisor.traces import TraceBook

    case = TraceBook().with_default_lora_targets(arch, case)
    case_obj["lora_targets"] = case.lora_targets
    return case


def measure(case_obj: dict, args: argparse.Namespace, info: dict) -> Measured:
    """Validate the case, resolve its architecture and run it; exceptions propagate."""
    from pydantic import TypeAdapter

    from knowledge.schema import Case, TrainCase

    case = TypeAdapter(Case).validate_python({k: v for k, v in case_obj.items() if k not in META_KEYS})
    arch = resolve_arch(case.model)
    device = args.device or _auto_device()
    if args.num_layers:
        info["num_layers"] = args.num_layers
    if isinstance(case, TrainCase):
        from probes.train_step import run_training

        case = with_advised_targets(arch, case, case_obj)

        ds = load_json_arg(args.ds_config) if args.ds_config else None
        return run_training(case, arch, steps=args.steps, warmup=args.warmup, device=device, ds_config=ds,
                            num_layers=args.num_layers, phase_timing=not args.no_phase_timing)
    from probes.serve_step import run_serving

    return run_serving(case, arch, device=device, repeats=args.repeats, info=info)


def _auto_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def command_line(argv: list[str]) -> str:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if "CROSS_SIZE" in os.environ:  # started by DeepSpeed's launcher (deepspeed --hostfile …)
        nodes = int(os.environ["CROSS_SIZE"])
        prefix = f"deepspeed --num_nodes {nodes} --num_gpus {world // max(nodes, 1)} --module probes.run_case"
    else:
        prefix = f"torchrun --nproc_per_node {world} -m probes.run_case" if world > 1 else "python -m probes.run_case"
    return f"{prefix} {shlex.join(argv)}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m probes.run_case", description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True, help="case JSON, inline or a file path")
    ap.add_argument("--out", required=True, help="JSON-lines file the Measurement row is appended to")
    ap.add_argument("--steps", type=int, default=6, help="timed optimizer steps (training)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats (serving)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--ds-config", default=None, help="DeepSpeed config JSON (default: models.deepspeed_config)")
    ap.add_argument("--num-layers", type=int, default=None, help="truncate the model to this many layers")
    ap.add_argument("--no-phase-timing", action="store_true", help="skip the extra phase-timed step")
    ap.add_argument("--dataset", default="own", help="Measurement.dataset, e.g. own-h100")
    ap.add_argument("--source", default="probes.run_case", help="Measurement.source")
    ap.add_argument("--notes", default="", help="free text added to the row's notes")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    _quiet()
    info: dict[str, Any] = {}
    case_obj: dict = {}
    try:
        loaded = load_json_arg(args.case)
        if not isinstance(loaded, dict):
            raise ValueError("the case is not a JSON object")
        case_obj = loaded
        measured = measure(case_obj, args, info)
    except Exception as e:  # every failure is a row, never a lost case
        from probes.train_step import is_oom, one_line

        if is_oom(e):
            measured = Measured(oom=True, failure="device_oom", error=f"CUDA out of memory: {one_line(e, 200)}")
        else:
            measured = Measured(failure="crash", error=f"{type(e).__name__}: {one_line(e)}")
    rank = int(os.environ.get("RANK", "0"))
    if rank == 0:
        notes = "; ".join(x for x in [args.notes] + [f"{k}={v}" for k, v in info.items()] if x)
        row = Measurement(dataset=args.dataset, source=args.source, case=_case_dump(case_obj),
                          measured=measured, environment=environment(command_line(argv)), notes=notes)
        from knowledge.store import append_jsonl

        append_jsonl(args.out, [row])
        print(json.dumps({"id": case_obj.get("id"), **measured.model_dump(exclude_none=True)}), flush=True)
    _finish_dist()
    return 0 if measured.error is None or measured.oom else 1


def _case_dump(case_obj: dict) -> dict:
    """The case as validated (defaults filled in) when it validates, else as given."""
    from pydantic import TypeAdapter, ValidationError

    from knowledge.schema import Case

    clean = {k: v for k, v in case_obj.items() if k not in META_KEYS}
    try:
        return TypeAdapter(Case).validate_python(clean).model_dump(mode="json")
    except ValidationError:
        return clean


def _finish_dist() -> None:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # a broken group must not turn a written row into a crash
        pass


if __name__ == "__main__":
    sys.exit(main())
