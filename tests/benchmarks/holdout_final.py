"""Twenty-five runs on one H100, 2026-11-24, in shapes no fit or fix had seen, predicted by the final code and fit and
stored before they ran (``knowledge/measurements/own/logs/h100-holdout-final*-predictions-2026-11-24.jsonl``):
- the first grid: QLoRA on routed experts and latent attention, LoRA on DeepSpeed, PyTorch full with recomputation,
  sliding windows past and below their length;
- the second: CPU offload of the new families (ZeRO-1/2 optimizer, ZeRO-3 optimizer and parameters), 1k and 8k
  sequences, LoRA under ZeRO-1/2, QLoRA with recomputation.
"Code of today" differs from "stored before" only by what changed after the runs.

    python tests/benchmarks/holdout_final.py > tests/benchmarks/holdout_final.out.txt
"""

from __future__ import annotations

from tests.benchmarks.new_families import compare

if __name__ == "__main__":
    for name in ("h100-holdout-final", "h100-holdout-final-2"):
        print(f"== {name}")
        compare(f"{name}-2026-11-24.jsonl", f"{name}-predictions-2026-11-24.jsonl")
        print()
