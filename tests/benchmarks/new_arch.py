"""Thirteen families no run of ours had seen, on one H200, 2026-11-25 (evening): Gemma-3-4B given as its multimodal
config.json (its language model trains), Gemma-4 (per-layer head sizes, per-layer input embeddings), Qwen3.5 (gated
delta-net layers, run by transformers' torch fallback), Ministral-3, OLMo-3, Apertus (xIELU), EXAONE-4, Arcee (ReLU²),
LFM2 (short convolutions), ERNIE-4.5-MoE, Helium, Seed-OSS (attention dropout), Cohere2, OPT-1.3B (LayerDrop) and GPT-OSS-20B (attention sinks, biased experts).
Configs in knowledge/data/configs (the config classes' defaults where no published config.json was at hand). Three
grids of ``probes.grids``, each with its predictions stored before it ran: ``h200-new-arch`` (commit 194925e),
``h200-new-arch-2`` (7db0cc8: kernels per chunk of a scan), ``h200-new-arch-3`` (849833e: heads over 256 at the
memory-efficient kernel's own rates, fitted on an anatomy of grid 1's Gemma-4 4k step), ``h200-new-arch-4`` (0133ad5:
GPT-OSS-20B in bf16, after dropout was traced as CUDA fuses it). Each run beside the stored
prediction and the code of today, without and with the h200x1 profile; the signed error per run and the scores per
family.

    python -m tests.benchmarks.new_arch > tests/benchmarks/new_arch.out.txt
"""

from __future__ import annotations

from tests.benchmarks.unseen_families import main

if __name__ == "__main__":
    main(("h200-new-arch", "h200-new-arch-2", "h200-new-arch-3", "h200-new-arch-4"), "h200x1", "2026-11-25")
