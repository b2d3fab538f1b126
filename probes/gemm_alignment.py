"""How fast a bf16 GEMM runs when one of its sizes is not a multiple of 8 (16 bytes): an LM head over an odd vocabulary
(Hunyuan-7B's 290,943; a tokenizer resized by one token, 32,001), against the aligned size next to it.

    python -m probes.gemm_alignment --out rates.jsonl     (one GPU, about a minute)

Each line: the shape (tokens x k -> n), which operand is unaligned, forward (x @ W^T) and the input's gradient
(dy @ W), the measured TFLOP/s and the ratio to the aligned neighbour's."""

from __future__ import annotations

import argparse
import json
import time

SHAPES = [  # (tokens, k, n): n the unaligned size, then its aligned neighbour
    (4096, 4096, 290943), (4096, 4096, 290944),
    (4096, 4096, 32001), (4096, 4096, 32000),
    (4096, 3072, 50257), (4096, 3072, 50264),
    (8192, 2048, 151655), (8192, 2048, 151656),
    (4096, 4097, 11008), (4096, 4096, 11008),
]


def _time(fn, reps: int = 20) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dev = torch.device("cuda")
    with open(args.out, "a") as f:
        for t, k, n in SHAPES:
            x = torch.randn(t, k, device=dev, dtype=torch.bfloat16)
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            dy = torch.randn(t, n, device=dev, dtype=torch.bfloat16)
            flops = 2.0 * t * k * n
            fwd = _time(lambda: torch.nn.functional.linear(x, w))
            dgrad = _time(lambda: dy @ w)
            row = {"tokens": t, "k": k, "n": n, "fwd_tflops": flops / fwd / 1e12, "dgrad_tflops": flops / dgrad / 1e12,
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
            f.write(json.dumps(row) + "\n")
            print(f"{t}x{k}->{n}: fwd {row['fwd_tflops']:.0f} TFLOP/s, input grad {row['dgrad_tflops']:.0f} TFLOP/s", flush=True)
            del x, w, dy
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
