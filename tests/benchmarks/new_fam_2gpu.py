"""Issue 21's shapes on two GPUs, never run on two before, 2026-11-27: Qwen3-14B (q/k norms, 14B), Mistral-Nemo-12B (a
131k vocabulary, heads narrower than hidden / heads), Phi-4-mini (fused projections, GQA, a tied 200k vocabulary),
SmolLM2-1.7B (a small tied-embedding Llama config.json), Phi-3-medium and Qwen3-1.7B/8B; DeepSpeed ZeRO-0/1/2/3 and
PyTorch DDP, LoRA, QLoRA and full, one ZeRO-Offload. Run as two pairs of a four-H200 machine side by side
(``probes/device_pairs.sh``). Each run beside the prediction stored before it ran and the code of today, without and
with the h200x2 profile:

- grids ``h200x2-new-fam-a`` and ``-b``: stored by commit bd539eb, before any of these runs;
- grids ``h200x2-new-fam-2a`` and ``-2b``: stored by the same code (commit 5efde2b), after the first grids ran;
- grid ``h200x2-new-fam-3`` (a, b): stored by the code and fit that learned from the first two, run on a four-H100
  machine as ``h100x2`` (no bundled profile of that box: scored without one).

"Code of today" learned from these runs (ZeRO-3's linear and fp32 adapters, DDP's buckets, a config.json traced
whatever its family, ZeRO-3's optimizer step): it is not held out for them.

    python -m tests.benchmarks.new_fam_2gpu > tests/benchmarks/new_fam_2gpu.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare, score
from tests.benchmarks.unseen_families import main


def last_grid() -> None:
    print("== grid h200x2-new-fam-3, run as h100x2, without profile")
    stored, _ = compare(["h100x2-new-fam-3a-2026-11-27.jsonl", "h100x2-new-fam-3b-2026-11-27.jsonl"],
                        ["h100x2-new-fam-3a-predictions-2026-11-27.jsonl", "h100x2-new-fam-3b-predictions-2026-11-27.jsonl"])
    rest = [(p, m) for p, m in stored if "-lora-z3" not in p["id"]]
    score("stored before, without LoRA under ZeRO-3", rest)


if __name__ == "__main__":
    main(("h200x2-new-fam-a", "h200x2-new-fam-b", "h200x2-new-fam-2a", "h200x2-new-fam-2b"), "h200x2", "2026-11-27")
    last_grid()
