"""A decoder as serving engines run it, built from shapes with random weights: what ``probes.engine_sweep`` times.

vLLM's decoder layers (read from its model code) in plain torch, no vLLM needed. Vllm-like:

- one fused QKV GEMM (with biases where the family has them: Qwen2, Qwen2-MoE, StarCoder2), RoPE on q and k, q/k
  RMSNorm where the family has it (per head: Qwen3; over the full q and k widths: OLMoE, OLMo-2), attention over
  the grouped K/V heads **as stored** (``F.scaled_dot_product_attention`` with ``enable_gqa=True`` on the
  FlashAttention backend, else the query heads of each KV head as one batched GEMM; nothing is repeated per query
  head), the output GEMM;
- the norms before attention and MLP with the residual adds: RMSNorm (``F.rms_norm``), or LayerNorm with a bias
  (StarCoder2); Gemma-2's four norms per layer (its attention's and MLP's outputs normalised before the add); the
  final norm and the LM head on the last position of each sequence (Gemma-2's final logit soft-cap);
- the MLP: one fused gate/up GEMM, SiLU- (or GELU-tanh-, Gemma's GeGLU) and-multiply, the down GEMM; or
  StarCoder2's plain c_fc -> GELU(tanh) -> c_proj with biases;
- an MoE layer as vLLM's ``fused_moe``: the router GEMM, softmax and top-k (renormalised where the config says, and
  always for Mixtral), the (token, expert) pairs sorted by expert, ONE grouped GEMM (``torch._grouped_mm``) for
  every expert's gate/up (``w13`` [E, 2I, H]) and one for the downs (``w2`` [E, H, I]), each expert's weights read
  once, static shapes (a decode step captures in one CUDA graph); a shared expert with its sigmoid gate where the
  model has one (Qwen2-MoE);
- sliding windows (StarCoder2 every layer, Gemma-2 alternate layers, Gemma-3 five of six, its q/k normalised per
  head; from the config as transformers fills it in): a decode step reads only the last ``window`` cached positions
  (vLLM reads only those blocks); a prefill chunk reads from the window's start and is masked to it; a chunk longer
  than its window runs one window of queries at a time under a boolean mask, so the tiles outside the window are
  skipped as FlashAttention's local attention (vLLM) skips them, though each window's masked SDPA runs 5-12x
  FlexAttention's time on an H100 (logs/h100x1-window-attention-2026-12-07.jsonl). FlexAttention in the decoder was
  tried and taken out: with a block mask built for each chunk and the kernel compiled per key length, Gemma-3-1B's
  prefill ran 0.8-1.4x the masked windows' time with the offsets as Python ints (grid engine-families-9) and 1.4-4.2x
  with them as tensors (engine-families-10), both on one H100 on 2026-12-07.

Not vLLM-like: the KV cache is one contiguous tensor per layer, ``[batch, kv_heads, length, head_dim]`` for K and V
(a paged cache reads the same bytes in blocks), every position kept even in a sliding layer (vLLM's hybrid allocator
keeps only the window's blocks); norms, RoPE and the activation-and-multiply are several torch kernels each, not
one fused kernel (decode replays them from one CUDA graph, where a kernel costs a few microseconds); RoPE's base is
10000 for all (the angles' values change no kernel); Gemma's norm weight ``1 + w`` is held folded in one weight;
Gemma-2's attention-logit soft-cap is not applied (SDPA takes none; the rows' notes say so); where
``torch._grouped_mm`` does not run the routed experts run one by one over the tokens routed to each (eager, data-
dependent shapes: ``moe_path`` is "loop" and the rows' notes say so). Not built (``Shapes.of`` raises, naming it):
other model types, DeepSeek's latent attention and dense first layers, MoE models with dense layers among the MoE
ones (``mlp_only_layers``, ``decoder_sparse_step``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from knowledge.engines import QK_NORM_TYPES
from knowledge.schema import ModelArch


@dataclass(frozen=True)
class Shapes:
    """What the decoder needs of a ``ModelArch``: its sizes and the structure its family's layer has."""

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
    norm_topk: bool = False  # renormalise the top-k routing weights (the config's norm_topk_prob; Mixtral always)
    shared_inter: int = 0  # a shared expert beside the routed ones (Qwen2-MoE), 0: none
    shared_gate: bool = False  # the shared expert's output scaled by sigmoid(Linear(hidden, 1)) (Qwen2-MoE)
    layer_norm: bool = False  # LayerNorm with a bias (StarCoder2) instead of RMSNorm
    gated: bool = True  # gate/up -> act(gate) * up -> down; False: fc -> act -> proj (StarCoder2)
    gelu: bool = False  # GELU (tanh) instead of SiLU
    linear_bias: bool = False  # biases on the output projection and the MLP (StarCoder2's use_bias)
    post_norms: bool = False  # Gemma-2: the attention's and the MLP's outputs normalised before the residual add
    windows: tuple[int | None, ...] = ()  # per layer, the sliding window (None: full attention; empty: none at all)
    embed_scale: bool = False  # Gemma: embeddings times sqrt(hidden)
    final_softcap: float = 0.0  # Gemma-2: logits = cap * tanh(logits / cap)
    qk_norm_full: bool = False  # the q/k norms span all heads' q and all KV heads' k (OLMoE, OLMo-2), not one head
    attn_scale: float | None = None  # the score scale where not 1/sqrt(head_dim) (Gemma-2: query_pre_attn_scalar^-0.5)
    attn_softcap: float = 0.0  # Gemma-2's attention-logit soft-cap: recorded, not applied (SDPA takes none)

    @classmethod
    def of(cls, arch: ModelArch, qk_norm: bool | None = None) -> "Shapes":
        """The shapes of ``arch``; its family's structure read from its config (transformers' defaults filled in).
        ``qk_norm`` defaults to whether the family normalises q and k (``knowledge.engines.QK_NORM_TYPES``).
        A family this layer does not build raises a ValueError naming what is missing."""
        check_buildable(arch)
        if qk_norm is None:
            qk_norm = arch.hf_model_type in QK_NORM_TYPES
        base = cls(arch.hidden_size, arch.intermediate_size, arch.num_hidden_layers, arch.num_attention_heads,
                   arch.num_key_value_heads, arch.head_size, arch.vocab_size, arch.attention_bias, qk_norm,
                   arch.tie_word_embeddings, qk_norm_full=qk_norm and arch.hf_model_type in QK_NORM_FULL_WIDTH_TYPES)
        return dataclasses.replace(base, **moe_structure(arch), **family_structure(arch))


