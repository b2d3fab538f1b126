"""A decoder as serving engines run it, built from shapes with random weights: what ``probes.engine_sweep`` times.

vLLM's ``LlamaDecoderLayer`` structure (read from its model code) in plain torch, no vLLM needed:

- one fused QKV GEMM (with Qwen2's bias when the architecture has it), RoPE on q and k, optional q/k RMSNorm
  (Qwen3), attention over the grouped K/V heads **as stored** (``F.scaled_dot_product_attention`` with
  ``enable_gqa=True`` on the FlashAttention backend, else the query heads of each KV head as one batched GEMM;
  nothing is repeated per query head), the output GEMM;
- RMSNorm (``F.rms_norm``) before attention and MLP with the residual adds, one fused gate/up GEMM,
  SiLU-and-multiply, the down GEMM; a final norm and the LM head on the last position of each sequence;
- an MoE layer as vLLM's ``fused_moe``: the router, softmax and top-k, the (token, expert) pairs sorted by expert,
  one grouped GEMM (``torch._grouped_mm``) for every expert's gate/up and one for the downs, each expert's weights
  read once, and a shared expert with its sigmoid gate where the model has one (Qwen2-MoE). OLMoE's q/k norms span
  all heads (per head here: the same kernels and bytes). DeepSeek's latent attention and dense first layer are not
  built.

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
    experts: int = 1  # routed experts (1: a dense MLP of ``inter``); each expert's MLP is ``inter`` wide
    top_k: int = 1
    norm_topk: bool = False  # renormalise the top-k routing weights (the config's norm_topk_prob)
    shared_inter: int = 0  # a shared expert beside the routed ones (Qwen2-MoE), 0: none
    shared_gate: bool = False  # the shared expert's output scaled by sigmoid(Linear(hidden, 1)) (Qwen2-MoE)

    @classmethod
    def of(cls, arch: ModelArch, qk_norm: bool = False) -> "Shapes":
        cfg = arch.hf_config or {}
        if arch.is_moe and int(cfg.get("first_k_dense_replace") or 0) or cfg.get("kv_lora_rank"):
            raise ValueError(f"{arch.name}: a dense prefix and latent attention (DeepSeek) are not built by probes.engine_model")
        shared = int(cfg.get("shared_expert_intermediate_size") or 0)
        return cls(arch.hidden_size, arch.intermediate_size, arch.num_hidden_layers, arch.num_attention_heads,
                   arch.num_key_value_heads, arch.head_size, arch.vocab_size, arch.attention_bias, qk_norm,
                   arch.tie_word_embeddings, arch.num_local_experts, arch.num_experts_per_tok,
                   bool(cfg.get("norm_topk_prob", False)), shared, shared > 0 and arch.hf_model_type == "qwen2_moe")


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
            "o": w(s.hidden, s.heads * s.head_dim), **self._mlp_weights(w),
        } for _ in range(s.layers)]
        self.moe_path = ""  # "grouped_mm" or "loop": how the routed experts ran (set by the first MoE forward)
        self.k_cache: list[Any] = []
        self.v_cache: list[Any] = []
        self.inv_freq = 1.0 / (10000.0 ** (torch.arange(0, s.head_dim, 2, device=device, dtype=torch.float32) / s.head_dim))

    def _mlp_weights(self, w: Any) -> dict[str, Any]:
        """A dense gate/up + down, or vLLM's fused-MoE layout: every expert's gate/up stacked [E, 2I, H], its down
        [E, H, I], a router [E, H], and a shared expert (with its gate) where the model has one."""
        s = self.s
        if s.experts == 1:
            return {"gate_up": w(2 * s.inter, s.hidden), "down": w(s.hidden, s.inter)}
        out = {"router": w(s.experts, s.hidden), "w13": w(s.experts, 2 * s.inter, s.hidden), "w2": w(s.experts, s.hidden, s.inter)}
        if s.shared_inter:
            out |= {"shared_gate_up": w(2 * s.shared_inter, s.hidden), "shared_down": w(s.hidden, s.shared_inter)}
        if s.shared_gate:
            out["shared_gate"] = w(1, s.hidden)
        return out

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
            x = self._mlp(h, L) + residual
            residual = x
        last = F.rms_norm(x[:, -1], (s.hidden,), self.final_norm, eps)
        return F.linear(last, self.lm_head).argmax(-1)

    def _mlp(self, h: Any, L: dict[str, Any]) -> Any:
        import torch.nn.functional as F

        if self.s.experts == 1:
            gate, up = F.linear(h, L["gate_up"]).chunk(2, dim=-1)
            return F.linear(F.silu(gate) * up, L["down"])
        out = self._experts(h.reshape(-1, self.s.hidden), L).view_as(h)
        if self.s.shared_inter:
            gate, up = F.linear(h, L["shared_gate_up"]).chunk(2, dim=-1)
            shared = F.linear(F.silu(gate) * up, L["shared_down"])
            if self.s.shared_gate:
                shared = F.sigmoid(F.linear(h, L["shared_gate"])) * shared
            out = out + shared
        return out

    def _experts(self, x: Any, L: dict[str, Any]) -> Any:
        """vLLM's fused MoE in torch: route, sort the (token, expert) pairs by expert, one grouped GEMM for every
        expert's gate/up, SiLU-and-multiply, one grouped GEMM for the downs, back to token order, weighted sum. Static
        shapes throughout (counts by one-hot, no ``.item()``), so a decode step captures in one CUDA graph; each
        expert's weights are read once however many tokens it got. Where ``torch._grouped_mm`` does not run, every
        expert over every token, weighted (correct, not engine-like: ``moe_path`` says "loop", the sweep's notes too)."""
        import torch
        import torch.nn.functional as F

        s = self.s
        probs = F.linear(x, L["router"]).softmax(dim=-1, dtype=torch.float32)
        weights, ids = probs.topk(s.top_k, dim=-1)
        if s.norm_topk:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        flat = ids.reshape(-1)
        order = flat.argsort()
        if self.moe_path != "loop":
            try:
                offs = F.one_hot(flat, s.experts).sum(dim=0).cumsum(dim=0).to(torch.int32)
                rows = x.index_select(0, order // s.top_k)  # each sorted (token, expert) pair's token
                gate, up = torch._grouped_mm(rows, L["w13"].transpose(-2, -1), offs=offs).chunk(2, dim=-1)
                y = torch._grouped_mm(F.silu(gate) * up, L["w2"].transpose(-2, -1), offs=offs)
                self.moe_path = "grouped_mm"
                # back to [token, k] order (vLLM's second GEMM writes there), then the weighted sum over k (its
                # moe_sum): a gather and a reduction, no atomic scatter-add
                y = y.index_select(0, order.argsort()).view(x.shape[0], s.top_k, -1)
                return (y * weights.to(x.dtype)[..., None]).sum(dim=1)
            except (RuntimeError, AttributeError, NotImplementedError):
                if self.moe_path == "grouped_mm":
                    raise
                self.moe_path = "loop"
        out = torch.zeros_like(x)
        w = torch.zeros(x.shape[0], s.experts, dtype=x.dtype, device=x.device).scatter_(1, ids, weights.to(x.dtype))
        for e in range(s.experts):
            gate, up = F.linear(x, L["w13"][e]).chunk(2, dim=-1)
            out = out + F.linear(F.silu(gate) * up, L["w2"][e]) * w[:, e:e + 1]
        return out

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
