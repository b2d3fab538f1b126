"""Model types never run on two GPUs (2026-11-29, nineteenth session), each grid predicted and stored before it ran,
without a profile and with the bundled h200x2 one; held out, not fitted.

- ``h200x2-new-type-groups``: three jobs (GLM-4-MoE fine-tuning at 4k, GPT-Neo and Doge pre-training at 2k), each the
  configurations ``advisor recommend --hardware h200x2`` ranked first (their groups in ``recommend_groups.out.txt``).
- ``h200x2-new-type-regimes``: DeepSeek-V4 under ZeRO-3, GLM-4-MoE at 8k with recomputation, Kimi-Linear with the
  optimizer offloaded, Granite-MoE-Hybrid QLoRA under DDP, Bamba full ZeRO-3.
- ``h200x2-falcon-h1-memory``: Falcon-H1 LoRA ZeRO-2 at 1k, 1.5k, and 1.5k and 2k with recomputation: its memory by
  length (the last predicted not to fit).

    python -m tests.benchmarks.new_types_2gpu > tests/benchmarks/new_types_2gpu.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grids

GRIDS = {"h200x2-new-type-groups": "two H200s, recommend's picks for three model types never run on two GPUs (held out)",
         "h200x2-new-type-regimes": "two H200s, model types first run last session, in ZeRO-3, offload, 8k (held out)",
         "h200x2-falcon-h1-memory": "two H200s, Falcon-H1's memory by length (held out)"}


def main() -> None:
    compare_grids(GRIDS, "h200x2", "2026-11-29")


if __name__ == "__main__":
    main()
