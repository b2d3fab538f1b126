"""Eager attention against SDPA at 4,096 tokens on one H200 (2026-11-28, fifth): grid ``h200-eager-small``, PyTorch/PEFT
runs of small models with few heads (Gemma-3-1B LoRA eager and SDPA, Qwen3-1.7B LoRA, Gemma-2-2B LoRA, SmolLM2-1.7B
full, Qwen3-4B LoRA predicted not to fit), after Gemma-3-1B LoRA with eager attention came out 37% optimistic on two
H200s (``long_seq``). Predictions stored before the runs (without a profile and with the bundled h200x1 one); the rows
stay held out (``knowledge/measurements/own/logs/``, not fitted).

    python -m tests.benchmarks.eager_small > tests/benchmarks/eager_small.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid

GRID = "h200-eager-small"


def main() -> None:
    compare_grid(GRID, "one H200, 4,096 tokens", "h200x1", measured=f"logs/{GRID}-2026-11-28.jsonl")


if __name__ == "__main__":
    main()
