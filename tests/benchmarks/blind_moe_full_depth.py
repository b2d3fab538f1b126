"""Issue 21's expert-routed, latent-attention and hybrid families as whole models on one card (2026-12-08, grid
``{h100,h200}-blind-moe-full-depth``): Qwen3-30B-A3B LoRA and QLoRA at the 80 GB card's edge, gpt-oss-20b LoRA and
QLoRA, DeepSeek-V2-Lite LoRA under ZeRO-2 and under ZeRO-3 with its optimizer offloaded, Granite-3.0-MoE full with the
optimizer offloaded, OLMoE QLoRA at 4k, Qwen1.5-MoE LoRA under ZeRO-3, Youtu and Qwen3.5 (gated delta layers). The
predictions were stored on 2026-12-08 (ac2e386) before any machine ran them: without a profile, with the bundled
profile, and with the lease's own (``advisor probe --quick`` there, written on the device before the runs).

    python -m tests.benchmarks.blind_moe_full_depth h100 > tests/benchmarks/blind_moe_full_depth_h100.out.txt
"""

from __future__ import annotations

import sys

from tests.benchmarks.stored_predictions import compare_one_card

DATE = "2026-12-08"
FAMILIES = (("q3moe", "qwen3_moe"), ("oss", "gpt_oss"), ("dsv2", "deepseek_v2 (latent attention)"),
            ("gmoe", "granitemoe"), ("olmoe", "olmoe"), ("moe", "qwen2_moe"), ("youtu", "youtu"),
            ("q35", "qwen3_5_text (gated delta)"))


def family(cid: str) -> str:
    """The case's model family from its id (``h100bmf-FAMILY-…``)."""
    key = cid.split("-")[1]
    return next(label for k, label in FAMILIES if k == key)


def main(gpu: str) -> None:
    compare_one_card(gpu, "blind-moe-full-depth", DATE, family)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "h100")
