"""Probe: what the host's CPU spends per kernel of a model's own eager code, beyond a Llama layer's kernels.

    python -m probes.eager_ops --out OUT.jsonl [--families llama,qwen3,...] [--seq 2048]

A step of a model whose layers launch many small kernels (Qwen3.5's gated delta-net scan without its fused kernel:
~600 kernels a layer, a Llama layer 45) is bound by the host: the GPU waits for Python, autograd and the launches.
The step model prices a Llama layer's kernels at the fitted ``kernel_time_s`` (it carries their modules' Python)
and every kernel a traced layer launches beyond them at ``extra_kernel_ratio`` of that. This probe measures both.

Each family's config is shrunk to tiny widths (hidden 256, 4 heads, a 2k vocabulary) so that the GPU's work is
negligible and a step's wall time is the host's; cuts of 1 and 5 decoder layers run full training (bf16 weights,
fp32 loss) forward and backward at batch 1 x ``seq``; one layer's CPU seconds are a quarter of the difference. Rows:
{family, layers, forward_s, backward_s} (medians of 9 regions of 5 steps back to back, after 3 warm-ups), and one {family, per_layer_fwd_s,
per_layer_bwd_s} per family. The kernels each layer launches come from the trace of the same tiny config (run
where the rows are analysed, ``tests/benchmarks/eager_ops.py``), so seconds per traced kernel is what the step
model needs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

CONFIGS = Path(__file__).resolve().parent.parent / "knowledge" / "data" / "configs"
TINY = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 64, "vocab_size": 2048}
# per family: its config file (None: transformers' defaults of the model type) and the widths beyond TINY it has
FAMILIES: dict[str, tuple[str | None, dict[str, Any]]] = {
    "llama": (None, {"model_type": "llama"}),
    "qwen3": ("qwen3-8b.json", {}),  # q/k norms
    "qwen3_5_text": ("qwen3.5-text.json", {"linear_key_head_dim": 64, "linear_value_head_dim": 64,
                                           "linear_num_key_heads": 2, "linear_num_value_heads": 4}),  # the scan
    "qwen3_next": ("qwen3-next-12l.json", {"linear_key_head_dim": 64, "linear_value_head_dim": 64, "linear_num_key_heads": 2,
                                           "linear_num_value_heads": 4, "num_experts": 16, "moe_intermediate_size": 128,
                                           "shared_expert_intermediate_size": 128, "num_experts_per_tok": 4}),
    "lfm2": ("lfm2.json", {"block_auto_adjust_ff_dim": False}),  # short convolutions
    "gemma3_text": ("gemma-3-1b.json", {"query_pre_attn_scalar": 64}),  # four norms, q/k norms, a sliding window
    "olmo3": ("olmo-3.json", {}),
    "phi3": ("phi-3-mini-4k.json", {}),  # fused projections
}


CUTS = (1, 5)  # decoder layers of the two cuts timed: one layer's seconds are the difference over 4


def tiny_config(family: str) -> dict[str, Any]:
    """The family's config dict at the probe's widths (the layer pattern, activation and norms kept)."""
    name, extra = FAMILIES[family]
    cfg = json.loads((CONFIGS / name).read_text()) if name else {}
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
    cfg.update(TINY)
    cfg.update(extra)
    cfg.setdefault("num_hidden_layers", CUTS[1])
    return cfg


def _time(fn, sync, repeats: int = 9, warmup: int = 3, back_to_back: int = 5) -> float:
    """Median seconds of one call, over regions of ``back_to_back`` calls with no synchronisation between them (a
    host-bound step's wall is then its host's time; one synchronisation per call would add its latency)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(back_to_back):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / back_to_back)
    return statistics.median(samples)


def measure(family: str, layers: int, seq: int, device: str) -> dict[str, Any]:
    """Forward and backward wall seconds of full training of a ``layers``-layer cut of the tiny family."""
    import torch
    import transformers

    from probes.hf_model import config_from_dict

    cfg = config_from_dict(tiny_config(family), layers, attn_impl="sdpa")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).to(device=device, dtype=torch.bfloat16)
    model.train()
    ids = torch.randint(0, cfg.vocab_size, (1, seq), device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    state: dict[str, Any] = {}

    def forward() -> None:
        state["loss"] = model(input_ids=ids, labels=ids).loss
        state.pop("loss")  # its graph freed, as a step's backward frees it

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        model.zero_grad(set_to_none=True)

    fwd = _time(forward, sync)
    both = _time(step, sync)
    return {"family": family, "layers": layers, "seq": seq, "forward_s": fwd, "backward_s": both - fwd}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--device", default="cuda")
    a = p.parse_args(argv)
    import torch

    env = {"gpu": torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu", "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": "python -m probes.eager_ops " + " ".join(argv or sys.argv[1:])}
    with open(a.out, "a") as f:
        for fam in a.families.split(","):
            try:
                rows = {n: measure(fam, n, a.seq, a.device) for n in CUTS}
            except Exception as e:  # noqa: BLE001 - one family's failure leaves the others' rows
                print(json.dumps({"family": fam, "error": f"{type(e).__name__}: {e}"[:300]}), file=f, flush=True)
                continue
            for r in rows.values():
                print(json.dumps({**r, **env}), file=f, flush=True)
            per = {k: (rows[CUTS[1]][k] - rows[CUTS[0]][k]) / (CUTS[1] - CUTS[0]) for k in ("forward_s", "backward_s")}
            summary = {"family": fam, "seq": a.seq, "per_layer_fwd_s": per["forward_s"], "per_layer_bwd_s": per["backward_s"], **env}
            print(json.dumps(summary), file=f, flush=True)
            print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
