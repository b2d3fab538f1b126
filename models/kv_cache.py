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


def _groups(arch: ModelArch) -> list[tuple[int, int | None, float, bool, float]]:
    """(layers, window, values per token, split by TP, state bytes) of each group of layers that cache alike; one
    group of every layer caching K and V of every KV head where the model's layout is not known."""
    if arch.kv_groups:
        return [(g.layers, g.window, float(g.values_per_token), g.split_by_tp, g.state_bytes) for g in arch.kv_groups]
    return [(arch.num_hidden_layers, None, 2.0 * arch.num_key_value_heads * arch.head_size, True, 0.0)]


def _share(arch: ModelArch, tp: int, split: bool) -> float:
    """The part of a layer's cache one GPU of a ``tp``-way group holds: its KV heads' (fewer heads than ranks are
    replicated), or all of it (a latent vector)."""
    return kv_heads_per_gpu(arch, tp) / arch.num_key_value_heads if split else 1.0


def kv_len_per_layer(arch: ModelArch, kv_len: float) -> list[tuple[int, float]]:
    """(layers, cached tokens) of each group of layers (``ModelArch.kv_groups``) for a sequence holding ``kv_len``
    tokens: a sliding-window layer caches min(kv_len, window), every other layer every token (a recurrent layer caches
    no values per token: its tokens count for nothing)."""
    return [(n, min(kv_len, w) if w else kv_len) for n, w, _, _, _ in _groups(arch)]


def attention_layers(arch: ModelArch) -> int:
    """Layers that attend over a KV cache (all but a hybrid's recurrent layers)."""
    return sum(n for n, _, values, _, _ in _groups(arch) if values)


def attended_pairs(arch: ModelArch, new_tokens: float, kv_len: float) -> float:
    """(query, key) pairs of one sequence's ``new_tokens`` queries after ``kv_len`` cached tokens, causal, averaged over
    the model's layers: a full layer's n*kv_len + n^2/2, a sliding layer's capped at its window, a recurrent layer's
    none (a decode step is new_tokens = 1: the cached tokens each layer reads)."""
    def pairs(n: float, c: float, w: int | None) -> float:
        if not w or c + n <= w:
            return n * c + n * n / 2
        below = max(0.0, w - c)  # queries whose keys have not reached the window yet
        return below * c + below * below / 2 + (n - below) * w

    return sum(n_layers * pairs(new_tokens, kv_len, w) for n_layers, w, values, _, _ in _groups(arch) if values
               ) / arch.num_hidden_layers


def _token_bytes(arch: ModelArch, tp: int, kv_bits: int) -> list[float]:
    """Bytes one token adds to one layer of each group on one GPU: its values per token, ``kv_bits`` each."""
    return [values * _share(arch, tp, split) * kv_bits / 8 for _, _, values, split, _ in _groups(arch)]


def kv_bytes_per_token(arch: ModelArch, tp: int, kv_bits: int) -> float:
    """Bytes one new token adds to one sequence's cache on one GPU, all layers (what a prefill writes per token)."""
    return sum(g[0] * b for g, b in zip(_groups(arch), _token_bytes(arch, tp, kv_bits)))


def state_bytes(arch: ModelArch, tp: int) -> float:
    """Bytes of fixed state one sequence keeps on one GPU whatever its length (a hybrid's convolution and scan
    states, as the model's own code holds them; split over TP ranks by head), all layers."""
    return sum(n * state * _share(arch, tp, True) for n, _, _, _, state in _groups(arch))


def kv_cache_bytes(arch: ModelArch, tp: int, kv_bits: int, kv_len: float) -> float:
    """Bytes one sequence's cache holds on one GPU at ``kv_len`` cached tokens, all layers: the values each attending
    layer caches per token, ``kv_bits`` each, and the recurrent layers' fixed states; also what one decode step of that
    sequence reads."""
    tokens = sum(n * cached * b for (n, cached), b in zip(kv_len_per_layer(arch, kv_len), _token_bytes(arch, tp, kv_bits)))
    return tokens + state_bytes(arch, tp)
