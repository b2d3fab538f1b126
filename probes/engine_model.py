"""A decoder as serving engines run it, built from shapes with random weights: what ``probes.engine_sweep`` times.

vLLM's ``LlamaDecoderLayer`` structure (read from its model code) in plain torch, no vLLM needed:

- one fused QKV GEMM (with Qwen2's bias when the architecture has it), RoPE on q and k, optional q/k RMSNorm
  (Qwen3), attention over the grouped K/V heads **as stored** (``F.scaled_dot_product_attention`` with
  ``enable_gqa=True`` on the FlashAttention backend, else the query heads of each KV head as one batched GEMM;
  nothing is repeated per query head), the output GEMM;
- RMSNorm (``F.rms_norm``) before attention and MLP with the residual adds, one fused gate/up GEMM,
  SiLU-and-multiply, the down GEMM; a final norm and the LM head on the last position of each sequence.

The KV cache is one contiguous tensor per layer, ``[batch, kv_heads, length, head_dim]`` for K and for V (a paged
cache reads the same bytes in blocks). Unlike vLLM, norms, RoPE and SiLU-and-multiply are several torch kernels
each, not one fused kernel; decode replays them from one CUDA graph, where a kernel costs a few microseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from knowledge.schema import ModelArch


@dataclass(frozen=True)
class Shapes:
    """What the decoder needs of a ``ModelArch`` (plus q/k norms, which the schema does not describe yet)."""

    hidden: int
    inter: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    qkv_bias: bool = False
    qk_norm: bool = False
    tied: bool = False  # the LM head is the embedding

    @classmethod
    def of(cls, arch: ModelArch, qk_norm: bool = False) -> "Shapes":
        if arch.is_moe:
            raise ValueError(f"{arch.name}: MoE layers are not built by probes.engine_model")
        return cls(arch.hidden_size, arch.intermediate_size, arch.num_hidden_layers, arch.num_attention_heads,
                   arch.num_key_value_heads, arch.head_size, arch.vocab_size, arch.attention_bias, qk_norm,
                   arch.tie_word_embeddings)


class EngineDecoder:
    """Random bf16 (fp32 on CPU) weights of ``Shapes`` and a KV cache; ``forward`` adds tokens to the cache."""

    def __init__(self, s: Shapes, device: Any, dtype: Any, seed: int = 0) -> None:
        import torch

        self.s, self.device, self.dtype = s, device, dtype
        g = torch.Generator(device=device).manual_seed(seed)

        def w(*shape: int) -> Any:
            return torch.empty(*shape, device=device, dtype=dtype).normal_(0.0, 0.02, generator=g)

        qkv = (s.heads + 2 * s.kv_heads) * s.head_dim
        self.embed = w(s.vocab, s.hidden)
        self.lm_head = self.embed if s.tied else w(s.vocab, s.hidden)
        self.final_norm = torch.ones(s.hidden, device=device, dtype=dtype)
        self.layers = [{
            "in_norm": torch.ones(s.hidden, device=device, dtype=dtype),
            "post_norm": torch.ones(s.hidden, device=device, dtype=dtype),
            "qkv": w(qkv, s.hidden), "qkv_bias": w(qkv) if s.qkv_bias else None,
            "q_norm": torch.ones(s.head_dim, device=device, dtype=dtype) if s.qk_norm else None,
            "k_norm": torch.ones(s.head_dim, device=device, dtype=dtype) if s.qk_norm else None,
            "o": w(s.hidden, s.heads * s.head_dim), "gate_up": w(2 * s.inter, s.hidden), "down": w(s.hidden, s.inter),
        } for _ in range(s.layers)]
        self.k_cache: list[Any] = []
        self.v_cache: list[Any] = []
        self.inv_freq = 1.0 / (10000.0 ** (torch.arange(0, s.head_dim, 2, device=device, dtype=torch.float32) / s.head_dim))

    def allocate(self, batch: int, length: int) -> None:
        """A cache of ``length`` positions for ``batch`` sequences (replaces any previous one)."""
        import torch

        self.k_cache = self.v_cache = []
        shape = (batch, self.s.kv_heads, length, self.s.head_dim)
        self.k_cache = [torch.zeros(shape, device=self.device, dtype=self.dtype) for _ in range(self.s.layers)]
        self.v_cache = [torch.zeros(shape, device=self.device, dtype=self.dtype) for _ in range(self.s.layers)]

    def _rope(self, x: Any, positions: Any) -> Any:
        """Rotary embedding (rotate-half) of ``x`` [b, h, t, d] at ``positions`` [b, t]."""
        import torch

        ang = positions.to(torch.float32)[..., None] * self.inv_freq  # [b, t, d/2]
        cos, sin = ang.cos().to(x.dtype)[:, None], ang.sin().to(x.dtype)[:, None]
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def forward(self, ids: Any, start: Any, rows: slice | None = None, attn: str = "sdpa") -> Any:
        """Add ``ids`` [b, t] at cache positions ``start`` .. ``start + t - 1`` of sequences ``rows`` (default all)
        and return the next token of each sequence (greedy). ``start`` is a device tensor [1] (so a captured graph
        can move it) or an int. Attention runs over the grouped heads as stored, causal within the new tokens."""
        import torch
        import torch.nn.functional as F

        s = self.s
        b, t = ids.shape
        rows = rows or slice(0, b)
        start_t = start if torch.is_tensor(start) else torch.tensor([start], device=self.device)
        pos = start_t + torch.arange(t, device=self.device)  # [t]
        positions = pos.expand(b, t)
        x = F.embedding(ids, self.embed)
        residual = x
        eps = 1e-6
        for i, L in enumerate(self.layers):
            h = F.rms_norm(x, (s.hidden,), L["in_norm"], eps)
            qkv = F.linear(h, L["qkv"], L["qkv_bias"])
            q, k, v = qkv.split([s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], dim=-1)
            q = q.view(b, t, s.heads, s.head_dim).transpose(1, 2)
            k = k.view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
            v = v.view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
            if s.qk_norm:
                q = F.rms_norm(q, (s.head_dim,), L["q_norm"], eps)
                k = F.rms_norm(k, (s.head_dim,), L["k_norm"], eps)
            q, k = self._rope(q, positions), self._rope(k, positions)
            kc, vc = self.k_cache[i][rows], self.v_cache[i][rows]
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            o = self._attend(q, kc, vc, start_t, start, t, attn)
            x = F.linear(o.transpose(1, 2).reshape(b, t, s.heads * s.head_dim), L["o"]) + residual
            residual = x
            h = F.rms_norm(x, (s.hidden,), L["post_norm"], eps)
            gate, up = F.linear(h, L["gate_up"]).chunk(2, dim=-1)
            x = F.linear(F.silu(gate) * up, L["down"]) + residual
            residual = x
        last = F.rms_norm(x[:, -1], (s.hidden,), self.final_norm, eps)
        return F.linear(last, self.lm_head).argmax(-1)

    def _attend(self, q: Any, kc: Any, vc: Any, start_t: Any, start: Any, t: int, attn: str) -> Any:
        """q [b, H, t, d] over the cache [b, Hkv, L, d] up to position start + t - 1 (all of it in decode)."""
        import torch
        import torch.nn.functional as F

        if t == 1:  # decode: the cache holds exactly the positions attended (sized kv_len + 1)
            keys, values, mask = kc, vc, None
        else:
            first = int(start) if not torch.is_tensor(start) else int(start.item())
            keys, values = kc[:, :, : first + t], vc[:, :, : first + t]
            # bottom-right causal: new token j sees the cache so far and new tokens 0..j
            mask = None if first == 0 else torch.ones(t, first + t, dtype=torch.bool, device=q.device).tril(first)
        if attn == "sdpa":
            # FlashAttention only on a GPU: torch's math fallback would repeat K/V per query head after all
            # (a masked chunk, which flash cannot take, falls back to the default choice)
            from contextlib import nullcontext

            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]) if q.is_cuda and mask is None else nullcontext():
                return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, is_causal=t > 1 and mask is None,
                                                      enable_gqa=True)
        # "bmm": the query heads of each KV head as the rows of one batched GEMM over the stored K/V
        b, H, _, d = q.shape
        g = H // keys.shape[1]
        qg = q.reshape(b, keys.shape[1], g * t, d)
        scores = (qg @ keys.transpose(-1, -2)).to(torch.promote_types(q.dtype, torch.float32)) / math.sqrt(d)
        if t > 1:
            causal = torch.ones(t, keys.shape[2], dtype=torch.bool, device=q.device).tril(keys.shape[2] - t)
            scores = scores.view(b, keys.shape[1], g, t, -1).masked_fill(~causal, float("-inf")).view_as(scores)
        return (scores.softmax(-1).to(values.dtype) @ values).view(b, H, t, d)


def attention_that_runs(dec: EngineDecoder, wanted: str) -> str:
    """``wanted`` if it runs here on grouped heads (decode and a causal chunk), else "bmm" (always runs)."""
    import torch

    if wanted != "sdpa":
        return wanted
    s = dec.s
    try:
        for t in (1, 16):
            q = torch.randn(1, s.heads, t, s.head_dim, device=dec.device, dtype=dec.dtype)
            kv = torch.randn(1, s.kv_heads, 16, s.head_dim, device=dec.device, dtype=dec.dtype)
            dec._attend(q, kv, kv, torch.tensor([16 - t], device=dec.device), 0 if t == 16 else 15, t, "sdpa")
    except RuntimeError:
        return "bmm"
    return "sdpa"
