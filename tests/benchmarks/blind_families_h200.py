"""Model types never run, on one H200 (2026-11-29, eighteenth session), each grid predicted and stored before it ran,
without a profile and with the bundled h200x1 one; held out, not fitted.

- ``h200-blind-families``: GPT-Neo, Doge, GLM-4-MoE, DeepSeek-V4, Bamba and Granite-MoE-Hybrid as transformers 5.17's
  default configs. The anatomy of six of its cases (logs/h200-anatomy-30-2026-11-29.jsonl) showed the kernels the
  trace then told apart (strided memory-bound kernels, schema 19-20): its "code of today" column is not held out from
  that rule's design.
- ``h200-strided-check``: after that rule (stored with schema 19): Falcon-H1, Granite-MoE-Hybrid and Bamba in other
  configurations, Kimi-Linear, DeepSeek-V4, GPT-Neo, Doge, GLM-4-MoE QLoRA, SmolLM3, LFM2; the code before the rule
  (0d53f90) predicted it after the runs (``…-predictions-commit-0d53f90-…``).
- ``h200-offset-work-check``: after strided kernels were priced by their offset work too (schema 22) and the refit:
  Falcon-H1, Bamba and Granite-MoE-Hybrid in configurations never run.

    python -m tests.benchmarks.blind_families_h200 > tests/benchmarks/blind_families_h200.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare, compare_grids

GRIDS = {"h200-blind-families": "one H200, six model types never run (held out)",
         "h200-strided-check": "one H200, after the strided kernels' rule (held out)",
         "h200-offset-work-check": "one H200, Mamba-2 torch path after the offset-work rule and its refit (held out)"}


def main() -> None:
    compare_grids(GRIDS, "h200x1", "2026-11-29")
    print("== h200-strided-check: the code before the strided kernels' rule (commit 0d53f90), without a profile")
    compare(["logs/h200-strided-check-2026-11-29.jsonl"], ["h200-strided-check-predictions-commit-0d53f90-2026-11-29.jsonl"],
            label="the code of 0d53f90")


if __name__ == "__main__":
    main()
