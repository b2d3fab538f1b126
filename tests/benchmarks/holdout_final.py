"""Fourteen runs on one H100, 2026-11-24, in shapes no fit or fix had seen (QLoRA on routed experts and latent
attention, LoRA on DeepSpeed, PyTorch full with recomputation, sliding windows past and below their length), predicted
by the final code and fit and stored before they ran
(``knowledge/measurements/own/logs/h100-holdout-final-predictions-2026-11-24.jsonl``). "Code of today" differs from
"stored before" only by what changed after the runs.

    python tests/benchmarks/holdout_final.py > tests/benchmarks/holdout_final.out.txt
"""

from __future__ import annotations

from tests.benchmarks.new_families import compare

if __name__ == "__main__":
    compare("h100-holdout-final-2026-11-24.jsonl", "h100-holdout-final-predictions-2026-11-24.jsonl")
