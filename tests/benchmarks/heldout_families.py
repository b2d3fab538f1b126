"""Thirteen model types never run before (transformers 5.17's default configs of Gemma, GLM, Hunyuan-dense, VaultGemma,
DiffLlama, Jais-2, MiniCPM3, Youtu, PhiMoE, Llama-4 text, EXAONE-MoE, GLM-4.7-Flash, AFMoE; the MoE ones cut to a few
layers) on one H100, 2026-11-27: PyTorch/PEFT and DeepSpeed, LoRA, QLoRA and full, recomputation, ZeRO-2 and ZeRO-3
offload, one case at the GPU's boundary. The predictions were stored before the runs by the code of commit 232402a
(``knowledge/measurements/own/logs/h100-heldout-families-{a,b}-predictions[-profile]-2026-11-27.jsonl``); no fit and
no fix had seen these types. The "code of today" column changes only where code changed after the runs.

    python -m tests.benchmarks.heldout_families > tests/benchmarks/heldout_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.unseen_families import main

if __name__ == "__main__":
    main(("h100-heldout-families-a", "h100-heldout-families-b"), "h100x1", "2026-11-27")
