"""How long one sliding-window layer's prefill attention takes on a GPU, three ways: as the engine-style decoder
(``probes.engine_model.EngineDecoder._attend``) runs it, one window of queries at a time under a boolean mask; as
FlashAttention runs plain causal attention over the whole chunk (more pairs than the window's); and as FlexAttention
runs the window's causal pairs alone (a block mask: the tiles outside the window skipped, as FlashAttention's local
attention and vLLM skip them). Tells whether a windowed prefill measured slower than its count is the decoder's kernel
choice or the count.

    python -m probes.window_attention --out $OUT/window.jsonl      (a GPU; about a minute)
"""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace
from typing import Any, Callable

# (name, query heads, KV heads, head size, window): the sliding layers of grid engine-families-8's models
SHAPES = (("gemma-3-1b", 4, 1, 256, 512), ("gemma-3-4b", 8, 4, 256, 1024), ("gemma-2-2b", 8, 4, 256, 4096),
          ("starcoder2-3b", 24, 2, 128, 4096))
TOKENS = (2048, 8192)


def _timed(fn: Callable[[], Any]) -> float:
    from probes.engine_sweep import timed_s

    return timed_s(fn, cuda=True, repeats=10, warmup=2)


def main(argv: list[str] | None = None) -> int:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    from probes.engine_model import EngineDecoder

    ap = argparse.ArgumentParser(prog="python -m probes.window_attention", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    dev, dt = torch.device("cuda"), torch.bfloat16
    flex = torch.compile(flex_attention, dynamic=False)
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    with open(args.out, "a") as out:
        for name, h, hkv, d, w in SHAPES:
            dec = EngineDecoder.__new__(EngineDecoder)
            dec.s, dec.device = SimpleNamespace(attn_scale=None), dev
            for t in TOKENS:
                q = torch.randn(1, h, t, d, device=dev, dtype=dt)
                k, v = (torch.randn(1, hkv, t, d, device=dev, dtype=dt) for _ in range(2))
                row: dict[str, Any] = {"shape": name, "tokens": t, "window": w, "heads": h, "kv_heads": hkv, "head_dim": d, **env}
                row["decoder_ms"] = 1e3 * _timed(lambda: dec._attend(q, k, v, 0, t, "sdpa", w))

                def causal() -> Any:
                    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

                row["flash_causal_ms"] = 1e3 * _timed(causal)

                def sliding(b: Any, hh: Any, qi: Any, ki: Any) -> Any:
                    return (ki <= qi) & (qi - ki < w)

                mask = create_block_mask(sliding, None, None, t, t, device=dev)
                try:
                    row["flex_window_ms"] = 1e3 * _timed(lambda: flex(q, k, v, block_mask=mask, enable_gqa=True))
                except Exception as e:  # noqa: BLE001 - recorded, the others still count
                    row["flex_error"] = f"{type(e).__name__}: {str(e)[:200]}"
                pairs = sum(min(i + 1, w) for i in range(t))
                row["window_pairs"], row["causal_pairs"] = pairs, t * (t + 1) // 2
                print(json.dumps(row), flush=True)
                out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
