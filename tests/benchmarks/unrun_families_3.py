"""Twelve model types never run before (2026-11-29), from their config classes' defaults: grid
``h200-unrun-families-3`` on one H200 (Qwen3.5-MoE, MiMo-V2-Flash, Hunyuan v3 and v4, DeepSeek-V3.2, AXK2, MiniMax-M3
text, Gemma-4 unified text, HRM text, ModernBERT's decoder, GPT-1, CPM-Ant), PyTorch/PEFT and DeepSpeed ZeRO-0/2/3, LoRA,
QLoRA and full. Predictions stored before the runs (without a profile and with the bundled h200x1 one): a blind test
of the trace on families no fit or fix had seen.

    python -m tests.benchmarks.unrun_families_3 > tests/benchmarks/unrun_families_3.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid

GRID = "h200-unrun-families-3"


def main() -> None:
    # the rows as run (logs/, with the ZeRO-3 case the harness crashed before its first step); fitted: own/, without it
    compare_grid(GRID, "one H200, model types never run", "h200x1", measured=f"logs/{GRID}-2026-11-29.jsonl", date="2026-11-29")


if __name__ == "__main__":
    main()
