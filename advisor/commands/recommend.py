"""`advisor recommend --hardware rtx4090x8 --task finetune --model 70b`: search, rank, write the config."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from advisor.output import console, fail, warn


class Task(str, Enum):
    pretrain = "pretrain"
    finetune = "finetune"
    serve = "serve"


class Objective(str, Enum):
    throughput = "throughput"
    headroom = "headroom"


class Sampler(str, Enum):
    auto = "auto"
    tpe = "tpe"
    brute = "brute"


def _model_arg(model: str) -> str | dict:
    """A catalog name, a config.json path, or an inline JSON architecture."""
    if model.strip().startswith("{"):
        try:
            return json.loads(model)
        except json.JSONDecodeError as e:
            fail(f"--model is not valid JSON: {e.msg} at column {e.colno}")
    return model


def recommend(
    hardware: str = typer.Option(..., "--hardware", "-H", help="Platform id: <gpu>x<count>[-pcie|-nvlink], e.g. rtx4090x8, a800x8, h100x1; or a platform file box.json (see `advisor hardware`)."),
    task: Task = typer.Option(..., "--task", "-t", help="pretrain, finetune or serve."),
    model: str = typer.Option(..., "--model", "-m", help="Catalog name (7b, llama3-8b, …; see `advisor models`), a hub id (Qwen/Qwen2.5-7B), a config.json path, or inline JSON."),
    host_ram_gib: Optional[float] = typer.Option(None, "--host-ram-gib", min=1.0, help="Host RAM of each server, GiB (overrides the platform's)."),
    cpu_cores: Optional[int] = typer.Option(None, "--cpu-cores", min=1, help="CPU cores of each server (overrides the platform's)."),
    top: int = typer.Option(5, "--top", min=1, max=100, help="How many configurations to list."),
    seq_len: int = typer.Option(2048, "--seq-len", min=1, help="Tokens per training sequence."),
    global_batch: Optional[int] = typer.Option(None, "--global-batch", min=1, help="Sequences per optimizer step over all GPUs (sets gradient accumulation)."),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, help="GPUs to use (default: all of the platform)."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Calibration profile from `advisor probe`: a path, or a name under ADVISOR_HOME/profiles or bundled (h100x1, h200x1, h200x2)."),
    objective: Objective = typer.Option(Objective.throughput, "--objective", help="throughput, or throughput within --headroom of free memory."),
    headroom: float = typer.Option(0.1, "--headroom", min=0.0, max=0.9, help="With --objective headroom: fraction of GPU memory to keep free."),
    storage: Optional[str] = typer.Option(None, "--storage", help="Optuna storage: a URL (sqlite:///study.db, postgresql://…), or 'sqlite' / NAME.db for a SQLite file under ADVISOR_HOME/studies; default in memory."),
    study_name: Optional[str] = typer.Option(None, "--study-name", help="Share one study between workers (default storage then: the SQLite file under ADVISOR_HOME/studies)."),
    sampler: Sampler = typer.Option(Sampler.auto, "--sampler", help="auto = exhaustive for small spaces, else TPE."),
    trials: Optional[int] = typer.Option(None, "--trials", min=1, help="Trials (default: the whole space, or 400 for TPE)."),
    seed: int = typer.Option(0, "--seed", help="Sampler seed: same inputs, same answer."),
    engine: str = typer.Option("deepspeed", "--engine", help="deepspeed, pytorch, or both (comma-separated)."),
    lora_rank: int = typer.Option(64, "--lora-rank", min=1),
    prompt_len: int = typer.Option(512, "--prompt-len", min=1, help="serve: prompt tokens."),
    output_len: int = typer.Option(256, "--output-len", min=1, help="serve: generated tokens."),
    max_tpot_ms: Optional[float] = typer.Option(None, "--max-tpot-ms", min=0.0, help="serve: limit on time per output token."),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", min=0.0, help="serve: limit on time to first token."),
    requests: Optional[int] = typer.Option(None, "--requests", min=1, help="serve: also predict this many requests arriving at once (continuous batching)."),
    out_dir: Path = typer.Option(Path("advisor-out"), "--out-dir", help="Where the top pick's DeepSpeed JSON is written."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    wide: bool = typer.Option(False, "--wide", help="All columns: step time, fits and the full why (default fits 80 columns)."),
) -> None:
    """Search the configuration space and rank what runs fastest and fits."""
    from advisor.predictor import load_profile
    from knowledge.efficiency import load_efficiencies
    from knowledge.catalog import with_host
    from knowledge.errors import AdvisorError
    from knowledge.paths import default_storage_url, find_profile, storage_url

    confirm_hardware = hardware + _host_flags(host_ram_gib, cpu_cores)
    try:
        hardware = with_host(hardware, host_ram_gib, cpu_cores)
        prof = load_profile(find_profile(profile)) if profile else None
        storage = storage_url(storage)
        if study_name and storage is None:
            storage = default_storage_url()
        eff = load_efficiencies()
        arch_model = _model_arg(model)
        if task == Task.serve:
            from advisor.serve_recommend import recommend_serve

            recommend_serve(hardware, arch_model, load_efficiencies(task="serve"), prof, top=top, prompt_len=prompt_len, output_len=output_len,
                            max_tpot_ms=max_tpot_ms, max_ttft_ms=max_ttft_ms, as_json=as_json, requests=requests,
                            wide=wide)
            return
        engines = tuple(e.strip() for e in engine.split(","))
        bad = [e for e in engines if e not in ("deepspeed", "pytorch")]
        if bad:
            fail(f"--engine {bad[0]!r} is not one of deepspeed, pytorch")
        from advisor.search import SearchSpec
        from advisor.train_recommend import recommend_train

        spec = SearchSpec(
            hardware=hardware, model=arch_model, task=task.value, gpus=gpus, seq_len=seq_len, global_batch=global_batch,
            engines=engines, headroom=headroom if objective == Objective.headroom else 0.0, lora_rank=lora_rank,
        )
        recommend_train(spec, eff, prof, top=top, storage=storage, study_name=study_name, sampler=sampler.value,
                        trials=trials, seed=seed, out_dir=out_dir, as_json=as_json, wide=wide,
                        confirm_hardware=confirm_hardware)
    except AdvisorError as e:
        fail(str(e))


def _host_flags(host_ram_gib: float | None, cpu_cores: int | None) -> str:
    return (f" --host-ram-gib {host_ram_gib:g}" if host_ram_gib else "") + (f" --cpu-cores {cpu_cores}" if cpu_cores else "")


def register(app: typer.Typer) -> None:
    app.command("recommend")(recommend)
