"""Two H200s at 8,192 tokens (2026-11-28, fifth): grid ``h200x2-long-seq``, twelve runs of models outside the catalog
at the long end of issue 21's 1k-8k range, where the traced runs were fewest (one of 70 two-GPU rows): Qwen3-14B LoRA
under ZeRO-3, Mistral-Nemo-12B (131k vocabulary) LoRA ZeRO-2, Phi-4-mini (fused projections, tied 200k vocabulary)
full ZeRO-2, Qwen3-8B QLoRA DDP, DeepSeek-V2-Lite (latent attention, experts) LoRA ZeRO-2, SmolLM2-1.7B full DDP,
Gemma-2-9B LoRA ZeRO-3, Qwen1.5-MoE full ZeRO-3 (predicted not to fit), Gemma-2-2B LoRA DDP, Qwen3-4B ZeRO-Offload,
Gemma-3-1B full DDP, Qwen3-1.7B full ZeRO-3; then ``h200x2-long-seq-2``, twelve more: eager attention at 4k (Qwen3-8B
LoRA, Gemma-3-1B LoRA), QLoRA under ZeRO-2 (Mistral-Nemo), ZeRO-3 LoRA of latent attention (DeepSeek-V2-Lite), and runs
predicted at 67-92% of the GPU at 8k (SmolLM2 full DDP at micro-batch 2 and 3, Gemma-2-2B LoRA, Qwen3-1.7B ZeRO-3 at
micro-batch 3, Gemma-2-9B QLoRA). Predictions were stored before the runs (without a profile and with the
bundled h200x2 profile), scored here while the rows were outside the fit (this output); they were moved into the fit after
(``knowledge/measurements/own``), so a rerun's "code of today" is in sample.

The ZeRO-Offload case was stored without ``omp_threads``, so it was predicted on the launch line's 16 threads a rank,
and ran under torchrun on its default of one (the row records 1, ``probes.campaign.run_omp_threads``): its stored
prediction is of another configuration; "code of today" predicts what ran.

    python -m tests.benchmarks.long_seq > tests/benchmarks/long_seq.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid

GRIDS = (("h200x2-long-seq", "8,192 tokens"), ("h200x2-long-seq-2", "4,096-8,192 tokens, eager attention, the memory boundary"))


def main() -> None:
    for grid, what in GRIDS:
        compare_grid(grid, f"two H200s, {what}", "h200x2")


if __name__ == "__main__":
    main()
