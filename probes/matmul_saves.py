"""What ``torch.matmul`` saves for backward, by operand layout, with and without bf16 autocast, on this device and on the CPU: the bytes autograd keeps
beyond the operands' own storages (contiguous copies the product makes of a broadcast or sliced operand).

    python3 -m probes.matmul_saves   -> one JSON line per (device, layout, batch) on stdout

Why (2026-11-29): DeepSeek-V4's eager attention saved 7.5 GiB more on an H200 than the fake-tensor trace and a real CPU
run counted, at its two products (K/V repeated from one head to 64, the sink-sliced probabilities).
"""

from __future__ import annotations

import json


def saves(device: str, layout: str, batch: int, autocast: bool, heads: int = 8, s: int = 256, d: int = 64) -> dict:
    import contextlib

    import torch

    dt = torch.bfloat16
    q = torch.randn(batch, heads, s, d, device=device, dtype=dt, requires_grad=True)
    k1 = torch.randn(batch, 1, s, d, device=device, dtype=dt, requires_grad=True)
    logits = torch.randn(batch, heads, s, s + 1, device=device, dtype=dt, requires_grad=True)
    own = {t.untyped_storage().data_ptr() for t in (q, k1, logits)}
    new: dict[int, int] = {}

    def pack(x):
        st = x.untyped_storage()
        if st.data_ptr() not in own:
            new[st.data_ptr()] = st.nbytes()
        return x

    probs = logits.softmax(-1)  # saved before the hook: its storage is an operand's own
    own.add(probs.untyped_storage().data_ptr())
    amp = torch.autocast(device, dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with amp, torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        if layout == "broadcast-heads":  # repeat_kv of one KV head: expand + reshape is a stride-0 view
            kb = k1[:, :, None].expand(batch, 1, heads, s, d).reshape(batch, heads, s, d)
            torch.matmul(q, kb.transpose(2, 3))
        elif layout == "sliced-rows":  # probabilities with a sink column dropped: rows of s + 1, s used
            v = torch.randn(batch, heads, s, d, device=device, dtype=dt)
            own.add(v.untyped_storage().data_ptr())
            torch.matmul(probs[..., :-1], v)
        elif layout == "transposed":  # q @ k^T of a plain multi-head K: the usual eager attention
            k = torch.randn(batch, heads, s, d, device=device, dtype=dt, requires_grad=True)
            own.add(k.untyped_storage().data_ptr())
            torch.matmul(q, k.transpose(2, 3))
    operand = {"broadcast-heads": batch * heads * s * d * 2, "sliced-rows": batch * heads * s * s * 2,
               "transposed": 0}[layout]
    return {"device": device, "layout": layout, "batch": batch, "autocast": autocast, "saved_new_bytes": sum(new.values()),
            "operand_as_contiguous_bytes": operand}


def main() -> None:
    import torch

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for layout in ("broadcast-heads", "sliced-rows", "transposed"):
            for batch in (1, 2):
                for autocast in (False, True):
                    rec = saves(device, layout, batch, autocast)
                    rec.update(torch=torch.__version__, gpu=torch.cuda.get_device_name() if device == "cuda" else None)
                    print(json.dumps(rec))


if __name__ == "__main__":
    main()
