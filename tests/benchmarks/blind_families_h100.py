"""Model types on one H100 (2026-12-07, twenty-fifth session), grid ``h100-blind-families-3``: three never run
anywhere (Ministral as transformers 5.17's defaults, dots.llm1 cut to 4 layers, Nemotron-H's hybrid of Mamba-2, MoE,
attention and MLP layers), five run only on H200s before (Apertus at 8k under ZeRO-3 with recomputation, EXAONE-4
QLoRA with recomputation, Ministral-3 with eager attention, Helium full with the optimizer offloaded, Gemma-4 LoRA at
4k near the memory limit) and Granite-3.0-3B-A800M's QLoRA, which ran 24% faster than predicted on an H200 while its
experts were priced as 4-bit projections (trace schema 25 tells a product by its weight's storage). Stored before the
runs, after schema 25 and its refit: without a profile, with the bundled h100x1 one, and with the lease's own
(``advisor probe --quick`` there, written on the device before the runs).

    python -m tests.benchmarks.blind_families_h100 > tests/benchmarks/blind_families_h100.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_three_ways

GRID, DATE = "h100-blind-families-3", "2026-12-07"
NEVER_RUN = ("ministral-", "dots1-", "nemotronh-")  # id fragments of the model types no grid had run


def main() -> None:
    compare_three_ways(GRID, DATE, "one H100", "h100x1", f"h100x1-profile-blind-3-{DATE}.json",
                       lambda cid: "never run anywhere" if any(f"bf3-{x}" in cid for x in NEVER_RUN)
                       else "run on H200s only")


if __name__ == "__main__":
    main()
