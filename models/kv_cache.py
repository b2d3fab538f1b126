"""The KV cache of one sequence on one GPU: the one place its bytes are computed. Pure functions.

Everything that sizes or reads a KV cache (a decode step's reads, a prefill's writes, a sequence's memory, the
engine pool's capacity, ``max_batch_size``) calls ``kv_cache_bytes``, so a model whose cache is not "K and V of
every KV head in every layer at every position" (sliding-window layers capped at their window, latent
attention's compressed KV) changes here and nowhere else.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from knowledge.schema import ModelArch


def kv_heads_per_gpu(arch: ModelArch, tp: int) -> int:
    """KV heads one GPU of a ``tp``-way group holds: fewer KV heads than ranks are replicated, not split."""
    return math.ceil(arch.num_key_value_heads / tp)


class _Group(NamedTuple):
    layers: int
    window: int | None
    values: float  # per token
    split: bool  # by TP
    state: float  # bytes per sequence, as the model's own code keeps it
    vllm_state: float  # the same as vLLM keeps it


def _groups(arch: ModelArch) -> list[_Group]:
    """Each group of layers that cache alike (``ModelArch.kv_groups``); one group of every layer caching K and V of
    every KV head where the model's layout is not known."""
    if arch.kv_groups:
        return [_Group(g.layers, g.window, float(g.values_per_token), g.split_by_tp, g.state_bytes,
                       g.state_bytes if g.vllm_state_bytes is None else g.vllm_state_bytes) for g in arch.kv_groups]
    return [_Group(arch.num_hidden_layers, None, 2.0 * arch.num_key_value_heads * arch.head_size, True, 0.0, 0.0)]


def _state_share(tp: int) -> float:
    """The part of a recurrent layer's state one GPU of a ``tp``-way group holds: its heads are split evenly (vLLM's
    state shapes divide the Mamba, delta-net and convolution heads by the TP size; Qwen3-Next's 32 value heads are
    not its 2 KV heads)."""
    return 1.0 / tp


def _share(arch: ModelArch, tp: int, split: bool) -> float:
    """The part of a layer's cache one GPU of a ``tp``-way group holds: its KV heads' (fewer heads than ranks are
    replicated), or all of it (a latent vector)."""
    return kv_heads_per_gpu(arch, tp) / arch.num_key_value_heads if split else 1.0


def kv_len_per_layer(arch: ModelArch, kv_len: float) -> list[tuple[int, float]]:
    """(layers, cached tokens) of each group of layers (``ModelArch.kv_groups``) for a sequence holding ``kv_len``
    tokens: a sliding-window layer caches min(kv_len, window), every other layer every token (a recurrent layer caches
    no values per token: its tokens count for nothing)."""
    return [(g.layers, min(kv_len, g.window) if g.window else kv_len) for g in _groups(arch)]


def attention_layers(arch: ModelArch) -> int:
    """Layers that attend over a KV cache (all but a hybrid's recurrent layers)."""
    return sum(g.layers for g in _groups(arch) if g.values)


def attended_pairs(arch: ModelArch, new_tokens: float, kv_len: float) -> float:
    """(query, key) pairs of one sequence's ``new_tokens`` queries after ``kv_len`` cached tokens, causal, averaged over
    the model's layers: a full layer's n*kv_len + n^2/2, a sliding layer's capped at its window, a recurrent layer's
    none (a decode step is new_tokens = 1: the cached tokens each layer reads)."""
    def pairs(n: float, c: float, w: int | None) -> float:
        if not w or c + n <= w:
            return n * c + n * n / 2
        below = max(0.0, w - c)  # queries whose keys have not reached the window yet
        return below * c + below * below / 2 + (n - below) * w

    return sum(g.layers * pairs(new_tokens, kv_len, g.window) for g in _groups(arch) if g.values) / arch.num_hidden_layers


def _group_token_bytes(arch: ModelArch, g: _Group, tp: int, kv_bits: int) -> float:
    """Bytes one token adds to one layer of group ``g`` on one GPU: its values per token, ``kv_bits`` each."""
    return g.values * _share(arch, tp, g.split) * kv_bits / 8


def _token_bytes(arch: ModelArch, tp: int, kv_bits: int) -> list[float]:
    """``_group_token_bytes`` of each group."""
    return [_group_token_bytes(arch, g, tp, kv_bits) for g in _groups(arch)]


def kv_bytes_per_token(arch: ModelArch, tp: int, kv_bits: int) -> float:
    """Bytes one new token adds to one sequence's cache on one GPU, all layers (what a prefill writes per token)."""
    return sum(g.layers * b for g, b in zip(_groups(arch), _token_bytes(arch, tp, kv_bits)))


