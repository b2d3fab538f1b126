"""ZeRO-Offload of five families outside the catalog on one H200, 2026-11-26 (grid ``h200-offload-families``): Gemma-3-4B
from its multimodal config.json and Helium with ZeRO-2 offloading the optimizer, Granite-3.0-3B-A800M (routed experts)
likewise, Qwen3-1.7B and LFM2 with ZeRO-3 offloading parameters too, CPU Adam on the launch line's threads (one rank:
every core). Predictions stored by commit d2b1bbc, before the runs, from that commit's full refit; traced rows stay out
of every fit. LFM2 under ZeRO-3 crashed as our harness builds it (random weights under deepspeed.zero.Init: an
IndexError on an empty shard), so it has no figures. Each run beside the stored prediction and the code of today,
without and with the h200x1 profile.

    python -m tests.benchmarks.offload_families > tests/benchmarks/offload_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.unseen_families import main

if __name__ == "__main__":
    main(("h200-offload-families",), "h200x1", "2026-11-26")
