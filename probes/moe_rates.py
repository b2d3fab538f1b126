"""Time an engine's routed-expert GEMMs against a dense GEMM of the same FLOPs: what ``moe_gemm_eff`` stands for.

For MoE shapes (experts, top-k, hidden, expert width) and a prefill chunk of T tokens, rows are spread over the experts
as uniform routing spreads them (T·k/E each): one ``torch._grouped_mm`` over all experts (the gate/up product of
vLLM's fused MoE), a dense ``mm`` of the same M·K·N (T·k rows at once), and the whole routed layer of
``probes.engine_model`` (routing, the two grouped GEMMs, the gathers and the weighted sum). CUDA-event medians. One
JSON line per shape: TFLOP/s of each and the layer's seconds.

    python -m probes.moe_rates --out rates.jsonl
"""

from __future__ import annotations

import argparse
import json

SHAPES = {  # name: (experts, top-k, hidden, expert width)
    "olmoe-1b-7b": (64, 8, 2048, 1024),
    "qwen1.5-moe-a2.7b": (60, 4, 2048, 1408),
    "mixtral-8x7b": (8, 2, 4096, 14336),
}
TOKENS = (1024, 4096, 8192)


def main(argv: list[str] | None = None) -> int:
    import torch

    from probes.engine_model import EngineDecoder, Shapes
    from probes.engine_sweep import timed_s

    def _time_s(fn):
        return timed_s(fn, True, 20, 3)

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    dev, dt = torch.device("cuda"), torch.bfloat16
    gpu = torch.cuda.get_device_name()
    for name, (E, k, H, I) in SHAPES.items():
        dec = EngineDecoder(Shapes(H, I, 1, 16, 16, 128, 256, experts=E, top_k=k), dev, dt)
        L = dec.layers[0]
        for T in TOKENS:
            rows = T * k
            counts = torch.full((E,), rows // E, device=dev)
            counts[: rows % E] += 1
            offs = counts.cumsum(0).to(torch.int32)
            a = torch.randn(rows, H, device=dev, dtype=dt)
            w13 = L["w13"].transpose(-2, -1)
            grouped = _time_s(lambda: torch._grouped_mm(a, w13, offs=offs))
            dense_w = torch.randn(H, 2 * I, device=dev, dtype=dt)
            dense = _time_s(lambda: a @ dense_w)
            x = torch.randn(T, H, device=dev, dtype=dt)
            layer = _time_s(lambda: dec._experts(x, L))
            flops = 2.0 * rows * H * 2 * I
            row = {"gpu": gpu, "torch": torch.__version__, "model": name, "experts": E, "top_k": k, "hidden": H,
                   "expert_width": I, "tokens": T, "rows_per_expert": rows / E,
                   "grouped_tflops": flops / grouped / 1e12, "dense_tflops": flops / dense / 1e12,
                   "layer_s": layer, "gemms_s_est": grouped * 1.5, "moe_path": dec.moe_path}
            print(json.dumps(row), flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
