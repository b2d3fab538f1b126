"""Engine-style serving of the families outside the catalog, predicted before the runs, against what they measured.

Each call on a lent GPU first stored ``advisor predict --json`` of its cases as a user gives them (a config.json, no
``engine`` field: vLLM), with the code and fit of that moment (``knowledge/measurements/own/logs/<gpu>-engine-families-
predictions-<date>.jsonl``, one line per case id), then ran ``probes.engine_sweep`` over the same models, batches and KV lengths
(``knowledge/measurements/own/<gpu>-engine-families-<date>.jsonl``: vLLM's decoder structure in torch, fused MoE by
grouped GEMMs, CUDA-graph decode, prefill in chunks of 8,192 tokens). Prints decode-step and prefill errors per family
and GPU with n, the signed mean (+ = predicted slower than measured) and the worst case, then today's code on the same
rows.

    python tests/benchmarks/engine_families.py > tests/benchmarks/engine_families.out.txt
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"
FIELDS = ("decode_step_s", "prefill_s")
# 2026-11-28: grids 4 and 5 predicted after the MoE routing's bytes; grid 6 after the rotary's bytes and the head size's
# attention rate too (each grid's predictions stored before its call, with that moment's code and fit)
# 2026-12-07: grid 7 (Gemma-3, never run) predicted after the serving cache's own layout and the windows' attention work;
# grid 8 (Gemma-3 again, Gemma-2-2B and StarCoder2 at 2k and 8k) after the engine-style decoder's windowed prefill
# skipped the tiles outside the window as FlashAttention's local attention does (grid 7 ran before that); grid 9 (grid 8's
# Gemma-3 cases, scored against grid 8's stored predictions) after the decoder ran such chunks by FlexAttention; grid 10
# the same with the mask's offsets as tensors (grid 9 had recompiled per offset)
NEWEST_GRIDS = {"engine-families-4-": "4 and 5", "engine-families-5-": "4 and 5", "engine-families-6-": "6",
                "engine-families-7-": "7", "engine-families-8-": "8", "engine-families-9-": "9",
                "engine-families-10-": "10"}
NEWEST_LABELS = {
    "4 and 5": "2026-11-28: Mixtral and Qwen3-MoE engine-style, Phi-3-mini, OLMo-2, Mistral-Nemo; Phi-4-mini, Qwen2.5-3B, "
               "SmolLM2, Qwen3-14B",
    "6": "2026-11-28: Phi-3-medium, Qwen3-1.7B, Llama-2-13B and Llama-3.2-3B engine-style",
    "7": "2026-12-07: Gemma-3-1B and the 4B's language model; the decoder masked a sliding layer's whole chunk",
    "8": "2026-12-07: Gemma-3 again, Gemma-2-2B and StarCoder2-3B; the decoder's windowed prefill one window at a time",
    "9": "2026-12-07: grid 8's Gemma-3 cases again (grid 8's predictions, stored before either ran); the decoder's "
         "windowed prefill by FlexAttention's window block mask, recompiled per chunk offset",
    "10": "2026-12-07: grid 9's cases again (grid 8's predictions, stored before any of them ran); FlexAttention's window "
          "mask with its offsets as tensors, compiled once",
}
# a grid's rows: in the fit (``own/``) or held out (``own/logs/``); not its cases, predictions or side experiments
RUNS = re.compile(r"-engine-families(-\d+)?-\d{4}-\d\d-\d\d\.jsonl$")


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def family(case: dict) -> str:
    model = case["model"]
    if not isinstance(model, str):
        return model.get("name", "inline")
    return Path(model).stem if model.endswith(".json") else model  # a catalog name keeps its dots (llama3.2-3b)


def line(label: str, errs: list[float]) -> str:
    if not errs:
        return f"  {label:34s} n=0"
    return (f"  {label:34s} MAPE {statistics.fmean(map(abs, errs)):6.1%}  signed {statistics.fmean(errs):+6.1%}  "
            f"worst {max(errs, key=abs):+6.1%}  n={len(errs)}")


def report(label: str, pairs: list[tuple[dict, dict, dict]]) -> None:
    """``pairs``: (case, prediction, measured)."""
    print(f"== {label}")
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for case, p, m in pairs:
        for f in FIELDS:
            if m.get(f) and p.get(f):
                by[(f, family(case))].append(p[f] / m[f] - 1)
                by[(f, f"all, {case['hardware']}")].append(p[f] / m[f] - 1)
                by[(f, "all")].append(p[f] / m[f] - 1)
    for f in FIELDS:
        print(f" {f}")
        for (ff, name), errs in sorted(by.items()):
            if ff == f:
                print(line(name, errs))


def main() -> None:
    from advisor.cases import check_plausible
    from advisor.predictor import Predictor
    from knowledge.schema import ServeCase

    stored, today = [], []
    new_stored: dict[str, list] = defaultdict(list)
    predictor = Predictor()
    files = sorted(OWN.glob("*-engine-families-*.jsonl")) + sorted((OWN / "logs").glob("*-engine-families-*.jsonl"))
    for runs in (f for f in files if RUNS.search(f.name)):
        newest = next((label for g, label in NEWEST_GRIDS.items() if g in runs.name), None)
        preds = OWN / "logs" / re.sub(r"-(\d{4}-\d\d-\d\d)\.jsonl$", r"-predictions-\1.jsonl", runs.name)
        before = {p["id"]: p for p in lines(preds)}
        for row in lines(runs):
            m, case = row["measured"], row["case"]
            if m.get("error") or m.get("oom"):
                print(f"not scored: {family(case)} b{case['batch_size']} p{case['prompt_len']} {case['hardware']}: "
                      f"{m.get('failure')} {str(m.get('error'))[:80]}")
                continue
            if "error" in before[case["id"]]:  # refused as advisor predict refuses it (beyond the model's context)
                print(f"not scored: {family(case)} b{case['batch_size']} p{case['prompt_len']} {case['hardware']}: "
                      f"ran, but advisor predict refuses it: {before[case['id']]['error']}")
                continue
            user = ServeCase.model_validate({k: v for k, v in case.items() if k != "engine"})  # no engine field
            check_plausible(user)
            stored.append((case, before[case["id"]], m))
            today.append((case, predictor.predict(user).model_dump(), m))
            if newest:
                new_stored[newest].append((case, before[case["id"]], m))
    report("stored before the runs", stored)
    report("code of today", today)
    for label, pairs in sorted(new_stored.items()):
        report(f"stored before the runs, grid {label} only ({NEWEST_LABELS[label]}: never run engine-style, "
               "predicted by the fit of every earlier row)", pairs)

if __name__ == "__main__":
    main()