# the families this layer builds: Llama's structure (and Qwen2/3, Mistral, Phi-3's fused projections, Granite, OLMo-2's
# q/k norms, the MoE ones: Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE) and, through ``family_structure``, StarCoder2's and
# Gemma-2's
ENGINE_TYPES = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "olmoe", "olmo2", "phi3",
                          "granite", "starcoder2", "gemma2", "gemma3_text"})
# families whose q_norm spans num_heads * head_dim and k_norm num_kv_heads * head_dim (transformers' and vLLM's
# Olmoe/Olmo2 attention); the config does not say, the family's code does
QK_NORM_FULL_WIDTH_TYPES = frozenset({"olmoe", "olmo2"})


def check_buildable(arch: ModelArch) -> None:
    """Raise a ValueError naming what ``arch`` has that this layer does not build."""
    cfg = arch.hf_config or {}
    if arch.is_moe and int(cfg.get("first_k_dense_replace") or 0) or cfg.get("kv_lora_rank"):
        raise ValueError(f"{arch.name}: a dense prefix and latent attention (DeepSeek) are not built by probes.engine_model")
    if arch.hf_model_type not in ENGINE_TYPES:
        raise ValueError(f"{arch.name}: model_type {arch.hf_model_type!r} is not built by probes.engine_model "
                         f"(built: {', '.join(sorted(ENGINE_TYPES))})")


def transformers_config(arch: ModelArch) -> Any:
    """The config as transformers fills it in (its family's defaults): from the config.json dict where the
    architecture has one, else the family's defaults."""
    from probes.hf_model import config_from_dict

    if arch.hf_config:
        return config_from_dict(arch.hf_config)
    import transformers

    return transformers.AutoConfig.for_model(arch.hf_model_type)


