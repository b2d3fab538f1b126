"""Quantized linears as serving engines run them, built from PyTorch's own CUDA kernels.

Engines do not serve 8- and 4-bit weights through bitsandbytes: vLLM, SGLang and TensorRT-LLM run
FP8 (and int8) weights *and* activations on the tensor cores, and 4-bit weights through weight-only
kernels (Marlin / AWQ / GPTQ) that read packed int4 and dequantize in registers. The closest kernels a
plain PyTorch install has on a GPU:

- ``fp8``: W8A8, FP8 E4M3 weight and activations with per-tensor static scales (FP8 checkpoints' usual
  scheme), ``torch._scaled_mm`` (cuBLASLt FP8 GEMM, Hopper and Ada). A first sweep with per-token dynamic
  scales and per-channel weight scales ran 1.6x slower than bf16 at batch 1 and 4.6x at 8k tokens on an
  H100 (torch 2.11): row-wise scaling left cuBLASLt's fast path and the unfused quantize kernels showed.
- ``int8``: W8A8, int8 weight per channel, per-token int8 activations, ``torch._int_mm`` (int8 tensor
  cores, Ampere and newer); it wants more than 16 rows, so small batches are padded, as engines' kernels
  pad to their tile.
- ``int4``: W4A16, packed int4 weight with a bf16 scale and zero per group of 128 input channels,
  ``torch.ops.aten._weight_int4pack_mm`` (the tinygemm kernel).

The quantize-activation steps are separate kernels here where engines fuse them; inside a CUDA graph
that costs a few microseconds per linear. Weights are random: only shapes and bytes matter.
"""

from __future__ import annotations

from typing import Any

FORMATS = ("fp8", "int8", "int4")
INT4_GROUP = 128


def _linear_cls() -> Any:
    import torch

    class EngineLinear(torch.nn.Module):
        """``y = x W^T`` with W stored in ``fmt``; bias-free (Llama-style projections)."""

        def __init__(self, fmt: str, in_features: int, out_features: int, device: Any) -> None:
            super().__init__()
            self.fmt, self.in_features, self.out_features = fmt, in_features, out_features
            if fmt == "fp8":
                w = torch.randn(out_features, in_features, device=device, dtype=torch.bfloat16) * 0.02
                self.register_buffer("w", w.to(torch.float8_e4m3fn).t())  # (K, N), column-major as cuBLASLt wants
                # per-tensor scales, activations' from calibration (static), as FP8 checkpoints ship: the
                # quantize step is one multiply and a cast, and cuBLASLt's tensor-wise FP8 path runs
                self.register_buffer("w_scale", torch.tensor(0.01, device=device, dtype=torch.float32))
                self.register_buffer("x_scale", torch.tensor(0.05, device=device, dtype=torch.float32))
            elif fmt == "int8":
                w = torch.randint(-127, 127, (in_features, out_features), device=device, dtype=torch.int8)
                self.register_buffer("w", w)
                self.register_buffer("w_scale", torch.full((1, out_features), 0.01, device=device, dtype=torch.bfloat16))
            elif fmt == "int4":
                packed = torch.randint(0, 256, (out_features, in_features // 2), device=device, dtype=torch.uint8)
                self.register_buffer("w", torch.ops.aten._convert_weight_to_int4pack(packed, 8))
                sz = torch.empty(in_features // INT4_GROUP, out_features, 2, device=device, dtype=torch.bfloat16)
                sz[..., 0].fill_(0.01)
                sz[..., 1].zero_()
                self.register_buffer("scales_zeros", sz)
            else:
                raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")

        def forward(self, x: Any) -> Any:
            shape = x.shape[:-1]
            x2 = x.reshape(-1, self.in_features)
            m = x2.shape[0]
            if self.fmt == "int4":
                y = torch.ops.aten._weight_int4pack_mm(x2.to(torch.bfloat16), self.w, INT4_GROUP, self.scales_zeros)
                return y.reshape(*shape, self.out_features).to(x.dtype)
            rows = max(32, -(-m // 16) * 16) if self.fmt == "int8" else -(-m // 16) * 16
            if rows != m:
                x2 = torch.nn.functional.pad(x2, (0, 0, 0, rows - m))
            if self.fmt == "fp8":
                xq = (x2 * (1.0 / 0.05)).to(torch.float8_e4m3fn)
                y = torch._scaled_mm(xq, self.w, scale_a=self.x_scale, scale_b=self.w_scale, out_dtype=torch.bfloat16)
            else:
                amax = x2.abs().amax(dim=-1, keepdim=True).float().clamp_(min=1e-6)
                scale = amax / 127.0
                xq = (x2.float() / scale).round_().to(torch.int8)
                y = (torch._int_mm(xq, self.w).float() * scale).to(torch.bfloat16) * self.w_scale
            return y[:m].reshape(*shape, self.out_features)

    return EngineLinear


PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def quantize_layer_for_engine(layer: Any, fmt: str) -> int:
    """Replace every projection of one decoder layer by an ``fmt`` EngineLinear, freeing the bf16 weight.

    Returns the number replaced. MoE expert weights (fused 3-D tensors) stay 16-bit.
    """
    import torch

    cls = _linear_cls()
    count = 0
    for parent in list(layer.modules()):
        for name, child in list(parent.named_children()):
            if name in PROJECTIONS and isinstance(child, torch.nn.Linear):
                setattr(parent, name, cls(fmt, child.in_features, child.out_features, child.weight.device))
                count += 1
    torch.cuda.empty_cache()
    return count
