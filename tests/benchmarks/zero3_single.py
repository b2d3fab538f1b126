"""DeepSpeed ZeRO-3 and ZeRO-1 without offload on one H200 (2026-11-29): grid ``h200-zero3-single``, popular families
(Qwen3 1.7-14B, Phi-3-mini, Phi-4-mini with ``all-linear``, Gemma-2 2B and 9B, Gemma-3-1B, Mistral-Nemo-12B at 4k,
OLMoE, DeepSeek-V2-Lite, SmolLM2), LoRA and full, a setting issue 21's runs name (ZeRO 0-3 on one GPU) where the traced
runs had four rows; then ``h200-zero3-single-2``, what it left open (Phi-4-mini's default targets, ``all-linear`` on
Qwen3-8B and Gemma-2-2B, ZeRO-2 beside ZeRO-3, Qwen3.5-MoE under ZeRO-3 after the harness's zero.Init fix, Hunyuan v4
and AXK2 under PyTorch), on a second lease. Predictions stored before the runs (without a profile and with the bundled
h200x1 one); the second grid's with one rank's ZeRO-3 gathering in place. Both were then fitted; ``h200-zero3-single-3``
(four other families) was stored by that refit and stays held out (``logs/``).

    python -m tests.benchmarks.zero3_single > tests/benchmarks/zero3_single.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid

GRIDS = {"h200-zero3-single": "", "h200-zero3-single-2": "", "h200-zero3-single-3": "logs/"}  # grid -> where its rows are


def main() -> None:
    for grid, folder in GRIDS.items():
        compare_grid(grid, "one H200, ZeRO-1/3 without offload", "h200x1", measured=f"{folder}{grid}-2026-11-29.jsonl",
                     date="2026-11-29")


if __name__ == "__main__":
    main()
