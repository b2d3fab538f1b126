"""Twenty model types never run on two GPUs, on two H200s (2026-11-28, two leases of the same day), mostly DeepSpeed
ZeRO-3 (full and LoRA, 0.3B to 9B, host-bound to GPU-bound), with ZeRO-2, DDP and ZeRO-2/3 optimizer offload beside:
the held-out test of the per-platform ZeRO-3 hook factor (``models.platform_factors``). Predictions were stored before
the runs by the fit with the factor (without a profile and with the bundled h200x2 profile) and, for the first grid,
by the fit before it. The second grid again with the quick profile of the host it ran on (``advisor probe --quick``
there: launch 6.4 us against the bundled profile's 6.3). Kept out of every fit (``knowledge/measurements/own/logs``).

The harness runs its ranks under torchrun, one OpenMP thread each; the stored predictions assumed the advisor's launch
line (the node's cores shared out): the one offload run of ZeRO-3 (LFM2, optimizer offloaded) is scored here as stored.

Third grid (2026-11-29, twentieth session), ``h200x2-zero3-mainstream``: ZeRO-3 over the families people fine-tune most
(Qwen2.5-3B full again, its one earlier ZeRO-3 run having come out +59%, and LoRA; Qwen3-1.7B, Phi-4-mini, Gemma-2-2B,
SmolLM2, Granite-3.0, Mistral-Nemo-12B, Qwen3-14B), stored before it ran by the code of 285656d; held out.

    python -m tests.benchmarks.zero3_families > tests/benchmarks/zero3_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import OWN, compare, compare_grids

LEASE_PROFILE = str(OWN / "logs" / "h200x2-profile-zero3-families-2-2026-11-28.json")


def main() -> None:
    for label, runs, preds, profile in (
            ("grid 1, without a profile", "h200x2-zero3-families-2026-11-28.jsonl", "h200x2-zero3-families-predictions-2026-11-28.jsonl", None),
            ("grid 1, the fit before the factor in the stored column", "h200x2-zero3-families-2026-11-28.jsonl",
             "h200x2-zero3-families-predictions-previous-fit-2026-11-28.jsonl", None),
            ("grid 1, with the bundled h200x2 profile", "h200x2-zero3-families-2026-11-28.jsonl",
             "h200x2-zero3-families-predictions-profile-2026-11-28.jsonl", "h200x2"),
            ("grid 2, without a profile", "h200x2-zero3-families-2-2026-11-28.jsonl", "h200x2-zero3-families-2-predictions-2026-11-28.jsonl", None),
            ("grid 2, with the bundled h200x2 profile", "h200x2-zero3-families-2-2026-11-28.jsonl",
             "h200x2-zero3-families-2-predictions-profile-2026-11-28.jsonl", "h200x2"),
            ("grid 2, today's code with the profile of the host it ran on (stored column: the bundled profile)",
             "h200x2-zero3-families-2-2026-11-28.jsonl", "h200x2-zero3-families-2-predictions-profile-2026-11-28.jsonl", LEASE_PROFILE)):
        print(f"== {label}")
        compare([runs], [preds], profile)
        print()
    compare_grids({"h200x2-zero3-mainstream": "two H200s, ZeRO-3 over the families people fine-tune most (held out)"},
                  "h200x2", "2026-11-29")


if __name__ == "__main__":
    main()
