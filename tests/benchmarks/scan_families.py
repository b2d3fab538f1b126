"""Layers that loop in Python, 2026-11-27, LoRA under PyTorch, each grid's predictions stored before it ran:

- ``h200-scan-families`` (one H200; stored by commit 7767d3e, which priced a kernel beyond a Llama layer's at a 6 us
  prior and a scan's backward at its forward's count): Qwen3.5 (gated delta-net, transformers' torch fallback) at 4k
  and 512 tokens, Qwen3-Next (gated delta-net with 512 routed experts; its defaults cut to 12 layers, never run before);
- ``h100-scan-families-2`` (one H100, another host; stored by commit 85ec4a6, which prices them at the probed
  ``extra_kernel_ratio`` from probes/eager_ops.py on the H200 host, and traces a long pattern's extra layer behind a
  trained one): Qwen3.5 LoRA on q/k/v/o, Qwen3-Next, Falcon-H1-7B (never run: Mamba-2 beside attention; both its runs
  asked for 64 GiB more and ran out of memory, predicted to fit at 50 GiB: its scan's 256-token chunks were traced at
  shorter lengths; trace schema 12 traces 2-4 chunks), Gemma-3-1B with its full-attention layer traced.

The code of today beside each stored prediction, without a profile (and the H100 grid with the h100x1 profile).

    python -m tests.benchmarks.scan_families > tests/benchmarks/scan_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare

GRIDS = (("h200-scan-families", None), ("h100-scan-families-2", None), ("h100-scan-families-2", "h100x1"))


def _changes(stored, now) -> None:
    for (b, m), (q, _) in zip(stored, now):
        if not m.get("tokens_per_s"):
            print(f"  {q['id']:36s} ran out of memory: stored {'fits' if b['fits'] else 'does not fit'} at "
                  f"{b['peak_mem_gib']:.1f} GiB, today {'fits' if q['fits'] else 'does not fit'} at {q['peak_mem_gib']:.1f} GiB")
            continue
        print(f"  {q['id']:36s} tokens/s {100 * (b['tokens_per_s'] / m['tokens_per_s'] - 1):+6.1f}% -> "
              f"{100 * (q['tokens_per_s'] / m['tokens_per_s'] - 1):+6.1f}%   memory {100 * (q['peak_mem_gib'] / m['peak_mem_gib'] - 1):+5.1f}%")


if __name__ == "__main__":
    for g, profile in GRIDS:
        print(f"== {g}, {'with the ' + profile + ' profile' if profile else 'without profile'}")
        suffix = "-profile" if profile else ""
        _changes(*compare([f"{g}-2026-11-27.jsonl"], [f"{g}-predictions{suffix}-2026-11-27.jsonl"], profile))
        print()
