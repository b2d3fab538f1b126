"""Issue 21's judged regimes on whole models (2026-12-07, grid ``{h100,h200}-blind-full-depth``): full training with
the optimizer offloaded (ZeRO-2) and with optimizer and parameters offloaded (ZeRO-3), LoRA under ZeRO-3 with and
without its optimizer offloaded, QLoRA at 8k, and the fit boundary of one 80 GB card, on models from their hub
configs (Qwen3-4B/8B/14B, Phi-4-mini, Mistral-NeMo-12B, Gemma-2-9B, Phi-3-medium, SmolLM3-3B). The predictions were
stored on 2026-12-07 (694dc0d), a session before any machine ran them: without a profile, with the bundled profile,
and with the lease's own (``advisor probe --quick`` there, written on the device before the runs).

    python -m tests.benchmarks.blind_full_depth h100 > tests/benchmarks/blind_full_depth_h100.out.txt
"""

from __future__ import annotations

import sys

from tests.benchmarks.stored_predictions import compare_one_card

DATE = "2026-12-07"
REGIMES = (("offall", "ZeRO-3, optimizer and parameters offloaded"), ("offopt", "optimizer offloaded"),
           ("qlora", "QLoRA"), ("lora", "LoRA"), ("full", "full"))


def regime(cid: str) -> str:
    """The case's regime from its id (the first that applies)."""
    return next(label for key, label in REGIMES if f"-{key}-" in cid or cid.endswith(key))


def main(gpu: str) -> None:
    compare_one_card(gpu, "blind-full-depth", DATE, regime)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "h100")
