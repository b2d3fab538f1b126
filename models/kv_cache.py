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
    """(layers, cached tokens) groups for a sequence holding ``kv_len`` tokens: a sliding-window layer caches
    min(kv_len, window) (the model's own layout, ``ModelArch.kv_groups``), every other layer every token."""
    if arch.kv_groups:
        return [(g.layers, min(kv_len, g.window) if g.window else kv_len) for g in arch.kv_groups]
    return [(arch.num_hidden_layers, kv_len)]


def _values_per_token_layer(arch: ModelArch, tp: int) -> list[float]:
    """Values each layer group caches per token on one GPU: K and V of its KV heads, or a latent vector."""
    if arch.kv_groups:
        return [g.values_per_token * (kv_heads_per_gpu(arch, tp) / arch.num_key_value_heads if g.split_by_tp else 1.0)
                for g in arch.kv_groups]
    return [2.0 * kv_heads_per_gpu(arch, tp) * arch.head_size]


def kv_cache_bytes(arch: ModelArch, tp: int, kv_bits: int, kv_len: float) -> float:
    """Bytes one sequence's KV cache holds on one GPU at ``kv_len`` cached tokens, all layers; also what one decode
    step of that sequence reads: the values each layer caches per token, ``kv_bits`` each."""
    groups = kv_len_per_layer(arch, kv_len)
    values = _values_per_token_layer(arch, tp)
    if len(values) == 1 and len(groups) > 1:
        values = values * len(groups)
    return sum(layers * tokens * v * kv_bits / 8 for (layers, tokens), v in zip(groups, values))
