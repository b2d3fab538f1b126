"""Twelve model types never run anywhere, on two H200s (2026-11-28, third): GPT-2, CodeGen, XGLM, BioGPT, BitNet,
Persimmon, CTRL, Kimi-Linear, MiniMax, GraniteMoE-SWA, GPT-NeoX-Japanese and CWM from their config classes' defaults
(``knowledge/data/configs/*-defaults*.json``, big ones cut to a few layers), under PyTorch DDP and DeepSpeed ZeRO-2/3
(full, LoRA, QLoRA, one optimizer offload at the harness's one thread per rank), grid ``h200x2-unrun-types``.
Predictions were stored before the runs (without a profile and with the bundled h200x2 profile), then scored here,
and once more with the quick profile of the host they ran on. Scored held out first (this output was made while they were outside the fit),
then moved into the fit (``knowledge/measurements/own``).

    python -m tests.benchmarks.unrun_types > tests/benchmarks/unrun_types.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import OWN, compare

RUNS = "h200x2-unrun-types-2026-11-28.jsonl"
LEASE_PROFILE = str(OWN / "logs" / "h200x2-profile-unrun-types-2026-11-28.json")


def main() -> None:
    for label, preds, profile in (
            ("without a profile", "h200x2-unrun-types-predictions-2026-11-28.jsonl", None),
            ("with the bundled h200x2 profile", "h200x2-unrun-types-predictions-bundled-profile-2026-11-28.jsonl", "h200x2"),
            ("today's code with the profile of the host it ran on (stored column: the bundled profile)",
             "h200x2-unrun-types-predictions-bundled-profile-2026-11-28.jsonl", LEASE_PROFILE)):
        print(f"== {label}")
        compare([RUNS], [preds], profile)
        print()


if __name__ == "__main__":
    main()
