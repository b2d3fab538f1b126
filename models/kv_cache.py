"""The KV cache of one sequence on one GPU: the one place its bytes are computed. Pure functions.

Everything that sizes or reads a KV cache (a decode step's reads, a prefill's writes, a sequence's memory, the
engine pool's capacity, ``max_batch_size``) calls ``kv_cache_bytes``, so a model whose cache is not "K and V of
every KV head in every layer at every position" (sliding-window layers capped at their window, latent
attention's compressed KV) changes here and nowhere else.
"""

from __future__ import annotations

import math

from knowledge.schema import ModelArch


def kv_heads_per_gpu(arch: ModelArch, tp: int) -> int:
    """KV heads one GPU of a ``tp``-way group holds: fewer KV heads than ranks are replicated, not split."""
    return math.ceil(arch.num_key_value_heads / tp)


def kv_len_per_layer(arch: ModelArch, kv_len: float) -> list[tuple[int, float]]:
    """(layers, cached tokens) groups for a sequence holding ``kv_len`` tokens: every layer caches every token
    (full attention). A sliding-window layer would cache min(kv_len, window)."""
    return [(arch.num_hidden_layers, kv_len)]


def kv_cache_bytes(arch: ModelArch, tp: int, kv_bits: int, kv_len: float) -> float:
    """Bytes one sequence's KV cache holds on one GPU at ``kv_len`` cached tokens, all layers; also what one decode
    step of that sequence reads. K and V of each KV head, ``head_size`` values of ``kv_bits`` each."""
    per_token_layer = 2.0 * kv_heads_per_gpu(arch, tp) * arch.head_size * kv_bits / 8
    return sum(layers * tokens * per_token_layer for layers, tokens in kv_len_per_layer(arch, kv_len))