def moe_structure(arch: ModelArch) -> dict[str, Any]:
    """The routed experts, the routing and a shared expert, from the config (transformers' defaults filled in)."""
    if not arch.is_moe:
        return {}
    cfg = transformers_config(arch)
    dense = list(getattr(cfg, "mlp_only_layers", None) or [])
    step = int(getattr(cfg, "decoder_sparse_step", 1) or 1)
    if dense or step != 1:
        raise ValueError(f"{arch.name}: dense layers among the MoE layers (mlp_only_layers={dense}, "
                         f"decoder_sparse_step={step}) are not built by probes.engine_model")
    shared = int(getattr(cfg, "shared_expert_intermediate_size", 0) or 0)
    # a family whose config has no norm_topk_prob always renormalises (Mixtral's block, vLLM's renormalize=True)
    return {"experts": arch.num_local_experts, "top_k": arch.num_experts_per_tok,
            "norm_topk": bool(getattr(cfg, "norm_topk_prob", True)), "shared_inter": shared, "shared_gate": shared > 0}


def family_structure(arch: ModelArch) -> dict[str, Any]:
    """What a family's layer does beyond Llama's, read from its config as transformers fills it in."""
    build = {"starcoder2": starcoder2_structure, "gemma2": gemma2_structure, "gemma3_text": gemma2_structure,
             "phi3": phi3_structure}.get(arch.hf_model_type or "")
    return build(transformers_config(arch), arch.num_hidden_layers) if build else {}


def starcoder2_structure(cfg: Any, layers: int) -> dict[str, Any]:
    """LayerNorm with a bias, q/k/v/o and MLP biases (use_bias), a plain fc -> GELU -> proj MLP, a window on every
    layer."""
    return {"layer_norm": True, "gated": False, "gelu": is_gelu(cfg.hidden_act), "linear_bias": bool(cfg.use_bias),
            "qkv_bias": bool(cfg.use_bias), "windows": layer_windows(cfg, layers)}


def phi3_structure(cfg: Any, layers: int) -> dict[str, Any]:
    """Phi-3's attention passes the config's ``sliding_window`` on every layer (transformers' Phi3Attention; the 4k
    models' 2,047): Llama's layer otherwise (its fused qkv and gate/up are the engine's own layout)."""
    return {"windows": layer_windows(cfg, layers)}


def gemma2_structure(cfg: Any, layers: int) -> dict[str, Any]:
    """GeGLU, four norms a layer, embeddings scaled, a window on alternate layers, the score scale and soft-caps
    (Gemma-3: the same layer with per-head q/k norms, no soft-caps, five sliding layers to one full by its
    ``layer_types``)."""
    act = getattr(cfg, "hidden_activation", None) or cfg.hidden_act
    scalar = getattr(cfg, "query_pre_attn_scalar", None)
    return {"gelu": is_gelu(act), "post_norms": True, "embed_scale": True,
            "windows": layer_windows(cfg, layers, default_sliding=lambda i: i % 2 == 0),
            "attn_scale": float(scalar) ** -0.5 if scalar else None,
            "attn_softcap": float(getattr(cfg, "attn_logit_softcapping", 0.0) or 0.0),
            "final_softcap": float(getattr(cfg, "final_logit_softcapping", 0.0) or 0.0)}


def is_gelu(act: str) -> bool:
    if not (act.startswith("gelu") or act == "silu"):
        raise ValueError(f"activation {act!r} is not built by probes.engine_model (SiLU or GELU)")
    return act.startswith("gelu")


def layer_windows(cfg: Any, layers: int, default_sliding: Any = lambda i: True) -> tuple[int | None, ...]:
    """Each layer's sliding window: the config's ``sliding_window`` on the layers its ``layer_types`` say slide
    (without layer_types, the layers ``default_sliding`` says); empty when the config has no window."""
    window = getattr(cfg, "sliding_window", None)
    if not window:
        return ()
    types = list(getattr(cfg, "layer_types", None) or [])
    sliding = (lambda i: "sliding" in str(types[i])) if types else default_sliding
    return tuple(int(window) if sliding(i) else None for i in range(layers))


