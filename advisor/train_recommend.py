"""Ranking, presenting and writing the training recommendation (the search itself is advisor.search)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.console import Console
from rich.table import Table

from advisor import hints
from advisor.explain import alternatives, describe, short_why, smallest_footprint, why
from advisor.output import console, err_console, print_hanging
from advisor.search import Candidate, Evaluator, SearchSpec, run_search
from knowledge.catalog import host_by_rule
from knowledge.efficiency import Efficiencies
from knowledge.schema import PlatformSpec, Profile
from models.deepspeed_config import deepspeed_config


def launch_line(c: Candidate, gpus: int, config_path: Path, platform: PlatformSpec | None = None) -> str:
    """The launcher line, with the environment the platform needs (``advisor.hints``)."""
    from knowledge.catalog import resolve_platform

    return hints.launch_line(c.case, platform or resolve_platform(c.case.hardware, c.case.gpus), gpus, config_path)


def usage_note(c: Candidate, config_path: Path | str = "ds_config.json", bf16: bool = True) -> str:
    """How to use the config with the Hugging Face stack for this method, naming the file where it was written."""
    return "; ".join(hints.hf_usage(c.case, config_path, bf16))


SAME = 0.01  # picks whose tokens/s and GiB/GPU agree within 1% are one row


def fold_equivalent(ranked: list[Candidate]) -> list[tuple[Candidate, list[int]]]:
    """Fold picks that differ only in the ZeRO stage and predict the same (within 1%) into one row.

    On one GPU, ZeRO 0, 1 and 2 partition over a single rank: three rows of one prediction say nothing.
    Returns (the fastest member, its equivalent stages in ascending order) in rank order.
    """
    groups: list[tuple[Candidate, list[int]]] = []
    index: dict[tuple, list[int]] = {}  # the groups of each configuration-but-the-stage
    for c in ranked:
        knobs = c.case.model_dump(exclude={"id", "zero_stage"})
        key = tuple(sorted((k, str(v)) for k, v in knobs.items()))
        p = c.prediction
        for i in index.get(key, []):
            head = groups[i][0].prediction
            if abs(p.tokens_per_s / head.tokens_per_s - 1) <= SAME and abs(p.peak_mem_gib / head.peak_mem_gib - 1) <= SAME:
                groups[i][1].append(c.case.zero_stage)
                break
        else:
            index.setdefault(key, []).append(len(groups))
            groups.append((c, [c.case.zero_stage]))
    return [(c, sorted(stages)) for c, stages in groups]


def mfu(p: Any, peak_tflops: float) -> float | None:
    """Model FLOPs utilisation from the prediction's ``model_tflops_per_gpu`` (None when it has none)."""
    tf = getattr(p, "model_tflops_per_gpu", None)
    return tf / peak_tflops if tf and peak_tflops else None


# case fields a single-node pick never sets: left out of its configuration while at their defaults
_MULTINODE_FIELDS = ("network", "zero_quantized_weights", "zero_hpz_partition_size", "zero_quantized_gradients", "mics_shard_size")


def _item(rank: int, c: Candidate, best: Candidate, ev: Evaluator, stages: list[int] | None = None) -> dict[str, Any]:
    p = c.prediction
    knobs = {k: v for k, v in c.case.model_dump().items() if k not in ("id", "hardware", "model", "task")
             and not (k in _MULTINODE_FIELDS and v == type(c.case).model_fields[k].default)}
    stages = stages or [c.case.zero_stage]
    label = f"ZeRO {'/'.join(map(str, stages))}" if len(stages) > 1 else None
    return {
        "rank": rank,
        "configuration": knobs,
        "equivalent_zero_stages": stages,
        "summary": describe(c.case, label),
        "tokens_per_s": p.tokens_per_s,
        "step_time_s": p.step_time_s,
        "peak_mem_gib": p.peak_mem_gib,
        "capacity_gib": p.capacity_gib,
        "fits": p.fits,
        "why": why(rank, p, best.prediction, c.case),
        "why_short": short_why(rank, p, best.prediction, c.case),
        "host_mem_gib": p.host_mem_gib,
        "memory_margin": {"spare": c.margin[0], "of": c.margin[1]},  # the smaller spare share: GPU or host
        "rank_score": c.rank_score,  # tokens/s less up to 10% for a pick within 8% of a memory limit
        "model_tflops_per_gpu": getattr(p, "model_tflops_per_gpu", None),
        "mfu": mfu(p, ev.platform.gpu.matmul_tflops),
        "deepspeed_config": deepspeed_config(c.case, ev.platform.gpu, ev.gpus) if c.case.engine == "deepspeed" else None,
        "breakdown": p.breakdown.model_dump() if p.breakdown else None,
        "interval": p.interval,
    }


