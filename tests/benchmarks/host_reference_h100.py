"""The same host-bound cases on H100 leases of different days (2026-12-07, twenty-sixth session), grid
``h100-host-reference``: each case as it ran on its earlier lease (grid h100-weak 2026-11-23, h100-scan-families-2
2026-11-27, h100-frozen-prefix earlier on 2026-12-07) beside this lease's run; Granite-MoE's QLoRA on the day's four
H100 leases (the fourth lent for grid h200-host-reference); and this lease's runs against the predictions stored before
them and today's.

    python -m tests.benchmarks.host_reference_h100 > tests/benchmarks/host_reference_h100.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import OWN, compare, runs

GRID, DATE = "h100-host-reference", "2026-12-07"
EARLIER = {  # this grid's case -> (the file of its earlier run, that run's id)
    "h100hr-7b-lora-pt-mb1-s256": ("h100-weak-2026-11-23.jsonl", "h100w-7b-lora-pt-mb1-s256"),
    "h100hr-tiny-lora-pt-mb4-s256": ("h100-offload2-2026-11-23.jsonl", "h100w-tiny-lora-pt-mb4-s256"),
    "h100hr-7b-qlora-pt-mb1-s512": ("h100-weak-2026-11-23.jsonl", "h100w-7b-qlora-pt-mb1-s512"),
    "h100hr-7b-lora-ds-z3-mb1-s512": ("h100-offload-2026-11-23.jsonl", "h100w-7b-lora-ds-z3-mb1-s512"),
    "h100hr-q35-lora-qkvo-pt-mb1-s2k": ("h100-scan-families-2-2026-11-27.jsonl", "h100e2-q35-lora-qkvo-pt-mb1"),
    "h100hr-q35-lora-ds-z2-mb1-s2k": ("logs/h100-frozen-prefix-2026-12-07.jsonl", "h100fp-q35-lora-ds-z2-mb1-s2k"),
    "h100hr-granitemoe-qlora-pt-mb2-s1k": ("logs/h100-frozen-prefix-2026-12-07.jsonl",
                                           "h100fp-granitemoe-qlora-pt-mb2-s1k"),
}


def main() -> None:
    now = {r["case"]["id"]: r for r in runs(f"logs/{GRID}-{DATE}.jsonl")}
    print(f"{'case':38s} {'earlier lease':>24s} {'this lease':>11s} {'this / earlier':>15s}")
    for cid, (name, old_id) in EARLIER.items():
        found = [r for r in runs(name) if r["case"]["id"] == old_id]
        if not found or cid not in now:
            continue
        old, new = found[0]["measured"]["tokens_per_s"], now[cid]["measured"]["tokens_per_s"]
        when = (found[0].get("environment") or {}).get("date", "")[:10]
        print(f"{cid:38s} {old:10.0f} ({when}) {new:11.0f} {new / old:14.2f}x")
    print()
    # a fourth lease of the day (launch 9.1 us; grid h200-host-reference, lent an H100): the same QLoRA case on each
    granite = [(name, r["measured"]["tokens_per_s"]) for name in ("logs/h100-blind-families-3-2026-12-07.jsonl",
                                                                  "logs/h100-frozen-prefix-2026-12-07.jsonl",
                                                                  f"logs/{GRID}-{DATE}.jsonl",
                                                                  f"logs/{GRID}-b-{DATE}.jsonl")
               for r in runs(name) if r["case"]["id"].endswith("granitemoe-qlora-pt-mb2-s1k")]
    print("Granite-3.0-3B-A800M QLoRA, mb 2 x 1,024, on four H100 leases of 2026-12-07:")
    for name, tps in granite:
        print(f"  {name:52s} {tps:8.0f} tokens/s")
    print()
    for label, suffix, profile in (("without a profile", "", None), ("with the bundled h100x1 profile",
                                                                      "-bundled-profile", "h100x1")):
        print(f"== this lease, {label}")
        compare([f"logs/{GRID}-{DATE}.jsonl"], [f"{GRID}-predictions{suffix}-{DATE}.jsonl"], profile)
        print()


if __name__ == "__main__":
    main()
