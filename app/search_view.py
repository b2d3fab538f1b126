"""The training recommendation as plain rows: advisor.search + advisor.explain, as `advisor recommend` uses them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.explain import alternatives, describe, smallest_footprint, why
from advisor.search import Evaluator, SearchSpec, run_search
from advisor.train_recommend import fold_equivalent, launch_line, plus_minus, usage_note
from knowledge.efficiency import load_efficiencies
from models.deepspeed_config import deepspeed_config


def train_recommendations(hardware: str, model: str | dict, task: str, gpus: int | None, seq_len: int,
                          lora_rank: int, top: int = 10) -> dict[str, Any]:
    """Ranked table rows, the top pick's DeepSpeed JSON and launch line, or what would fit instead."""
    spec = SearchSpec(hardware=hardware, model=model, task=task, gpus=gpus, seq_len=seq_len, lora_rank=lora_rank)  # type: ignore[arg-type]
    eff = load_efficiencies()
    ranked, ev, facts = run_search(spec, eff)
    out: dict[str, Any] = {"facts": facts, "gpu": ev.platform.gpu.name, "gpus": ev.gpus, "model": ev.arch.name, "rows": []}
    if not ranked:
        lean = smallest_footprint(ev)
        out["leanest"] = (describe(lean[0]), lean[1], ev.limit_gib) if lean else None
        out["would_fit"] = alternatives(spec, lambda s: Evaluator(s, ev.eff, ev.profile, ev.traces))
        return out
    best = ranked[0]
    for rank, (c, stages) in enumerate(fold_equivalent(ranked)[:top], start=1):
        p = c.prediction
        label = f"ZeRO {'/'.join(map(str, stages))}" if len(stages) > 1 else None
        out["rows"].append({
            "#": rank, "configuration": describe(c.case, label), "tokens/s": plus_minus(p.tokens_per_s, p.interval, "tokens_per_s"),
            "step time (s)": round(p.step_time_s, 3), "GiB per GPU": round(p.peak_mem_gib, 1),
            "of GiB": round(p.capacity_gib or 0), "host RAM (GiB)": round(p.host_mem_gib, 1) if p.host_mem_gib else None,
            "why": why(rank, p, best.prediction, c.case),
        })
    cfg_path = Path("ds_config.json")
    out["top_case"] = best.case.model_dump(mode="json")
    out["launch"] = launch_line(best, ev.gpus, cfg_path, ev.platform)
    out["usage"] = usage_note(best, cfg_path, ev.platform.gpu.supports_bf16)
    out["deepspeed_json"] = (json.dumps(deepspeed_config(best.case, ev.platform.gpu, ev.gpus), indent=2)
                             if best.case.engine == "deepspeed" else None)
    return out
