"""Six model types never run, on one H200 (2026-11-29, eighteenth session): GPT-Neo, Doge, GLM-4-MoE, DeepSeek-V4,
Bamba and Granite-MoE-Hybrid as transformers 5.17's default configs (grid ``h200-blind-families``), predicted and
stored before they ran, without a profile and with the bundled h200x1 one. Held out: not fitted.

    python -m tests.benchmarks.blind_families_h200 > tests/benchmarks/blind_families_h200.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid

GRID = "h200-blind-families"


def main() -> None:
    compare_grid(GRID, "one H200, six model types never run (held out)", "h200x1",
                 measured=f"logs/{GRID}-2026-11-29.jsonl", date="2026-11-29")


if __name__ == "__main__":
    main()
