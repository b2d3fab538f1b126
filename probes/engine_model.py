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

import dataclasses
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
    layer_norm: bool = False  # LayerNorm with a bias (StarCoder2) instead of RMSNorm
    gated: bool = True  # gate/up -> act(gate) * up -> down; False: fc -> act -> proj (StarCoder2)
    gelu: bool = False  # GELU (tanh) instead of SiLU
    linear_bias: bool = False  # biases on the output projection and the MLP (StarCoder2's use_bias)
    post_norms: bool = False  # Gemma-2: the attention's and the MLP's outputs normalised before the residual add
    windows: tuple[int | None, ...] = ()  # per layer, the sliding window a decode step reads (empty: none)
    embed_scale: bool = False  # Gemma: embeddings times sqrt(hidden)
    final_softcap: float = 0.0  # Gemma-2: logits = cap * tanh(logits / cap)

    @classmethod
    def of(cls, arch: ModelArch, qk_norm: bool = False) -> "Shapes":
        cfg = arch.hf_config or {}
        if arch.is_moe and int(cfg.get("first_k_dense_replace") or 0) or cfg.get("kv_lora_rank"):
            raise ValueError(f"{arch.name}: a dense prefix and latent attention (DeepSeek) are not built by probes.engine_model")
        if arch.hf_model_type not in ENGINE_TYPES:
            raise ValueError(f"{arch.name}: model_type {arch.hf_model_type!r} is not built by probes.engine_model "
                             f"(built: {', '.join(sorted(ENGINE_TYPES))})")
        shared = int(cfg.get("shared_expert_intermediate_size") or 0)
        base = cls(arch.hidden_size, arch.intermediate_size, arch.num_hidden_layers, arch.num_attention_heads,
                   arch.num_key_value_heads, arch.head_size, arch.vocab_size, arch.attention_bias, qk_norm,
                   arch.tie_word_embeddings, arch.num_local_experts, arch.num_experts_per_tok,
                   bool(cfg.get("norm_topk_prob", False)), shared, shared > 0 and arch.hf_model_type == "qwen2_moe")
        return dataclasses.replace(base, **_family(arch))


# the families this layer builds: Llama's structure (and Qwen2/3, Mistral, Phi-3's fused projections, Granite, OLMo-2's
# q/k norms, the MoE ones) and, through ``_family``, StarCoder2's and Gemma-2's
ENGINE_TYPES = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "olmoe", "olmo2", "phi3",
                          "granite", "starcoder2", "gemma2"})


def _family(arch: ModelArch) -> dict[str, Any]:
    """What a family's layer does beyond Llama's, read from its config as transformers fills it in."""
    if arch.hf_model_type not in ("starcoder2", "gemma2"):
        return {}
    from probes.hf_model import config_from_dict

    cfg = config_from_dict(arch.hf_config or {})
    window = getattr(cfg, "sliding_window", None)
    types = list(getattr(cfg, "layer_types", None) or [])
    windows = tuple(window if window and (not types or "sliding" in str(types[i])) else None
                    for i in range(arch.num_hidden_layers)) if window else ()
    if arch.hf_model_type == "starcoder2":
        return {"layer_norm": True, "gated": False, "gelu": True, "linear_bias": bool(cfg.use_bias),
                "qkv_bias": bool(cfg.use_bias), "windows": windows}
    return {"gelu": True, "post_norms": True, "windows": windows, "embed_scale": True,
            "final_softcap": float(getattr(cfg, "final_logit_softcapping", 0.0) or 0.0)}


