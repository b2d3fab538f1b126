"""ZeRO-3 with only the optimizer offloaded, against ZeRO-2's offload, on one H200 (2026-11-28, fourth): grid
``h200-zero3-offload-optimizer`` (Llama-3.2-3B with and without recomputation, on 16 threads and on one; LFM2-2.6B and
Qwen3-4B from their configs). The fitted ``zero3_offload_opt_overhead`` (2.1: ZeRO-3's optimizer phase over ZeRO-2's
CPU Adam) sat between an H100 lease's rows (2.5x, with recomputation) and LFM2's two-GPU row (1.3x, without); here
the phase is 2.2x ZeRO-2's for Llama-3.2-3B and 1.8x for LFM2 on 16 threads, with or without recomputation, and 1.8x
on one thread. On two H200s (``h200x2-zero3-offload-optimizer``), one thread per rank, it was 1.5x (LFM2's 1.3x
again), so the factor predicts that case 31% slow. Predictions were stored before the runs (without a profile and with the bundled h200x1 profile), then
scored here held out (this output was made while they were outside the fit); the rows were moved into the fit after (``knowledge/measurements/own``).

After these runs the extra host work is priced on at most 4 threads (``models.step_time.zero3_offload_extra_s``, refit
multiple 1.59): the "code of today" column is that, in sample.

    python -m tests.benchmarks.zero3_offload_optimizer > tests/benchmarks/zero3_offload_optimizer.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare

GRIDS = (("one H200", "h200-zero3-offload-optimizer", "h200x1"), ("two H200s", "h200x2-zero3-offload-optimizer", "h200x2"))


def main() -> None:
    for where, grid, profile in GRIDS:
        for label, preds, prof in (("without a profile", f"{grid}-predictions-2026-11-28.jsonl", None),
                                   (f"with the bundled {profile} profile", f"{grid}-predictions-profile-2026-11-28.jsonl", profile)):
            print(f"== {where}, {label}")
            compare([f"{grid}-2026-11-28.jsonl"], [preds], prof)
            print()


if __name__ == "__main__":
    main()
