"""ZeRO-3 with only the optimizer offloaded, against ZeRO-2's offload, on one H200 (2026-11-28, fourth): grid
``h200-zero3-offload-optimizer`` (Llama-3.2-3B with and without recomputation, on 16 threads and on one; LFM2-2.6B and
Qwen3-4B from their configs). The fitted ``zero3_offload_opt_overhead`` (2.1: ZeRO-3's optimizer phase over ZeRO-2's
CPU Adam) sat between an H100 lease's rows (2.5x, with recomputation) and LFM2's two-GPU row (1.3x, without); here
the phase is 2.2x ZeRO-2's for Llama-3.2-3B and 1.8x for LFM2 on 16 threads, with or without recomputation, and 1.8x
on one thread. Predictions were stored before the runs (without a profile and with the bundled h200x1 profile), then
scored here held out; the rows were moved into the fit after (``knowledge/measurements/own``).

    python -m tests.benchmarks.zero3_offload_optimizer > tests/benchmarks/zero3_offload_optimizer.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare

RUNS = "logs/h200-zero3-offload-optimizer-2026-11-28.jsonl"


def main() -> None:
    for label, preds, profile in (
            ("without a profile", "h200-zero3-offload-optimizer-predictions-2026-11-28.jsonl", None),
            ("with the bundled h200x1 profile", "h200-zero3-offload-optimizer-predictions-profile-2026-11-28.jsonl", "h200x1")):
        print(f"== {label}")
        compare([RUNS], [preds], profile)
        print()


if __name__ == "__main__":
    main()
