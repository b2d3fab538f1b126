"""Search serving configurations: batch size x tensor parallelism x weight bits x KV bits.

The space is small (a few hundred points) and every prediction is a closed-form roofline, so it is
enumerated exhaustively: no sampler can miss the best point, and the ranking is deterministic.
"""

from __future__ import annotations

from advisor.space import KV_BITS, WEIGHT_BITS
from knowledge.serving_formats import default_format
from models.calibration import Calibration
from knowledge.errors import AdvisorError
from knowledge.schema import ModelArch, PlatformSpec, ServeCase, ServePrediction
from models.serving import make_setup, max_batch, predict_serving

MAX_BATCH = 4096  # beyond this no engine schedules one step


def tensor_parallel_options(arch: ModelArch, platform: PlatformSpec) -> list[int]:
    """Divisors of the GPU count that split the attention heads evenly."""
    return [t for t in range(1, platform.count + 1) if platform.count % t == 0 and arch.num_attention_heads % t == 0]


def _batch_options(limit: int) -> list[int]:
    out, b = [], 1
    while b <= min(limit, MAX_BATCH):
        out.append(b)
        b *= 2
    return out


def _why(case: ServeCase, p: ServePrediction, limit: int, max_tpot_ms: float | None, max_ttft_ms: float | None) -> str:
    bd = p.breakdown
    regime = ""
    if bd is not None:
        parts = {"weight reads": bd.decode_weights_s, "KV-cache reads": bd.decode_kv_s, "compute": bd.decode_compute_s,
                 "all-reduces": bd.communication_s}
        top = max(parts, key=parts.get)  # type: ignore[arg-type]
        regime = f"; decode time mostly {top} ({parts[top] / p.decode_step_s:.0%})"
    limits = []
    if max_tpot_ms is not None:
        limits.append(f"TPOT {p.tpot_s * 1e3:.1f} ≤ {max_tpot_ms:g} ms")
    if max_ttft_ms is not None:
        limits.append(f"TTFT {p.ttft_s * 1e3:.0f} ≤ {max_ttft_ms:g} ms")
    meets = f"; meets {', '.join(limits)}" if limits else ""
    return (f"batch {case.batch_size} of {limit} that fit, TP {case.tensor_parallel}, {case.weight_bits}-bit weights, "
            f"{case.kv_bits}-bit KV: {p.e2e_output_tokens_per_s:,.0f} output tok/s, {p.peak_mem_gib:.1f} GiB/GPU{regime}{meets}")


def recommend_serving(arch: ModelArch, platform: PlatformSpec, cal: Calibration, *, prompt_len: int, output_len: int,
                      max_tpot_ms: float | None = None, max_ttft_ms: float | None = None, top: int = 5,
                      max_tensor_parallel: int | None = None, rel_error: float | None = None) -> list[dict]:
    """The ``top`` configurations by end-to-end output tokens/s among those that fit and meet the limits.

    Each item: the ServeCase fields, ``prediction`` (ServePrediction), ``fits`` and a one-line ``why``.
    An empty list means nothing fits or meets the latency limits. ``max_tensor_parallel`` (the user's
    ``--gpus``) caps the tensor parallelism considered. ``rel_error`` (the held-out error of
    the serving fit) gives each prediction its interval, as `advisor predict` does.
    """
    if prompt_len < 1 or output_len < 1:
        raise AdvisorError("prompt_len and output_len must be at least 1")
    found: list[dict] = []
    for tp in tensor_parallel_options(arch, platform):
        if max_tensor_parallel is not None and tp > max_tensor_parallel:
            continue
        for wb in WEIGHT_BITS:
            for kb in KV_BITS:
                limit = max_batch(make_setup(arch, platform, cal, tp, default_format(wb, platform.gpu), kb), prompt_len,
                                  prompt_len + output_len)
                for b in _batch_options(limit):
                    case = ServeCase(id=f"b{b}-tp{tp}-w{wb}-kv{kb}", hardware=platform.id, model=arch.name, task="serve",
                                     batch_size=b, prompt_len=prompt_len, output_len=output_len, weight_bits=wb,
                                     kv_bits=kb, tensor_parallel=tp, replicas=1)
                    p = predict_serving(case, arch, platform, cal, rel_error)
                    if not p.fits:
                        continue
                    if max_tpot_ms is not None and (p.tpot_s or 0.0) * 1e3 > max_tpot_ms:
                        continue
                    if max_ttft_ms is not None and (p.ttft_s or 0.0) * 1e3 > max_ttft_ms:
                        continue
                    found.append({**case.model_dump(), "prediction": p, "fits": p.fits,
                                  "why": _why(case, p, limit, max_tpot_ms, max_ttft_ms)})
    # ties (equal throughput) go to fewer GPUs, then more precise weights and KV, then the smaller batch
    found.sort(key=lambda d: (-d["prediction"].e2e_output_tokens_per_s, d["tensor_parallel"], -d["weight_bits"],
                              -d["kv_bits"], d["batch_size"]))
    return found[:top]
