"""ZeRO-3 with optimizer and parameters offloaded as the study ran it (pageable buffers, one OpenMP thread a rank, 350
tokens) over the micro-batch (1, 16, 64 with recomputation) and under accumulation (1 x 4), with a pinned pair, on one
H200 (2026-11-29): grid ``h200-study-offload-batch``. Issue 23 reports the study's 13B rows barely speeding up with the
micro-batch; here the step stayed flat (12.0, 11.4, 12.1 s at mb 1, 16, 64), as the model has it. Predictions stored
before the runs; the runs then changed two rules (ZeRO-3's parameter fetches do not slow down pageable; its gradients
go to the host every micro-batch) and joined the fit, so the code of today's column is in sample.

    python -m tests.benchmarks.study_offload_batch > tests/benchmarks/study_offload_batch.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_grid


def main() -> None:
    grid = "h200-study-offload-batch"
    compare_grid(grid, "one H200, ZeRO-3 offload as the study ran it", "h200x1", measured=f"{grid}-2026-11-29.jsonl",
                 date="2026-11-29")


if __name__ == "__main__":
    main()
