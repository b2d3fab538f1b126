"""Five families never run before (OLMo-2, GPT-NeoX/Pythia, StableLM-2, Granite-3, StarCoder2) and Qwen1.5-MoE's
QLoRA again, on one H100, 2026-11-24: the predictions stored before the runs
(``knowledge/measurements/own/logs/h100-new-families-predictions-2026-11-24.jsonl``) and the code of today.

The code of today is not held out on these rows: the tracer's CUDA autocast rules (LayerNorm in fp32) and bitsandbytes'
output dtype were found on them (StableLM QLoRA, GPT-NeoX LoRA, StarCoder2).

    python tests/benchmarks/new_families.py > tests/benchmarks/new_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare

if __name__ == "__main__":
    compare(["h100-new-families-2026-11-24.jsonl"], ["h100-new-families-predictions-2026-11-24.jsonl"])
