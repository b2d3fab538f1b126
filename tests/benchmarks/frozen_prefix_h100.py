"""Layers that run no backward, on one H100 (2026-12-07, twenty-sixth session), grid ``h100-frozen-prefix``: after trace
schema 26 (a model's layers before its first trained one run no backward and keep nothing; the head part signed), two
Nemotron-H layer patterns never run (24 layers traced one layer per kind, seven before the first attention layer; 12
layers repeating every five, three before it), Nemotron-H's defaults at 4k and under QLoRA, the 24-layer pattern with
recomputation (every layer runs backward), Qwen3-Next and Qwen3.5 under ZeRO-2 (three delta-net layers before the first
attention one), Gemma-4 at 8k near the memory limit and Granite-3.0-3B-A800M's QLoRA again. Stored before the runs:
without a profile, with the bundled h100x1 one, and with the lease's own (``advisor probe --quick`` there).

    python -m tests.benchmarks.frozen_prefix_h100 > tests/benchmarks/frozen_prefix_h100.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare_three_ways

GRID, DATE = "h100-frozen-prefix", "2026-12-07"


def main() -> None:
    compare_three_ways(GRID, DATE, "one H100", "h100x1", f"h100x1-profile-frozen-prefix-{DATE}.json",
                       lambda cid: "Nemotron-H" if "-nh" in cid else "others")


if __name__ == "__main__":
    main()