def state_bytes(arch: ModelArch, tp: int, vllm: bool = False) -> float:
    """Bytes of fixed state one sequence keeps on one GPU whatever its length (a hybrid's convolution and scan
    states, as the model's own code holds them, or as vLLM does: ``vllm``; split evenly over TP ranks), all layers."""
    return sum(g.layers * (g.vllm_state if vllm else g.state) * _state_share(tp) for g in _groups(arch))


def kv_cache_bytes(arch: ModelArch, tp: int, kv_bits: int, kv_len: float, vllm: bool = False) -> float:
    """Bytes one sequence's cache holds on one GPU at ``kv_len`` cached tokens, all layers: the values each attending
    layer caches per token, ``kv_bits`` each, and the recurrent layers' fixed states (as vLLM keeps them: ``vllm``);
    also what one decode step of that sequence reads."""
    tokens = sum(n * cached * b for (n, cached), b in zip(kv_len_per_layer(arch, kv_len), _token_bytes(arch, tp, kv_bits)))
    return tokens + state_bytes(arch, tp, vllm)


def _paged_kinds(arch: ModelArch) -> list[_Group]:
    """The kinds of layer a paged engine keeps pages for (an MLP-only layer caches nothing)."""
    return [g for g in _groups(arch) if g.values or g.state]


def _vllm_state_page(arch: ModelArch, tp: int) -> float:
    """The largest fixed state one recurrent layer keeps per sequence on one GPU, as vLLM keeps it."""
    return max((g.vllm_state * _state_share(tp) for g in _groups(arch) if not g.values), default=0.0)


def hybrid_block_tokens(arch: ModelArch, tp: int, kv_bits: int, block_tokens: int) -> int:
    """Tokens of an attention block where a recurrent layer's state must fit one page (vLLM's hybrid manager):
    ``block_tokens`` x ceil(state / (``block_tokens`` x the largest bytes one token adds to one layer)); ``block_tokens``
    for a model without recurrent layers."""
    per_token = max(_token_bytes(arch, tp, kv_bits), default=0.0)
    state = _vllm_state_page(arch, tp)
    if not per_token or not state:
        return block_tokens
    return block_tokens * max(1, math.ceil(state / (block_tokens * per_token)))


def paged_cache_bytes(arch: ModelArch, tp: int, kv_bits: int, kv_len: int, block_tokens: int, vllm: bool) -> float:
    """Bytes a paged engine reserves on one GPU for one sequence of ``kv_len`` tokens: whole blocks of
    ``block_tokens``; with ``vllm``, its states as vLLM keeps them (``state_bytes``) and a model whose layers cache
    unlike paged as vLLM's hybrid KV cache manager pages it
    (vLLM 0.34.0: v1/core/kv_cache_utils.py ``_get_kv_cache_groups_uniform_page_size``, platforms/interface.py
    ``_align_hybrid_block_size``):

    - every page holds the same bytes: a recurrent layer's state is one page, so the attention block grows to
      ``block_tokens`` x ceil(state / (``block_tokens`` x one token's bytes)) tokens (Qwen3-Next-80B: 576) and the state
      is padded to it; a kind of layer with fewer bytes per token gets more tokens per page;
    - the layers caching alike are split into groups of as many layers as the smallest such kind has, the last group
      of a kind padded with empty layers; a block id holds one page for each layer of a group;
    - a sequence takes ceil(kv_len / block) blocks in a full-attention group, those covering its window in a sliding
      one, one block in a recurrent group. Layers that cache nothing (an MLP-only layer) take no pages."""
    kinds = _paged_kinds(arch)
    if not vllm or len(kinds) < 2:
        return kv_cache_bytes(arch, tp, kv_bits, math.ceil(kv_len / block_tokens) * block_tokens, vllm)
    token = {g: _group_token_bytes(arch, g, tp, kv_bits) for g in kinds if g.values}
    page = max(hybrid_block_tokens(arch, tp, kv_bits, block_tokens) * max(token.values(), default=0.0),
               _vllm_state_page(arch, tp))
    group = min(g.layers for g in kinds)
    blocks = 0
    for g in kinds:
        if g.values:
            tokens_per_page = page / token[g]
            held = math.ceil(kv_len / tokens_per_page)
            if g.window:  # the blocks covering the last window - 1 tokens and the newest
                held = min(held, math.ceil((g.window - 1) / tokens_per_page) + 1)
        else:
            held = 1
        blocks += math.ceil(g.layers / group) * held
    return float(group * page * blocks)