def recommend_train(
    spec: SearchSpec, eff: Efficiencies, profile: Profile | None, *, top: int, storage: str | None,
    study_name: str | None, sampler: str, trials: int | None, seed: int, out_dir: Path, as_json: bool,
    wide: bool = False, confirm_hardware: str | None = None,
) -> bool:
    """Search, print (or ``as_json``) the ranked picks and write the top pick's configs under ``out_dir``. False when
    nothing fits (then what would is printed instead, and nothing is written).

    ``confirm_hardware`` is what the closing `advisor confirm` line passes as --hardware (default: the platform id).
    """
    t0 = time.perf_counter()
    quiet = as_json or not sys.stderr.isatty()
    with Progress(TextColumn("searching"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True, disable=quiet) as bar:
        task_id = bar.add_task("search", total=None)
        ranked, ev, facts = run_search(
            spec, eff, profile, storage=storage, study_name=study_name, sampler=sampler, n_trials=trials, seed=seed,
            progress=lambda done, total: bar.update(task_id, completed=done, total=total),
        )
    facts["seconds"] = round(time.perf_counter() - t0, 2)
    header = {
        "hardware": ev.platform.id, "gpu": ev.platform.gpu.name, "gpus": ev.gpus, "model": ev.arch.name,
        "task": spec.task, "seq_len": spec.seq_len, "global_batch": spec.global_batch, "search": facts,
        "profile": profile.gpu_name if profile else None,
        "host_ram_gib": ev.platform.host.host_ram_gib, "cpu_cores": ev.platform.host.cpu_cores,
        "host_assumed": host_by_rule(ev.platform.host),
    }
    if spec.nodes > 1:
        header.update(nodes=spec.nodes, gpus_per_node=ev.gpus // spec.nodes, network=ev.network.label if ev.network else None)
    # configurations the model's own code cannot run (not picks): why, and one of them
    header["cannot_run"] = [{"why": why, "example": describe(case)} for why, case in ev.cannot_run.items()]
    if not ranked:
        # a budgeted search may have sampled only configurations that do not fit: "nothing fits" only when none does
        found = ev.best()
        ranked = [found] if found is not None else []
    if not ranked:
        _nothing_fits(spec, ev, header, as_json)
        return False
    best = ranked[0]
    folded = fold_equivalent(ranked)[:top]
    items = [_item(i + 1, c, best, ev, stages) for i, (c, stages) in enumerate(folded)]
    ranked = [c for c, _ in folded]
    config_path = out_dir / "ds_config.json"
    accel_path = hints.accelerate_config_path(config_path)
    bf16 = ev.platform.gpu.supports_bf16
    launch = launch_line(best, ev.gpus, config_path, ev.platform)
    written: dict[str, Path] = {}
    if best.case.engine == "deepspeed":
        written = hints.write_configs(config_path, items[0]["deepspeed_config"], best.case, ev.gpus, spec.nodes)
    for it, c in zip(items, ranked[:top]):
        it["launch"] = launch_line(c, ev.gpus, config_path, ev.platform)
        it["launch_env"] = hints.launch_env(c.case, ev.platform, ev.gpus)
        it["usage"] = usage_note(c, config_path, bf16)
        it["training_arguments"] = hints.training_arguments(c.case, config_path, bf16)
    if spec.nodes > 1:
        multi = _multinode(spec, ev, items, ranked[:top], out_dir, config_path, accel_path)
        launch = items[0]["launch"]
    if as_json:
        extra = {"deepspeed_config_path": str(config_path)}
        if best.case.engine == "deepspeed":
            extra["accelerate_config_path"] = str(accel_path)
            extra["hf_trainer_config_path"] = str(written["hf_trainer"])
        if spec.nodes > 1:
            extra.update({f"{k}_path": str(v) for k, v in multi.items()})
        print(json.dumps({**header, "recommendations": items, **extra}, indent=2))
        return True
    _table(header, items, ev, wide)
    for skipped in header["cannot_run"]:
        print_hanging(f"Not searched: {skipped['example']} and the like: {skipped['why']}")
    stages = items[0]["equivalent_zero_stages"]
    same = f" (ZeRO {'/'.join(map(str, stages))} predict the same; the config uses ZeRO-{best.case.zero_stage})" if len(stages) > 1 else ""
    console.print(f"[bold]Top pick[/]: {describe(best.case)}{same}")
    if best.case.engine == "deepspeed":
        console.print("Wrote:")
        for line in hints.wrote_lines(written):
            print_hanging(line)
    if spec.nodes > 1:
        _print_multinode(items[0], multi)
    else:
        console.print(f"Launch: [green]{launch}[/]", highlight=False, soft_wrap=True)
    if best.case.engine == "deepspeed" and spec.nodes == 1:
        console.print(f"   or: [green]{hints.accelerate_line(best.case, ev.platform, ev.gpus, accel_path)}[/]", highlight=False, soft_wrap=True)
    for line in hints.usage_lines(best.case, config_path, bf16):
        print_hanging(line)
    hostfile = f" --hostfile {multi['hostfile']}" if spec.nodes > 1 else ""
    console.print(f"Prove it: advisor confirm --hardware {confirm_hardware or ev.platform.id}{hostfile} --task {spec.task} --model {ev.arch.name if isinstance(spec.model, str) else 'MODEL'} --seq-len {spec.seq_len}", highlight=False, soft_wrap=True)
    return True


def _multinode(spec: SearchSpec, ev: Evaluator, items: list[dict[str, Any]], ranked: list[Candidate], out_dir: Path,
               config_path: Path, accel_path: Path) -> dict[str, Path]:
    """Several nodes: the hostfile (and .deepspeed_env) beside the configs, every pick's three launch lines."""
    from advisor import multinode

    per_node = ev.gpus // spec.nodes
    paths = multinode.write_launch_files(out_dir, spec.nodes, per_node, hints.launch_env(ranked[0].case, ev.platform, per_node))
    for it, c in zip(items, ranked):
        c_env = hints.launch_env(c.case, ev.platform, per_node)
        lines = multinode.launch_lines(spec.nodes, per_node, c_env, paths["hostfile"], config_path, accel_path)
        it.update(launch=lines["deepspeed"], launch_env=c_env, launch_torchrun=lines["torchrun"],
                  launch_accelerate=lines["accelerate"])
    return paths


def _print_multinode(top: dict[str, Any], paths: dict[str, Path]) -> None:
    note = f" and {paths['deepspeed_env']} (copy it to ~ on the first node: the launcher exports it)" if "deepspeed_env" in paths else ""
    console.print(f"Wrote [cyan]{paths['hostfile']}[/] (placeholder host names worker-N: put your nodes' names in){note}")
    console.print(f"Launch from the first node: [green]{top['launch']}[/]", highlight=False, soft_wrap=True)
    console.print(f"   or on every node: [green]{top['launch_torchrun']}[/]", highlight=False, soft_wrap=True)
    console.print(f"   or on every node: [green]{top['launch_accelerate']}[/] (RANK = 0 on worker-1, 1, 2, …)", highlight=False, soft_wrap=True)


def plus_minus(value: float, interval: dict | None, key: str, wrap: bool = False) -> str:
    """'13,309 ±24%' (or '14,286 −50/+99%' where the interval is lopsided; ``wrap``: on two lines) from the
    prediction's interval, or just the value when it has none."""
    from advisor.tables import relative_range, with_error

    return with_error(value, relative_range(value, (interval or {}).get(key)), wrap)


def _trials_text(s: dict[str, Any]) -> str:
    """The search's trials: a TPE search says how many it sampled (``--trials``) and how many its polish added."""
    if s["sampler"] != "tpe" or "sampled" not in s or s["trials"] <= s["sampled"]:
        return f"{s['sampler']} search: {s['trials']} trials"
    return f"tpe search: {s['sampled']} sampled + {s['trials'] - s['sampled']} around the best"


def _table(header: dict[str, Any], items: list[dict[str, Any]], ev: Evaluator, wide: bool = False) -> None:
    """The ranked picks. Narrow by default (fits 80 columns): configuration, tokens/s ± error, GiB per GPU,
    host GiB, MFU when known, a short why. ``wide`` adds the step time, fits and the full why."""
    s = header["search"]
    t = Table(
        title=f"{header['model']} · {header['task']} · {_gpus_text(header)} · seq {header['seq_len']}",
        caption=(f"{_trials_text(s)} over {s['space_size']} configurations in {s['seconds']:.1f} s; "
                 f"± = held-out error; host RAM {header['host_ram_gib']:.0f} GiB, {header['cpu_cores']} cores"
                 + (f" per node; network: {header['network']}" if header.get("nodes") else "")
                 # say so, and how to give the real one (rtx4090x7 had more cores than the listed rtx4090x8, unsaid)
                 + (" (assumed: --host-ram-gib, --cpu-cores give yours)" if header.get("host_assumed") else "")),
        title_justify="left", caption_justify="left",
    )
    has_mfu = any(it.get("mfu") is not None for it in items)
    cols = [("#", "right"), ("configuration", "left"), ("tokens/s", "right")]
    if wide:
        cols.append(("step (s)", "right"))
    cols += [("GiB/GPU", "right"), ("host GiB", "right")]
    if has_mfu:
        cols.append(("MFU", "right"))
    if wide:
        cols.append(("fits", "center"))
    cols.append(("why", "left"))
    for col, just in cols:
        t.add_column(col, justify=just, no_wrap=col in ("#", "tokens/s", "GiB/GPU"))
    t.caption += "; under GiB/GPU: the spare share of GPU memory (or of host RAM when that is smaller)"
    for it in items:
        row = [str(it["rank"]), it["summary"], plus_minus(it["tokens_per_s"], it.get("interval"), "tokens_per_s", wrap=not wide)]
        if wide:
            row.append(f"{it['step_time_s']:.3f}")
        m = it.get("memory_margin")  # the smaller spare share, GPU or host: the pick's headroom
        spare = f"\n{m['spare']:.0%} {'host' if m['of'] == 'host' else 'free'}" if m else ""
        row.append(f"{it['peak_mem_gib']:.1f}/{it['capacity_gib']:.0f}{spare}")
        row.append(f"{it['host_mem_gib']:.0f}" if it.get("host_mem_gib") else "-")
        if has_mfu:
            row.append(f"{it['mfu']:.0%}" if it.get("mfu") is not None else "-")
        if wide:
            row.append("[green]yes[/]" if it["fits"] else "[red]no[/]")
        row.append(it["why"] if wide else it["why_short"])
        t.add_row(*row)
    # piped or redirected, --wide means every column unwrapped; on a terminal the terminal decides
    out = console if console.is_terminal or not wide else Console(highlight=False, width=max(console.width, 220))
    out.print(t)


def _gpus_text(header: dict[str, Any]) -> str:
    """'8× H100 …', or '4 nodes × 8× H100 …'."""
    if header.get("nodes"):
        return f"{header['nodes']} nodes × {header['gpus_per_node']}× {header['gpu']}"
    return f"{header['gpus']}× {header['gpu']}"


def _nothing_fits(spec: SearchSpec, ev: Evaluator, header: dict[str, Any], as_json: bool) -> None:
    """What would fit (more GPUs, QLoRA, shorter sequences) and the leanest option now; the command then exits 1."""
    lean = smallest_footprint(ev)
    options = alternatives(spec, lambda s: Evaluator(s, ev.eff, ev.profile, ev.traces))
    lean_d = None
    if lean:
        c = ev.predict(lean[0])  # pageable where the pinned buffers overfill the host, as the search takes it
        lean_d = {"configuration": describe(c.case), "peak_mem_gib": lean[1], "usable_gib": ev.limit_gib,
                  "why_not": c.prediction.why_not_fits}
    if as_json:
        print(json.dumps({**header, "recommendations": [], "nothing_fits": True, "leanest": lean_d, "would_fit": options}, indent=2))
        return
    console.print(f"[bold red]Nothing fits[/] {header['model']} {spec.task} on {_gpus_text(header)} at seq {spec.seq_len}.")
    if lean_d:
        console.print(f"Leanest configuration: {lean_d['configuration']}: {lean_d['why_not'] or 'needs %.1f GiB per GPU' % lean_d['peak_mem_gib']}.")
    if options:
        t = Table(title="What would fit", title_justify="left")
        for col in ("change", "best configuration then", "tokens/s", "GiB/GPU"):
            t.add_column(col)
        for o in options:
            t.add_row(o["change"], o["configuration"], f"{o['tokens_per_s']:,.0f}", f"{o['peak_mem_gib']:.1f}")
        console.print(t)
    else:
        console.print("No single change (more GPUs, QLoRA, half the sequence length) makes it fit.")
