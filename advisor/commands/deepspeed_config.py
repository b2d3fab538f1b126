"""`advisor deepspeed-config`: a configuration as a DeepSpeed JSON that DeepSpeed's own parser accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from advisor.output import check_writable, console, fail, warn


def validate_with_deepspeed(cfg: dict) -> str | None:
    """Run DeepSpeed's config parser on ``cfg``; the error in one line, or None when it is accepted.

    Without a distributed backend DeepSpeed assumes one rank, so the global batch (which it derives
    from micro-batch x accumulation x ranks) is left for it to compute.
    """
    try:
        from deepspeed.runtime.config import DeepSpeedConfig
    except Exception as e:  # noqa: BLE001 - deepspeed missing or broken: say so, don't crash
        return f"deepspeed not importable ({type(e).__name__}); config not validated"
    try:
        DeepSpeedConfig({k: v for k, v in cfg.items() if k != "train_batch_size"})
    except Exception as e:  # noqa: BLE001 - DeepSpeed raises assorted types for a bad config
        return " ".join(str(e).split())[:300]
    return None


def deepspeed_config_cmd(
    case: Optional[str] = typer.Option(None, "--case", help="A contract training case (inline JSON or a file)."),
    hardware: str = typer.Option("h100x1", "--hardware", "-H"),
    task: str = typer.Option("finetune", "--task", "-t"),
    model: str = typer.Option("7b", "--model", "-m"),
    method: Optional[str] = typer.Option(None, "--method", help="full, lora, qlora (default by task)."),
    zero_stage: int = typer.Option(2, "--zero-stage", min=0, max=3),
    offload: str = typer.Option("none", "--offload", help="none, optimizer, optimizer+params."),
    recompute: bool = typer.Option(False, "--recompute/--no-recompute"),
    micro_batch_size: int = typer.Option(1, "--micro-batch-size", min=1, max=1 << 20),
    grad_accum: int = typer.Option(1, "--grad-accum", min=1, max=1 << 20),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, max=1024),
    out: Path = typer.Option(Path("ds_config.json"), "--out", help="Where to write the JSON."),
) -> None:
    """Write the DeepSpeed JSON of a configuration and say how to launch it."""
    from advisor.cases import MalformedFile, case_from_arg, check_plausible, parse_case
    from advisor.train_recommend import usage_note
    from advisor.search import Candidate
    from knowledge.catalog import resolve_platform
    from knowledge.errors import AdvisorError
    from knowledge.schema import TrainCase
    from knowledge.store import atomic_write_json
    from models.deepspeed_config import deepspeed_config, launch_command
    from models.setup import check_combination

    try:
        if case:
            c = case_from_arg(case)
        else:
            fields = dict(id="cli", hardware=hardware, model=model, task=task, zero_stage=zero_stage, offload=offload,
                          recompute=recompute, micro_batch_size=micro_batch_size, grad_accum=grad_accum, gpus=gpus)
            if method:
                fields["method"] = method
            c = parse_case(fields)
        if not isinstance(c, TrainCase):
            fail("a serving case has no DeepSpeed config; use a pretrain or finetune case")
        if c.engine != "deepspeed":
            fail("engine 'pytorch' runs without DeepSpeed; there is no config to write")
        check_combination(c)
        platform = resolve_platform(c.hardware, c.gpus)
        check_plausible(c)
    except MalformedFile as e:
        fail(str(e), code=2)
    except AdvisorError as e:
        fail(str(e))
    check_writable(out, "--out")
    n = c.gpus or platform.count
    cfg = deepspeed_config(c, platform.gpu, n)
    problem = validate_with_deepspeed(cfg)
    if problem and problem.startswith("deepspeed not importable"):
        warn(problem)
    elif problem:
        fail(f"DeepSpeed rejects the generated config: {problem}")
    try:
        atomic_write_json(out, cfg)
    except OSError as e:
        fail(f"cannot write --out {str(out)!r}: {e.strerror or e}")
    console.print(f"wrote {out} ({'validated by DeepSpeed' if not problem else 'not validated'})")
    console.print(f"launch: {launch_command(c, n, str(out))}", highlight=False)
    console.print(f"with Hugging Face: {usage_note(Candidate(c, None))}", highlight=False)  # type: ignore[arg-type]


def register(app: typer.Typer) -> None:
    app.command("deepspeed-config")(deepspeed_config_cmd)
