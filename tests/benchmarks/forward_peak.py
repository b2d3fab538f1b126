"""PyTorch full training with recomputation on five shapes (Qwen3-1.7B, OLMo-2-1B, StableLM-2-1.6B, Pythia-1.4B,
Gemma-3-1B) on one H100, 2026-11-24, predicted with the forward-peak term (``models.memory.forward_peak_extra``) and
stored before the run (``knowledge/measurements/own/logs/h100-forward-peak-predictions-2026-11-24.jsonl``). Two were
called out of memory and ran out; OLMo-2 and StableLM-2 peaked 5% above the stored prediction, in backward (the loss's
two fp32 gradients, ``LOSS_BACKWARD_BYTES_PER_VOCAB``, added after these runs: "code of today" is not held out for it).

    python -m tests.benchmarks.forward_peak > tests/benchmarks/forward_peak.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare

if __name__ == "__main__":
    compare(["h100-forward-peak-2026-11-24.jsonl"], ["h100-forward-peak-predictions-2026-11-24.jsonl"])
