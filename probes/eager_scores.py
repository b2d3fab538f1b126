"""Eager attention's score kernels, one at a time: what transformers' ``eager_attention_forward`` runs on the s x s
scores (scale, causal mask add, fp32 softmax of a 16-bit input, the cast back; backward: the cast, the softmax's
backward, the cast back), timed on one GPU at several lengths and head counts, as GB/s of the bytes each moves.

The seventeenth session's anatomy (``logs/h200-eager-anatomy-2026-11-29.jsonl``) found the fp32 softmax forward over
8,192-long rows at a quarter of the H200's bandwidth while the model prices every score kernel as a streaming one; this
measures by how much, by kernel and by row length, for the model to price them.

    python -m probes.eager_scores --out DIR [--seqs 1024,2048,4096,8192] [--heads 8,32] [--toy]

appends one JSON line per (kernel, seq, heads) to DIR/eager_scores.jsonl. ``--toy`` runs tiny on the CPU (tests).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _timed_s(fn: Callable[[], object], sync: Callable[[], None], repeats: int) -> float:
    """Seconds of one ``fn`` call: the mean of ``repeats`` after one untimed call."""
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return (time.perf_counter() - t0) / repeats


def kernels(heads: int, seq: int, device: str, dtype: Any) -> dict[str, tuple[Callable[[], object], float]]:
    """{name: (the call, bytes it reads and writes)} for one micro-batch of ``heads`` x ``seq`` x ``seq`` scores."""
    import torch

    n = heads * seq * seq
    scores = torch.randn(1, heads, seq, seq, device=device, dtype=dtype)
    mask = torch.triu(torch.full((seq, seq), float("-inf"), device=device, dtype=dtype), 1)[None, None]
    probs32 = torch.softmax(scores, dim=-1, dtype=torch.float32)
    grad16 = torch.randn_like(scores)
    grad32 = grad16.float()
    half = scores.element_size()
    return {
        "scale": (lambda: scores * 0.088, 2 * half * n),
        "mask_add": (lambda: scores + mask, 2 * half * n),  # the mask broadcasts: its reads stay in cache
        "softmax_fwd_fp32_of_16bit": (lambda: torch.softmax(scores, dim=-1, dtype=torch.float32), (half + 4) * n),
        "cast_fp32_to_16bit": (lambda: probs32.to(dtype), (4 + half) * n),
        "cast_16bit_to_fp32": (lambda: grad16.float(), (half + 4) * n),
        "softmax_bwd_fp32": (lambda: torch._softmax_backward_data(grad32, probs32, -1, torch.float32), 12 * n),
    }


def measure(seqs: list[int], heads: list[int], toy: bool = False, repeats: int = 5) -> list[dict[str, Any]]:
    import torch

    cuda = torch.cuda.is_available() and not toy
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    out = []
    for h in heads:
        for s in seqs:
            for name, (fn, nbytes) in kernels(h, s, device, dtype).items():
                t = _timed_s(fn, sync, repeats)
                out.append({"kernel": name, "seq": s, "heads": h, "bytes": nbytes, "s": t, "gbs": nbytes / t / 1e9,
                            "device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__})
            if cuda:
                torch.cuda.empty_cache()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seqs", default="1024,2048,4096,8192")
    ap.add_argument("--heads", default="8,32")
    ap.add_argument("--toy", action="store_true")
    a = ap.parse_args()
    rows = measure([int(x) for x in a.seqs.split(",")], [int(x) for x in a.heads.split(",")], toy=a.toy)
    a.out.mkdir(parents=True, exist_ok=True)
    with open(a.out / "eager_scores.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
            print(f"{r['kernel']:28s} s {r['seq']:5d} heads {r['heads']:3d}  {r['s'] * 1e3:8.3f} ms  {r['gbs']:7.1f} GB/s")


if __name__ == "__main__":
    main()
