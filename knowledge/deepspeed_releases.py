"""What differs between DeepSpeed releases in what a run keeps on the GPU, with where each fact was read.

The advisor pins DeepSpeed (``PINNED``, pyproject.toml) and writes its configs for it; a case may name another release
(``TrainCase.deepspeed_version``), as the study's rows of 2023 do.
"""

from __future__ import annotations

PINNED = "0.19.8"

# ZeRO-1/2 with the optimizer offloaded: DeepSpeed 0.19.8 calls ``record_stream`` on each 16-bit gradient it copies to
# the host (``DeepSpeedZeroOptimizer._record_gradient_stream``, enabled by ``_offload_gradient_safety_enabled`` =
# cpu_offload, deepspeed/runtime/zero/stage_1_and_2.py). The caching allocator then frees a gradient only once the GPU
# has run its copy, and the host, launching ahead of the GPU, asks for the next ones first: about the whole model's
# 16-bit gradients are allocated by the end of backward. Measured: Llama-3.2-3B at 350 tokens on one and on two H200s
# peaks at 11.97 GiB (6.0 of weights), Llama-2-7B on two at 25.1 (12.6 of weights)
# (knowledge/measurements/own/logs/h200x2-z2off-anatomy-2026-11-27.jsonl, h200x2-study-p2p-2026-11-27.jsonl).
# The study's DeepSpeed of 2023 did not: its 7B rows of the same case on 24 GB cards held 17.7-19.1 GB.
# Releases between are not measured; they are taken to behave as the pinned one (the side that does not call a
# crashing run fitting).
OFFLOAD_GRADS_PILE_UP_SINCE = (0, 13)
# The study (Zhang et al. 2023, arXiv 2311.03687 v2, 2023-12-01) does not name its DeepSpeed; a release of 2023 is
# 0.12 or older (0.13 came in 2024).
STUDY_RELEASE = "0.12"


def release(version: str | None) -> tuple[int, ...]:
    """A release as a comparable tuple; None is the pinned one."""
    return tuple(int(x) for x in (version or PINNED).split("."))


def offload_grads_pile_up(version: str | None) -> bool:
    """Does this release hold about every 16-bit gradient on the GPU under ZeRO-1/2 with the optimizer offloaded?"""
    return release(version) >= OFFLOAD_GRADS_PILE_UP_SINCE