class EngineDecoder:
    """Random bf16 (fp32 on CPU) weights of ``Shapes`` and a KV cache; ``forward`` adds tokens to the cache."""

    def __init__(self, s: Shapes, device: Any, dtype: Any, seed: int = 0) -> None:
        import torch

        self.s, self.device, self.dtype = s, device, dtype
        g = torch.Generator(device=device).manual_seed(seed)

        def w(*shape: int) -> Any:
            return torch.empty(*shape, device=device, dtype=dtype).normal_(0.0, 0.02, generator=g)

        qkv = (s.heads + 2 * s.kv_heads) * s.head_dim
        ones = lambda n: torch.ones(n, device=device, dtype=dtype)  # noqa: E731
        self.embed = w(s.vocab, s.hidden)
        self.lm_head = self.embed if s.tied else w(s.vocab, s.hidden)
        self.final_norm, self.final_norm_b = ones(s.hidden), (w(s.hidden) if s.layer_norm else None)
        self.layers = [{
            "in_norm": ones(s.hidden), "in_norm_b": w(s.hidden) if s.layer_norm else None,
            "post_norm": ones(s.hidden), "post_norm_b": w(s.hidden) if s.layer_norm else None,
            "attn_out_norm": ones(s.hidden) if s.post_norms else None,
            "mlp_out_norm": ones(s.hidden) if s.post_norms else None,
            "qkv": w(qkv, s.hidden), "qkv_bias": w(qkv) if s.qkv_bias else None,
            "q_norm": ones(s.head_dim) if s.qk_norm else None, "k_norm": ones(s.head_dim) if s.qk_norm else None,
            "o": w(s.hidden, s.heads * s.head_dim), "o_bias": w(s.hidden) if s.linear_bias else None,
            **self._mlp_weights(w),
        } for _ in range(s.layers)]
        self.moe_path = ""  # "grouped_mm" or "loop": how the routed experts ran (set by the first MoE forward)
        self.k_cache: list[Any] = []
        self.v_cache: list[Any] = []
        self.inv_freq = 1.0 / (10000.0 ** (torch.arange(0, s.head_dim, 2, device=device, dtype=torch.float32) / s.head_dim))

    def _mlp_weights(self, w: Any) -> dict[str, Any]:
        """A dense gate/up + down, or vLLM's fused-MoE layout: every expert's gate/up stacked [E, 2I, H], its down
        [E, H, I], a router [E, H], and a shared expert (with its gate) where the model has one."""
        s = self.s
        if s.experts == 1 and not s.gated:
            return {"fc": w(s.inter, s.hidden), "fc_bias": w(s.inter) if s.linear_bias else None,
                    "proj": w(s.hidden, s.inter), "proj_bias": w(s.hidden) if s.linear_bias else None}
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
        if s.embed_scale:
            x = x * math.sqrt(s.hidden)
        residual = x
        eps = 1e-6
        for i, L in enumerate(self.layers):
            h = self._norm(x, L["in_norm"], L["in_norm_b"])
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
            o = self._attend(q, kc, vc, start_t, start, t, attn, s.windows[i] if s.windows else None)
            a = F.linear(o.transpose(1, 2).reshape(b, t, s.heads * s.head_dim), L["o"], L["o_bias"])
            x = (self._norm(a, L["attn_out_norm"]) if s.post_norms else a) + residual
            residual = x
            h = self._norm(x, L["post_norm"], L["post_norm_b"])
            m = self._mlp(h, L)
            x = (self._norm(m, L["mlp_out_norm"]) if s.post_norms else m) + residual
            residual = x
        logits = F.linear(self._norm(x[:, -1], self.final_norm, self.final_norm_b), self.lm_head)
        if s.final_softcap:
            logits = torch.tanh(logits / s.final_softcap) * s.final_softcap
        return logits.argmax(-1)

    def _norm(self, x: Any, weight: Any, bias: Any = None) -> Any:
        """The family's norm, one kernel: RMSNorm, or LayerNorm with its bias (Gemma's 1 + w is in the weight)."""
        import torch.nn.functional as F

        if self.s.layer_norm:
            return F.layer_norm(x, (self.s.hidden,), weight, bias, 1e-5)
        return F.rms_norm(x, (self.s.hidden,), weight, 1e-6)

    def _mlp(self, h: Any, L: dict[str, Any]) -> Any:
        import torch.nn.functional as F

        act = (lambda v: F.gelu(v, approximate="tanh")) if self.s.gelu else F.silu
        if self.s.experts == 1 and not self.s.gated:
            return F.linear(act(F.linear(h, L["fc"], L["fc_bias"])), L["proj"], L["proj_bias"])
        if self.s.experts == 1:
            gate, up = F.linear(h, L["gate_up"]).chunk(2, dim=-1)
            return F.linear(act(gate) * up, L["down"])
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

    def _attend(self, q: Any, kc: Any, vc: Any, start_t: Any, start: Any, t: int, attn: str,
                window: int | None = None) -> Any:
        """q [b, H, t, d] over the cache [b, Hkv, L, d] up to position start + t - 1 (all of it in decode; a sliding
        ``window`` reads its last ``window`` positions only, as a paged engine reads only those blocks). A prefill
        chunk attends causally over all it sees: the window is not applied there (nor in the prediction's prefill)."""
        import torch
        import torch.nn.functional as F

        if t == 1:  # decode: the cache holds exactly the positions attended (sized kv_len + 1)
            keys, values, mask = kc, vc, None
            if window and kc.shape[2] > window:
                keys, values = kc[:, :, -window:], vc[:, :, -window:]
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
