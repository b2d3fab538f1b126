"""Benchmark: serving seven hybrid models on an H100, the cache as their own code keeps it, predicted before the runs.

Run: python -m tests.benchmarks.hybrid_serve > tests/benchmarks/hybrid_serve.out.txt   (~1 min on 2 cores)

Grid ``h100x1-hybrid-serve`` (2026-12-07, ``knowledge/measurements/own/logs/``): Qwen3-Next (12-layer cut), Nemotron-H
(12-layer cut), OLMo-Hybrid, Falcon-H1, LFM2-MoE (8-layer cuts of their defaults), Kimi-Linear (5), Qwen3.5-MoE (4), each
at batch 1, 8, 16 x 2,048 tokens and 64, 128 x 4,096 (those two decode only: ``probes.serve_sweep`` prefills at most
32,768 tokens), run by transformers (``engine: transformers``: a static cache, CUDA-graph decode) with random weights.
Their predictions were stored before the call by the code that reads the cache from the model's own code
(``probes.cache_trace``), and, for comparison, by the code before it, which gave every layer K and V.

1. **The cache**: between 64 and 128 sequences of 4,096 tokens the measured peak grows by 64 sequences' cache plus what a
   decode step's transients grow by; beside it, 64 sequences' cache as each layout counts it.
2. Decode steps, prefills and peaks per family, stored and today, with n. This runtime runs the hybrids' recurrent
   layers on transformers' torch fallbacks (no mamba-ssm, causal-conv1d or flash-linear-attention on the lent machine),
   which no server runs: the times say how far the transformers runtime's count is from them, not an engine's.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

LOGS = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own" / "logs"
GRID = "h100x1-hybrid-serve"
DATE = "2026-12-07"
STORED = {"stored (own cache)": f"{GRID}-predictions-{DATE}.jsonl",
          "stored (every layer K/V)": f"{GRID}-predictions-before-cache-layout-{DATE}.jsonl",
          "stored, bundled H100 profile": f"{GRID}-predictions-bundled-profile-{DATE}.jsonl"}
GiB = 2**30


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def family(case: dict) -> str:
    return Path(case["model"]).stem


def cache_check(rows: list[dict]) -> None:
    from advisor.predictor import Predictor
    from knowledge.catalog import resolve_model
    from models.kv_cache import kv_cache_bytes

    predictor = Predictor()
    by = {(family(r["case"]), r["case"]["batch_size"]): r["measured"] for r in rows if r["case"]["prompt_len"] == 4096}
    print("1. the cache of 64 sequences of 4,097 tokens: measured peak(b128) - peak(b64), and as each layout counts it")
    print(f"  {'model':30s} {'measured':>9s} {'own cache':>10s} {'every layer':>12s}")
    for name in sorted({f for f, _ in by}):
        a, b = by.get((name, 64)), by.get((name, 128))
        if not (a and b and a.get("peak_mem_gib") and b.get("peak_mem_gib") and not a.get("failure") and not b.get("failure")):
            why = next((m.get("error") for m in (a, b) if m and m.get("failure")), "")
            print(f"  {name:30s} not measured: {str(why)[:90]}")
            continue
        arch = predictor.serving_layout(resolve_model(f"knowledge/data/configs/{name}.json"))
        own = 64 * kv_cache_bytes(arch, 1, 16, 4097) / GiB
        every = 64 * kv_cache_bytes(arch.model_copy(update={"kv_groups": None}), 1, 16, 4097) / GiB
        grew = b["peak_mem_gib"] - a["peak_mem_gib"]
        print(f"  {name:30s} {grew:7.2f} GiB {own:7.2f} GiB {every:9.2f} GiB")


def line(label: str, errs: list[float]) -> str:
    return (f"    {label:30s} MAPE {statistics.fmean(map(abs, errs)):6.1%}  signed {statistics.fmean(errs):+6.1%}  "
            f"n={len(errs)}")


def errors(rows: list[dict], preds: dict[str, dict], field: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        m, c = r["measured"], r["case"]
        p = preds.get(c["id"])
        if m.get("failure") or not m.get(field) or not p or "error" in p or not p.get(field):
            continue
        if field == "peak_mem_gib" and m.get("prefill_s") is None:
            continue  # a decode-only point's peak has no prefill in it; the prediction's has
        e = p[field] / m[field] - 1
        out[family(c)].append(e)
        out["all"].append(e)
    return out


def main() -> None:
    from advisor.predictor import Predictor
    from knowledge.schema import ServeCase

    rows = lines(LOGS / f"{GRID}-{DATE}.jsonl")
    cache_check(rows)
    predictor = Predictor()
    sets = {label: {p["id"]: p for p in lines(LOGS / name)} for label, name in STORED.items()}
    sets["code of today"] = {r["case"]["id"]: predictor.predict_or_error(ServeCase.model_validate(r["case"])).model_dump()
                             for r in rows}
    print("\n2. per family (+ = predicted slower or larger than measured)")
    for field in ("decode_step_s", "prefill_s", "peak_mem_gib"):
        print(f"  {field}{' (points whose prefill ran)' if field == 'peak_mem_gib' else ''}")
        for label, preds in sets.items():
            print(f"   {label}")
            for name, errs in sorted(errors(rows, preds, field).items()):
                print(line(name, errs))
    print("\n3. runs that failed (transformers' torch fallbacks: the Mamba-2 scan's and the KDA's chunked tensors)")
    for r in rows:
        m, c = r["measured"], r["case"]
        if m.get("failure"):
            verdict = sets["stored (own cache)"].get(c["id"], {}).get("fits")
            asked = re.search(r"Tried to allocate ([\d.]+ \w+)", str(m.get("error")))
            stage = str(m.get("error")).split(":")[0]
            print(f"  {family(c):30s} b{c['batch_size']:<4d} p{c['prompt_len']:<5d} {m['failure']} ({stage}, asked for "
                  f"{asked.group(1) if asked else '?'}; predicted fits: {verdict})")


if __name__ == "__main__":
    main()
