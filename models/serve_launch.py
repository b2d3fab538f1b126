"""The serving engine's launch line for a configuration: vLLM, SGLang or TensorRT-LLM. Pure: no I/O.

``launch_lines`` returns the lines of a shell script (comments start with ``#``), so the CLI prints
them and ``--out-dir`` writes them as ``serve.sh`` unchanged. Flag names follow each engine's CLI:

- vLLM (``vllm serve``): ``--tensor-parallel-size``, ``--data-parallel-size``, ``--max-num-seqs`` (per
  data-parallel rank), ``--max-model-len``, ``--gpu-memory-utilization``, ``--quantization``,
  ``--kv-cache-dtype fp8``.
- SGLang (``python -m sglang.launch_server``): ``--tp``, ``--dp``, ``--max-running-requests``,
  ``--context-length``, ``--mem-fraction-static``, ``--quantization``, ``--kv-cache-dtype fp8_e5m2``.
- TensorRT-LLM (``trtllm-serve``): ``--tp_size``, ``--max_batch_size``, ``--max_seq_len``,
  ``--kv_cache_free_gpu_memory_fraction``; it has no data-parallel flag, so each replica is its own
  server on its own GPUs and port. Quantization there is a checkpoint step (NVIDIA ModelOpt), not a flag.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, replace

ENGINES = ("vllm", "sglang", "trtllm")
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
GPU_MEMORY_FRACTION = 0.90  # what the engine may take of each GPU (vLLM's default)
FIRST_PORT = 8000

# --quantization per weight format; None = no flag (bf16), or a pre-quantized checkpoint the engine reads
VLLM_QUANT = {"bf16": None, "fp8": "fp8", "int8": None, "int4": "awq", "bnb-int8": "bitsandbytes", "bnb-nf4": "bitsandbytes"}
SGLANG_QUANT = {"bf16": None, "fp8": "fp8", "int8": "w8a8_int8", "int4": "awq", "bnb-int8": "bitsandbytes",
                "bnb-nf4": "bitsandbytes"}
CHECKPOINT_NOTE = {  # what MODEL must be for formats the engine cannot quantize on load
    "int4": "int4 W4A16: MODEL must be an AWQ checkpoint of the model (AutoAWQ / llm-compressor); "
            "a GPTQ one is served with --quantization gptq instead",
    "int8": "int8 W8A8: MODEL must be a W8A8-INT8 checkpoint of the model (llm-compressor); the engine reads "
            "its quantization from the checkpoint's config",
    "bnb-int8": "bitsandbytes int8: MODEL must be a checkpoint saved in 8-bit by bitsandbytes",
}
_HUB_ID = re.compile(r"^([A-Za-z0-9][\w.-]*/[\w.-]+)\s+config\.json")


@dataclass(frozen=True)
class Launch:
    """What the launch line needs: the search's pick in the engine's terms."""

    engine: str
    model: str  # hub id or local path the engine loads
    tensor_parallel: int
    replicas: int
    max_num_seqs: int  # concurrent sequences per replica
    max_model_len: int  # prompt + output tokens
    weight_format: str = "bf16"
    kv_bits: int = 16


def hub_id(name: str, source: str | None) -> str:
    """The Hugging Face id a catalog architecture came from (its ``source`` reads 'org/name config.json'),
    else the name as given (a hub id or path the user passed); a ``config.json`` path as its folder, which is what
    an engine loads (``vllm serve ./my-model``), not the file."""
    m = _HUB_ID.match(source or "")
    if m:
        return m.group(1)
    if name.endswith(".json"):
        folder = name.rsplit("/", 1)[0] if "/" in name else "."
        return folder if folder.startswith(("/", ".")) else f"./{folder}"
    return name


def per_replica(batch_size: int, replicas: int) -> int:
    """Concurrent sequences each replica schedules when the deployment runs ``batch_size``."""
    return max(1, math.ceil(batch_size / max(replicas, 1)))


def _check(launch: Launch) -> None:
    if launch.engine not in ENGINES:
        raise ValueError(f"engine {launch.engine!r} is not one of {', '.join(ENGINES)}")
    if launch.weight_format not in VLLM_QUANT:
        raise ValueError(f"weight format {launch.weight_format!r} is not one of {', '.join(VLLM_QUANT)}")
    if min(launch.tensor_parallel, launch.replicas, launch.max_num_seqs, launch.max_model_len) < 1:
        raise ValueError("tensor_parallel, replicas, max_num_seqs and max_model_len must be at least 1")
    if launch.kv_bits not in (16, 8):
        raise ValueError(f"kv_bits must be 16 or 8, got {launch.kv_bits!r}")


def needs_checkpoint(launch: Launch) -> bool:
    """Whether the engine cannot load the 16-bit checkpoint in ``launch.weight_format`` (its KV cache included): the
    weights must first be quantized into another checkpoint (AWQ, W8A8, ModelOpt), which the user names."""
    if launch.engine == "trtllm":
        return launch.weight_format != "bf16" or launch.kv_bits == 8
    return launch.weight_format in CHECKPOINT_NOTE


def _vllm(x: Launch) -> tuple[list[str], list[str]]:
    cmd = ["vllm", "serve", x.model, "--tensor-parallel-size", str(x.tensor_parallel)]
    if x.replicas > 1:
        cmd += ["--data-parallel-size", str(x.replicas)]
    cmd += ["--max-num-seqs", str(x.max_num_seqs), "--max-model-len", str(x.max_model_len),
            "--gpu-memory-utilization", f"{GPU_MEMORY_FRACTION:.2f}"]
    if VLLM_QUANT[x.weight_format]:
        cmd += ["--quantization", VLLM_QUANT[x.weight_format]]
    if x.kv_bits == 8:
        cmd += ["--kv-cache-dtype", "fp8"]
    notes = [CHECKPOINT_NOTE[x.weight_format]] if needs_checkpoint(x) else []
    if x.weight_format == "fp8":
        notes.append("fp8: vLLM quantizes the 16-bit checkpoint's weights to FP8 as it loads them (W8A8, dynamic activation scales)")
    return notes, [shlex.join(cmd)]


def _sglang(x: Launch) -> tuple[list[str], list[str]]:
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", x.model, "--tp", str(x.tensor_parallel)]
    if x.replicas > 1:
        cmd += ["--dp", str(x.replicas)]
    cmd += ["--max-running-requests", str(x.max_num_seqs), "--context-length", str(x.max_model_len),
            "--mem-fraction-static", f"{GPU_MEMORY_FRACTION:.2f}"]
    if SGLANG_QUANT[x.weight_format]:
        cmd += ["--quantization", SGLANG_QUANT[x.weight_format]]
    if x.kv_bits == 8:
        cmd += ["--kv-cache-dtype", "fp8_e5m2"]
    notes = [CHECKPOINT_NOTE[x.weight_format]] if needs_checkpoint(x) else []
    if x.replicas > 1:
        notes.append(f"--max-running-requests {x.max_num_seqs} is meant per data-parallel replica "
                     f"({x.max_num_seqs * x.replicas} in all); check it against your SGLang version's --dp semantics")
    return notes, [shlex.join(cmd)]


def _trtllm(x: Launch) -> tuple[list[str], list[str]]:
    notes = []
    if needs_checkpoint(x):
        what = [f"{x.weight_format} weights"] if x.weight_format != "bf16" else []
        what += ["an FP8 KV cache"] if x.kv_bits == 8 else []
        notes.append(f"TensorRT-LLM quantizes as a checkpoint step, not a flag: quantize MODEL to {' and '.join(what)} "
                     "with NVIDIA ModelOpt (TensorRT-LLM's examples/quantization) and serve that checkpoint")
    if x.weight_format.startswith("bnb-"):
        notes.append("TensorRT-LLM does not run bitsandbytes weights: use vLLM or SGLang for them")
    base = ["trtllm-serve", x.model, "--tp_size", str(x.tensor_parallel), "--max_batch_size", str(x.max_num_seqs),
            "--max_seq_len", str(x.max_model_len), "--kv_cache_free_gpu_memory_fraction", f"{GPU_MEMORY_FRACTION:.1f}"]
    if x.replicas == 1:
        return notes, [shlex.join(base)]
    notes.append(f"trtllm-serve has no data-parallel flag: {x.replicas} servers, one per group of {x.tensor_parallel} "
                 f"GPU(s), on ports {FIRST_PORT}-{FIRST_PORT + x.replicas - 1}; put a load balancer in front")
    lines = []
    for r in range(x.replicas):
        gpus = ",".join(str(g) for g in range(r * x.tensor_parallel, (r + 1) * x.tensor_parallel))
        lines.append(f"CUDA_VISIBLE_DEVICES={gpus} {shlex.join([*base, '--port', str(FIRST_PORT + r)])} &")
    return notes, [*lines, "wait"]


_MODEL_SLOT = "__ADVISOR_MODEL__"  # shlex leaves it unquoted; replaced by "$MODEL" in the command


def launch_lines(launch: Launch) -> list[str]:
    """The shell lines that start the engine: '# ' comments first, then the command(s).

    Where the engine needs a quantized checkpoint (``needs_checkpoint``), the command serves ``"$MODEL"``, which the
    script requires before it starts: the 16-bit hub id there would load the wrong weights, or fail deep in the engine."""
    _check(launch)
    engine = {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}[launch.engine]
    if not needs_checkpoint(launch):
        notes, cmds = engine(launch)
        return [f"# {n}" for n in notes] + cmds
    notes, cmds = engine(replace(launch, model=_MODEL_SLOT))
    if launch.engine == "trtllm":
        what = f"the ModelOpt checkpoint ({launch.weight_format} weights{', FP8 KV cache' if launch.kv_bits == 8 else ''})"
    else:
        what = f"the {launch.weight_format} checkpoint"
    require = f'MODEL="${{MODEL:?set MODEL to {what} of {launch.model}, as the note above says}}"'
    return [f"# {n}" for n in notes] + [require] + [c.replace(_MODEL_SLOT, '"$MODEL"') for c in cmds]


def launch_script(launch: Launch) -> str:
    """``serve.sh``: a shebang, what it serves, and the launch lines."""
    head = ["#!/usr/bin/env bash", f"# {ENGINE_NAMES[launch.engine]} serving {launch.model}: TP {launch.tensor_parallel} "
            f"x {launch.replicas} replica(s), {launch.weight_format} weights, {'fp8' if launch.kv_bits == 8 else '16-bit'} "
            f"KV cache (written by `advisor recommend --task serve`)", "set -euo pipefail"]
    return "\n".join(head + launch_lines(launch)) + "\n"
