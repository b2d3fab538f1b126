"""After the trace told strided memory-bound kernels apart (schema 19) and the refit, on one H200 (2026-11-29,
eighteenth session): grid ``h200-strided-check`` (Falcon-H1's, Granite-MoE-Hybrid's and Bamba's Mamba-2 torch path,
Kimi-Linear, DeepSeek-V4, GPT-Neo, Doge, GLM-4-MoE QLoRA, SmolLM3, LFM2), stored before it ran, without a profile and
with the bundled h200x1 one. Held out: not fitted; no run of it shaped the rule (the anatomies that did are of grid
``h200-blind-families``, scored there).

    python -m tests.benchmarks.strided_check > tests/benchmarks/strided_check.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid

GRID = "h200-strided-check"


def main() -> None:
    compare_grid(GRID, "one H200, after the strided kernels' rule (held out)", "h200x1",
                 measured=f"logs/{GRID}-2026-11-29.jsonl", date="2026-11-29")


if __name__ == "__main__":
    main()