class EngineDecoder:
    """Random bf16 (fp32 on CPU) weights of ``Shapes`` and a KV cache; ``forward`` adds tokens to the cache."""

    def __init__(self, s: Shapes, device: Any, dtype: Any, seed: int = 0) -> None:
        import torch

        self.s, self.device, self.dtype = s, device, dtype
        g = torch.Generator(device=device).manual_seed(seed)

        def w(*shape: int) -> Any:
            return torch.empty(*shape, device=device, dtype=dtype).normal_(0.0, 0.02, generator=g)

        self.embed = w(s.vocab, s.hidden)
        self.lm_head = self.embed if s.tied else w(s.vocab, s.hidden)
        self.final_norm = torch.ones(s.hidden, device=device, dtype=dtype)
        self.final_norm_b = w(s.hidden) if s.layer_norm else None
        self.layers = [{**self._attention_weights(w), **self._mlp_weights(w)} for _ in range(s.layers)]
        self.moe_path = ""  # "grouped_mm" or "loop": how the routed experts ran (set by the first MoE forward)
        self.k_cache: list[Any] = []
        self.v_cache: list[Any] = []
        self.inv_freq = 1.0 / (10000.0 ** (torch.arange(0, s.head_dim, 2, device=device, dtype=torch.float32) / s.head_dim))

    def _attention_weights(self, w: Any) -> dict[str, Any]:
        """The norms around attention and the MLP, the fused QKV (and its bias), the q/k norms, the output GEMM."""
        import torch

        s = self.s
        ones = lambda n: torch.ones(n, device=self.device, dtype=self.dtype)  # noqa: E731
        q_width, k_width = (s.heads * s.head_dim, s.kv_heads * s.head_dim) if s.qk_norm_full else (s.head_dim, s.head_dim)
        qkv = (s.heads + 2 * s.kv_heads) * s.head_dim
        return {
            "in_norm": ones(s.hidden), "in_norm_b": w(s.hidden) if s.layer_norm else None,
            "post_norm": ones(s.hidden), "post_norm_b": w(s.hidden) if s.layer_norm else None,
            "attn_out_norm": ones(s.hidden) if s.post_norms else None,
            "mlp_out_norm": ones(s.hidden) if s.post_norms else None,
            "qkv": w(qkv, s.hidden), "qkv_bias": w(qkv) if s.qkv_bias else None,
            "q_norm": ones(q_width) if s.qk_norm else None, "k_norm": ones(k_width) if s.qk_norm else None,
            "o": w(s.hidden, s.heads * s.head_dim), "o_bias": w(s.hidden) if s.linear_bias else None,
        }

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

    def weights(self) -> list[Any]:
        """Every weight tensor once (a tied LM head is the embedding)."""
        import torch

        every = [self.embed, self.lm_head, self.final_norm, self.final_norm_b] + [v for L in self.layers for v in L.values()]
        return list({id(t): t for t in every if torch.is_tensor(t)}.values())

    def parameter_count(self) -> int:
        return sum(t.numel() for t in self.weights())

    def cache_bytes(self, batch: int, length: int) -> int:
        """What ``allocate(batch, length)`` holds: K and V of every position in every layer (sliding ones too)."""
        return 2 * self.s.layers * batch * self.s.kv_heads * length * self.s.head_dim * self.embed.element_size()

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
        can move it) or an int. Attention runs over the grouped heads as stored, causal within the new tokens.
        A decode step (t == 1) attends to the whole cache (or a sliding layer's last ``window`` positions of it):
        the cache is sized to exactly the positions so far, as the sweep allocates it."""
        import torch
        import torch.nn.functional as F

        s = self.s
        b, t = ids.shape
        rows = rows or slice(0, b)
        start_t = start if torch.is_tensor(start) else torch.tensor([start], device=self.device)
        pos = start_t + torch.arange(t, device=self.device)  # [t]
        x = F.embedding(ids, self.embed)
        if s.embed_scale:
            x = x * math.sqrt(s.hidden)
        for i, L in enumerate(self.layers):
            q, k, v = self._qkv(self._norm(x, L["in_norm"], L["in_norm_b"]), L, pos.expand(b, t))
            kc, vc = self.k_cache[i][rows], self.v_cache[i][rows]
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            o = self._attend(q, kc, vc, start, t, attn, s.windows[i] if s.windows else None)
            a = F.linear(o.transpose(1, 2).reshape(b, t, s.heads * s.head_dim), L["o"], L["o_bias"])
            x = (self._norm(a, L["attn_out_norm"]) if s.post_norms else a) + x
            m = self._mlp(self._norm(x, L["post_norm"], L["post_norm_b"]), L)
            x = (self._norm(m, L["mlp_out_norm"]) if s.post_norms else m) + x
        logits = F.linear(self._norm(x[:, -1], self.final_norm, self.final_norm_b), self.lm_head)
        if s.final_softcap:
            logits = torch.tanh(logits / s.final_softcap) * s.final_softcap
        return logits.argmax(-1)

    def _qkv(self, h: Any, L: dict[str, Any], positions: Any) -> tuple[Any, Any, Any]:
        """The fused QKV GEMM, the q/k norms (over all heads' width before the head split, or per head after it),
        RoPE on q and k: q [b, H, t, d], k and v [b, Hkv, t, d]."""
        import torch.nn.functional as F

        s = self.s
        b, t, _ = h.shape
        q, k, v = F.linear(h, L["qkv"], L["qkv_bias"]).split(
            [s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], dim=-1)
        if s.qk_norm and s.qk_norm_full:
            q = F.rms_norm(q, L["q_norm"].shape, L["q_norm"], 1e-6)
            k = F.rms_norm(k, L["k_norm"].shape, L["k_norm"], 1e-6)
        q = q.view(b, t, s.heads, s.head_dim).transpose(1, 2)
        k = k.view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
        v = v.view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
        if s.qk_norm and not s.qk_norm_full:
            q = F.rms_norm(q, (s.head_dim,), L["q_norm"], 1e-6)
            k = F.rms_norm(k, (s.head_dim,), L["k_norm"], 1e-6)
        return self._rope(q, positions), self._rope(k, positions), v

    def _norm(self, x: Any, weight: Any, bias: Any = None) -> Any:
        """The family's norm, one kernel: RMSNorm, or LayerNorm with its bias (Gemma's 1 + w is in the weight)."""
        import torch.nn.functional as F

        if self.s.layer_norm:
            return F.layer_norm(x, (self.s.hidden,), weight, bias, 1e-5)
        return F.rms_norm(x, (self.s.hidden,), weight, 1e-6)

    def _mlp(self, h: Any, L: dict[str, Any]) -> Any:
        """The dense MLP (gated, or fc -> act -> proj), or the routed experts plus a shared expert."""
        import torch.nn.functional as F

        act = self._act
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

    def _act(self, v: Any) -> Any:
        import torch.nn.functional as F

        return F.gelu(v, approximate="tanh") if self.s.gelu else F.silu(v)

    def route(self, x: Any, L: dict[str, Any]) -> tuple[Any, Any]:
        """The router GEMM, softmax, top-k (renormalised where the config says): weights and expert ids [T, k]."""
        import torch
        import torch.nn.functional as F

        probs = F.linear(x, L["router"]).softmax(dim=-1, dtype=torch.float32)
        weights, ids = probs.topk(self.s.top_k, dim=-1)
        if self.s.norm_topk:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights, ids

    def _experts(self, x: Any, L: dict[str, Any]) -> Any:
        """The routed experts of tokens ``x`` [T, H]: grouped GEMMs where ``torch._grouped_mm`` runs, else one expert
        after another (``moe_path`` says which ran; once grouped GEMMs have run, an error in them is raised)."""
        weights, ids = self.route(x, L)
        if self.moe_path != "loop":
            try:
                out = self._experts_grouped(x, L, weights, ids)
                self.moe_path = "grouped_mm"
                return out
            except (RuntimeError, AttributeError, NotImplementedError):
                if self.moe_path == "grouped_mm":
                    raise
                self.moe_path = "loop"
        return self._experts_loop(x, L, weights, ids)

    def _experts_grouped(self, x: Any, L: dict[str, Any], weights: Any, ids: Any) -> Any:
        """vLLM's fused MoE in torch: sort the (token, expert) pairs by expert, one grouped GEMM for every expert's
        gate/up, act-and-multiply, one grouped GEMM for the downs, back to token order, weighted sum. Static shapes
        throughout (counts by one-hot, no ``.item()``), so a decode step captures in one CUDA graph; each expert's
        weights are read once however many tokens it got."""
        import torch
        import torch.nn.functional as F

        s = self.s
        flat = ids.reshape(-1)
        order = flat.argsort()
        offs = F.one_hot(flat, s.experts).sum(dim=0).cumsum(dim=0).to(torch.int32)  # each expert's last row + 1
        rows = x.index_select(0, order // s.top_k)  # each sorted (token, expert) pair's token
        gate, up = torch._grouped_mm(rows, L["w13"].transpose(-2, -1), offs=offs).chunk(2, dim=-1)
        y = torch._grouped_mm(self._act(gate) * up, L["w2"].transpose(-2, -1), offs=offs)
        # back to [token, k] order (vLLM's second GEMM writes there), then the weighted sum over k (its moe_sum): a
        # gather and a reduction, no atomic scatter-add
        y = y.index_select(0, order.argsort()).view(x.shape[0], s.top_k, -1)
        return (y * weights.to(x.dtype)[..., None]).sum(dim=1)

    def _experts_loop(self, x: Any, L: dict[str, Any], weights: Any, ids: Any) -> Any:
        """The fallback: each expert over the tokens routed to it (a boolean mask), weighted, added back per token.
        Correct, eager, data-dependent shapes (no CUDA graph), one launch set per expert: not engine-like."""
        import torch

        out = torch.zeros_like(x)
        for e in range(self.s.experts):
            hit = ids == e  # [T, k]
            tokens = hit.any(dim=-1).nonzero().squeeze(-1)
            if tokens.numel() == 0:
                continue
            gate, up = torch.nn.functional.linear(x[tokens], L["w13"][e]).chunk(2, dim=-1)
            y = torch.nn.functional.linear(self._act(gate) * up, L["w2"][e])
            w = (weights * hit).sum(dim=-1)[tokens].to(x.dtype)
            out.index_add_(0, tokens, y * w[:, None])
        return out

    def _attend(self, q: Any, kc: Any, vc: Any, start: Any, t: int, attn: str,
                window: int | None = None) -> Any:
        """q [b, H, t, d] over the cache [b, Hkv, L, d] up to position start + t - 1. A decode step reads all of it,
        or a sliding ``window``'s last ``window`` positions only (a paged engine reads only those blocks); a prefill
        chunk attends causally over all it sees, from the window's start and masked to it where the window is
        shorter than what the chunk sees; a chunk longer than its window, one window of queries at a time."""
        import torch

        if t == 1:  # decode: the cache holds exactly the positions attended (sized kv_len + 1)
            keys, values, mask = kc, vc, None
            if window and kc.shape[2] > window:
                keys, values = kc[:, :, -window:], vc[:, :, -window:]
        else:
            first = int(start) if not torch.is_tensor(start) else int(start.item())
            if window and t > window:
                # FlashAttention's local attention (vLLM) skips the tiles outside the window: queries in blocks of
                # one window, each over the keys its window reaches (two windows at most), not the whole chunk's
                parts = [self._attend(q[:, :, a: a + window], kc, vc, first + a, min(window, t - a), attn, window)
                         for a in range(0, t, window)]
                return torch.cat(parts, dim=2)
            lo = max(0, first - window + 1) if window and first + t > window else 0
            keys, values = kc[:, :, lo: first + t], vc[:, :, lo: first + t]
            mask = self._chunk_mask(first, t, lo, window)
        if attn == "sdpa":
            return self._sdpa(q, keys, values, mask, t)
        return self._bmm_attention(q, keys, values, mask, t)

    def _chunk_mask(self, first: int, t: int, lo: int, window: int | None) -> Any:
        """A prefill chunk's mask over the keys from position ``lo``: bottom-right causal (new token j sees the cache so
        far and new tokens 0..j) and within ``window`` positions of the query (itself included); None where a plain
        causal mask from position 0 is the whole of it (SDPA's is_causal)."""
        import torch

        if first == 0 and not (window and t > window):
            return None
        q_pos = first + torch.arange(t, device=self.device)[:, None]
        k_pos = lo + torch.arange(first + t - lo, device=self.device)[None]
        mask = k_pos <= q_pos
        return mask & (q_pos - k_pos < window) if window else mask

    def _sdpa(self, q: Any, keys: Any, values: Any, mask: Any, t: int) -> Any:
        """SDPA over the grouped heads as stored; FlashAttention only on a GPU: torch's math fallback would repeat
        K/V per query head after all (a masked chunk, which flash cannot take, falls back to the default choice)."""
        from contextlib import nullcontext

        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]) if q.is_cuda and mask is None else nullcontext():
            return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, is_causal=t > 1 and mask is None,
                                                  enable_gqa=True, scale=self.s.attn_scale)

    def _bmm_attention(self, q: Any, keys: Any, values: Any, mask: Any, t: int) -> Any:
        """The query heads of each KV head as the rows of one batched GEMM over the stored K/V."""
        import torch

        b, H, _, d = q.shape
        g = H // keys.shape[1]
        qg = q.reshape(b, keys.shape[1], g * t, d)
        scale = self.s.attn_scale or 1 / math.sqrt(d)
        scores = (qg @ keys.transpose(-1, -2)).to(torch.promote_types(q.dtype, torch.float32)) * scale
        if t > 1:
            n = keys.shape[2]
            allowed = mask if mask is not None else torch.ones(t, n, dtype=torch.bool, device=q.device).tril(n - t)
            scores = scores.view(b, keys.shape[1], g, t, -1).masked_fill(~allowed, float("-inf")).view_as(scores)
        return (scores.softmax(-1).to(values.dtype) @ values).view(b, H, t, d)

    def paths(self) -> str:
        """What the layer runs, for a row's notes: the norms, q/k norms, the MLP or MoE path (as it ran), the
        windows, and what is not applied."""
        s = self.s
        parts = ["norm=" + ("layernorm+bias" if s.layer_norm else "rmsnorm") + ("+post_norms" if s.post_norms else "")]
        if s.qk_norm:
            parts.append("qk_norm=" + ("full_width" if s.qk_norm_full else "per_head"))
        parts += [self._mlp_path(), self._window_path()]
        if s.attn_softcap:
            parts.append(f"attn_softcap={s.attn_softcap:g} not applied")
        if s.final_softcap:
            parts.append(f"final_softcap={s.final_softcap:g}")
        return "; ".join(parts)

    def _mlp_path(self) -> str:
        s = self.s
        act = "gelu_tanh" if s.gelu else "silu"
        if s.experts == 1 and not s.gated:
            return f"mlp=fc-{act}-proj" + (" with biases" if s.linear_bias else "")
        if s.experts == 1:
            return f"mlp=gate_up-{act}*up-down"
        gated = " with sigmoid gate" if s.shared_gate else ""
        shared = f", shared expert {s.shared_inter}{gated}" if s.shared_inter else ""
        routing = ", renormalised" if s.norm_topk else ""
        return f"moe={self.moe_path or 'not run'} ({s.experts} experts, top {s.top_k}{routing}{shared})"

    def _window_path(self) -> str:
        sliding = [w for w in self.s.windows if w]
        if not sliding:
            return "window=none"
        sizes = "/".join(str(w) for w in sorted(set(sliding)))
        return (f"window={sizes} on {len(sliding)} of {self.s.layers} layers (decode reads the window's positions, "
                f"prefill chunks longer than it one window of queries at a time; the cache keeps every position)")


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
            dec._attend(q, kv, kv, 0 if t == 16 else 15, t, "sdpa")
    except RuntimeError:
        return "bmm"
    return "sdpa"
