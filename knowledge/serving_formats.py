"""How serving engines store and multiply each weight format: bytes per weight, the tensor-core rate used,
the engine's flag. Each number with its source. The efficiencies of the kernels are fitted
(``knowledge.efficiency``); this table holds only structure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from knowledge.schema import FORMAT_BITS, GPUSpec


@dataclass(frozen=True)
class WeightFormat:
    name: str
    bytes_per_weight: float  # decoder projections, scales included
    compute: Literal["bf16", "fp8", "int8"]  # the tensor-core rate the GEMMs run at
    extra_kernels_per_linear: int  # activation quantize (engines fuse it into one kernel)
    vllm: str | None  # `vllm serve --quantization` (None: from the checkpoint, no flag)
    sglang: str | None
    label: str
    source: str


FORMATS: dict[str, WeightFormat] = {f.name: f for f in (
    WeightFormat("bf16", 2.0, "bf16", 0, None, None, "bf16", "16-bit weights"),
    WeightFormat("fp8", 1.0, "fp8", 1, "fp8", "fp8", "FP8 W8A8",
                 "vLLM docs, FP8 W8A8: E4M3 weights and activations, per-tensor (or per-channel) scales, CUTLASS/cuBLASLt "
                 "FP8 GEMMs on compute capability >= 8.9"),
    WeightFormat("int8", 1.0, "int8", 1, None, "w8a8_int8", "int8 W8A8",
                 "vLLM docs, INT8 W8A8 (compressed-tensors / SmoothQuant): int8 weights per channel, int8 activations per "
                 "token, int8 tensor cores on compute capability >= 7.5"),
    WeightFormat("int4", 0.5 + 4.0 / 128, "bf16", 0, "awq_marlin", "awq_marlin", "int4 W4A16 (AWQ/GPTQ)",
                 "AWQ (Lin et al. 2023) and GPTQ (Frantar et al. 2022): 4-bit weights with a 16-bit scale and zero per "
                 "group of 128 inputs (4 B / 128 weights), dequantized in registers by Marlin-class kernels; GEMMs at "
                 "the 16-bit rate"),
    WeightFormat("bnb-int8", 1.0, "bf16", 2, "bitsandbytes", "bitsandbytes", "bitsandbytes LLM.int8",
                 "Dettmers et al. 2022 (LLM.int8): int8 weights with outlier columns in fp16; slower than bf16 in practice"),
    WeightFormat("bnb-nf4", 0.5 + 1 / 64 + 4 / (64 * 256), "bf16", 2, "bitsandbytes", "bitsandbytes", "bitsandbytes NF4",
                 "Dettmers et al. 2023 (QLoRA): NF4 with double quantization, 64-weight blocks; dequantized to bf16 "
                 "before each GEMM except a single-row GEMV"),
)}
assert set(FORMATS) == set(FORMAT_BITS)


FP8_ARCHS = ("hopper", "ada", "blackwell")


def has_fp8(gpu: GPUSpec) -> bool:
    """FP8 tensor cores: the datasheet gives an FP8 rate, or the architecture has them (Ada, Hopper, Blackwell)."""
    return gpu.fp8_tflops is not None or gpu.arch in FP8_ARCHS


def default_format(weight_bits: int, gpu: GPUSpec) -> str:
    """What an engine runs for ``weight_bits`` on ``gpu``: 8 -> FP8 where the GPU has it, else int8 W8A8."""
    return {16: "bf16", 8: "fp8" if has_fp8(gpu) else "int8", 4: "int4"}[weight_bits]


def unsupported(fmt: str, gpu: GPUSpec) -> str | None:
    """Why ``gpu`` cannot run ``fmt`` (None when it can)."""
    if fmt == "fp8" and not has_fp8(gpu):
        return f"FP8 weights need FP8 tensor cores, which {gpu.name} lacks (use int8 or int4)"
    return None
