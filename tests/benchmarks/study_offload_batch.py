"""ZeRO-3 with optimizer and parameters offloaded as the study ran it (pageable buffers, one OpenMP thread a rank, 350
tokens) over the micro-batch (1, 16, 64 with recomputation) and under accumulation (1 x 4), with a pinned pair, on one
H200 (2026-11-29): grid ``h200-study-offload-batch``. Issue 23 reports the study's 13B rows barely speeding up with the
micro-batch; here the step stayed flat (12.0, 11.4, 12.1 s at mb 1, 16, 64), as the model has it. Predictions stored
before the runs; the runs then changed two rules (ZeRO-3's parameter fetches do not slow down pageable; its gradients
go to the host every micro-batch) and joined the fit, so the code of today's column is in sample. Held out from both:
the 2x H200 ZeRO-3 offload pair of 2026-11-28 (Llama-2-7B, pinned and pageable, one thread a rank, ``logs/``), and
``h200-zero2-offload-accum`` (ZeRO-2 offload, stored before, ``logs/``). Sixteenth session: the first grid's backward
times set ``models.step_time.offload_grad_copy_bytes`` (each micro-batch's 16-bit round trip through the host buffer,
the fp32 partition once); ``h200-zero3-offload-copies`` was stored before with it and held out (``logs/``), and ``h200-zero3-offload-small``
after ``models.memory.offload_grad_transient_bytes`` too.

    python -m tests.benchmarks.study_offload_batch > tests/benchmarks/study_offload_batch.out.txt
"""

from __future__ import annotations

from advisor.evaluation import with_omp_threads
from advisor.predictor import Predictor
from knowledge.schema import Measurement, TrainCase
from tests.benchmarks.stored_predictions import OWN, compare_grid, lines


def held_out_pair() -> None:
    """The 2x H200 ZeRO-3 offload pair, each predicted with the one OpenMP thread a rank it ran on."""
    print("== logs/h200x2-pin-memory-z3o-2026-11-28.jsonl: 2x H200, Llama-2-7B ZeRO-3 offload, held out")
    predictor = Predictor()
    for row in lines(OWN / "logs" / "h200x2-pin-memory-z3o-2026-11-28.jsonl"):
        m = Measurement.model_validate(row)
        p = predictor.predict(TrainCase.model_validate(with_omp_threads(m)))
        print(f"{m.case['id']:42s} measured {m.measured.step_time_s:6.2f} s  today {p.step_time_s:6.2f} s "
              f"({p.step_time_s / m.measured.step_time_s - 1:+.1%})  host {m.measured.host_peak_gib:6.1f} / {p.host_mem_gib:6.1f} GiB")
    print("(stored before, 2026-11-28, at one thread: pinned 10.84 s, pageable 16.50 s: -3% and +29% in step time)")
    print()


def main() -> None:
    grid = "h200-study-offload-batch"
    compare_grid(grid, "one H200, ZeRO-3 offload as the study ran it", "h200x1", measured=f"{grid}-2026-11-29.jsonl",
                 date="2026-11-29")
    held_out_pair()
    compare_grid("h200-zero3-offload-copies", "one H200, ZeRO-3 offload's gradient copies (held out)", "h200x1",
                 measured="logs/h200-zero3-offload-copies-2026-11-29.jsonl", date="2026-11-29")
    compare_grid("h200-zero3-offload-small", "one H200, ZeRO-3 offload at small batches, new families (held out)",
                 "h200x1", measured="logs/h200-zero3-offload-small-2026-11-29.jsonl", date="2026-11-29")
    compare_grid("h200-zero2-offload-accum", "one H200, ZeRO-2 offload under accumulation (held out)", "h200x1",
                 measured="logs/h200-zero2-offload-accum-2026-11-29.jsonl", date="2026-11-29")


if __name__ == "__main__":
    main()
