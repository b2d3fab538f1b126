"""Two one-H200 questions of 2026-11-29 (fifteenth session), each grid predicted and stored before it ran:

- ``h200-study-quant``: the study's "Q" pre-training (the NF4 base, embeddings, head and norms trained, DeepSpeed
  without ZeRO) of Llama-2-7B and -13B over the micro-batch, with and without recomputation. One GPU has no all-reduce:
  these are the compute and memory of the Q rows the study's PCIe boxes are predicted 45-62% too slow on. Joined the fit.
- ``h200-zero2-offload-accum-2``: ZeRO-1/2 with the optimizer offloaded under gradient accumulation (Llama-3.2-1B,
  pageable and pinned, 16-bit and fp32 accumulation). Its runs set four rules (``TrainSetup.zero2_accumulates_on_host``,
  ``models.memory.accumulated_grads_kept_bytes``, the node-shared ``pageable_copy_node_gbs``) and joined the fit.
- ``h200-zero2-offload-accum-3``: held out, stored before with those rules: other models and accumulation counts.

    python -m tests.benchmarks.quant_and_accum > tests/benchmarks/quant_and_accum.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid


def main() -> None:
    date = "2026-11-29"
    compare_grid("h200-study-quant", "one H200, the study's Q pre-training (in the fit since)", "h200x1", date=date)
    compare_grid("h200-zero2-offload-accum-2", "one H200, ZeRO-1/2 offload under accumulation (set the rules, in the fit)",
                 "h200x1", date=date)
    compare_grid("h200-zero2-offload-accum-3", "one H200, ZeRO-1/2 offload under accumulation, held out", "h200x1",
                 measured=f"logs/h200-zero2-offload-accum-3-{date}.jsonl", date=date)


if __name__ == "__main__":
    main()
