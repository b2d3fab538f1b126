"""Predictions stored before the runs, against what the runs measured: architectures and shapes outside the catalog
(Qwen3-4B, Phi-3-medium 14B, OLMoE 64 experts, Gemma-3's 5:1 sliding pattern, DeepSeek-V2-Lite with its own LoRA
names, ...) on one H100 and on two H200s, 2026-11-24. The predictions are the ones in
``knowledge/measurements/own/logs/*-families-validation-predictions-2026-11-24.jsonl``, written by ``advisor predict``
before each call; the code that made them is the commit that added that file. A second column
predicts the same cases with the code of today (changes made after seeing these runs are not held out).

    python tests/benchmarks/families_validation.py > tests/benchmarks/families_validation.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare, score

MACHINES = ("h100", "h200x2")

if __name__ == "__main__":
    stored, _ = compare([f"{m}-families-validation-2026-11-24.jsonl" for m in MACHINES],
                        [f"{m}-families-validation-predictions-2026-11-24.jsonl" for m in MACHINES])
    for m in MACHINES:
        prefix = {"h100": "h100v", "h200x2": "h200x2v"}[m]
        score(f"  {m}, stored", [(p, q) for p, q in stored if p["id"].startswith(prefix + "-")])
