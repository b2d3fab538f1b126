"""Layers that loop in Python, on one H200, 2026-11-27: Qwen3.5 (gated delta-net, transformers' torch fallback) at 4k
and 512 tokens, and Qwen3-Next (gated delta-net with 512 routed experts; its defaults cut to 12 layers, never run
before), LoRA under PyTorch. Grid ``h200-scan-families``, its predictions stored before it ran by commit 7767d3e, which
priced a kernel beyond a Llama layer's at 6 us and a scan's backward at its forward's count; the code of today prices
them at the probed ``extra_kernel_ratio`` (probes/eager_ops.py, measured in the same lease before these runs; tests/
benchmarks/eager_ops.py), forward and backward from the trace's own counts. Without a profile (none was stored).

    python -m tests.benchmarks.scan_families > tests/benchmarks/scan_families.out.txt
"""

from __future__ import annotations

from tests.benchmarks.stored_predictions import compare

if __name__ == "__main__":
    stored, now = compare(["h200-scan-families-2026-11-27.jsonl"], ["h200-scan-families-predictions-2026-11-27.jsonl"])
    for (b, m), (q, _) in zip(stored, now):
        print(f"  {q['id']:36s} tokens/s {100 * (b['tokens_per_s'] / m['tokens_per_s'] - 1):+6.1f}% -> "
              f"{100 * (q['tokens_per_s'] / m['tokens_per_s'] - 1):+6.1f}%   memory {100 * (q['peak_mem_gib'] / m['peak_mem_gib'] - 1):+5.1f}%")
