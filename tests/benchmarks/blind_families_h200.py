"""Model types never run, on one H200 and on two (2026-11-29, eighteenth and nineteenth sessions), each grid predicted
and stored before it ran, without a profile and with the bundled h200x1 / h200x2 one; held out, not fitted.

- ``h200-blind-families``: GPT-Neo, Doge, GLM-4-MoE, DeepSeek-V4, Bamba and Granite-MoE-Hybrid as transformers 5.17's
  default configs. The anatomy of six of its cases (logs/h200-anatomy-30-2026-11-29.jsonl) showed the kernels the
  trace then told apart (strided memory-bound kernels, schema 19-20): its "code of today" column is not held out from
  that rule's design.
- ``h200-strided-check``: after that rule (stored with schema 19): Falcon-H1, Granite-MoE-Hybrid and Bamba in other
  configurations, Kimi-Linear, DeepSeek-V4, GPT-Neo, Doge, GLM-4-MoE QLoRA, SmolLM3, LFM2; the code before the rule
  (0d53f90) predicted it after the runs (``…-predictions-commit-0d53f90-…``).
- ``h200-offset-work-check``: after strided kernels were priced by their offset work too (schema 22) and the refit:
  Falcon-H1, Bamba and Granite-MoE-Hybrid in configurations never run.
- two H200s, ``h200x2-new-type-groups``: three jobs (GLM-4-MoE fine-tuning at 4k, GPT-Neo and Doge pre-training at 2k),
  each the configurations ``advisor recommend --hardware h200x2`` ranked first (their groups in
  ``recommend_groups.out.txt``); ``h200x2-new-type-regimes``: DeepSeek-V4 under ZeRO-3, GLM-4-MoE at 8k with
  recomputation, Kimi-Linear with the optimizer offloaded, Granite-MoE-Hybrid QLoRA under DDP, Bamba full ZeRO-3;
  ``h200x2-falcon-h1-memory``: Falcon-H1 LoRA ZeRO-2 by length (in ``layer_block.out.txt`` too).
- two H200s, ``h200x2-two-gpu-firsts`` (twentieth session): ten model types run before on one GPU only (Aya-23-8B,
  Qwen3-30B-A3B cut to 12 layers, gpt-oss-20b, MiniCPM3, Granite-3.0-3B-A800M, OLMo-1B, DeepSeek-V3 small, Arcee AFM,
  Qwen3.5, Gemma-4), in ZeRO-1/2/3, DDP, LoRA, QLoRA, full, optimizer offload, 1k-4k tokens (Gemma-4 skipped for the
  budget). Qwen3.5's miss is taken apart in ``logs/h200{,x2}-anatomy-3{1,2}-2026-11-29.jsonl``.

    python -m tests.benchmarks.blind_families_h200 > tests/benchmarks/blind_families_h200.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare, compare_grids

GRIDS = {"h200-blind-families": "one H200, six model types never run (held out)",
         "h200-strided-check": "one H200, after the strided kernels' rule (held out)",
         "h200-offset-work-check": "one H200, Mamba-2 torch path after the offset-work rule and its refit (held out)"}
TWO_GPU_GRIDS = {
    "h200x2-new-type-groups": "two H200s, recommend's picks for three model types never run on two GPUs (held out)",
    "h200x2-new-type-regimes": "two H200s, model types first run last session, in ZeRO-3, offload, 8k (held out)",
    "h200x2-falcon-h1-memory": "two H200s, Falcon-H1's memory by length (held out)",
    "h200x2-two-gpu-firsts": "two H200s, ten model types first run on two GPUs (held out)"}


def main() -> None:
    compare_grids(GRIDS, "h200x1", "2026-11-29")
    compare_grids(TWO_GPU_GRIDS, "h200x2", "2026-11-29")
    print("== h200-strided-check: the code before the strided kernels' rule (commit 0d53f90), without a profile")
    compare(["logs/h200-strided-check-2026-11-29.jsonl"], ["h200-strided-check-predictions-commit-0d53f90-2026-11-29.jsonl"],
            label="the code of 0d53f90")


if __name__ == "__main__":
    main()
