"""Parameter counts and the operator list of a Llama-style decoder layer. Pure functions, no I/O.

Shapes follow Hugging Face's ``LlamaDecoderLayer`` (and Mistral, Mixtral, Qwen2, which share it):
RMSNorm -> q/k/v projections -> RoPE -> attention -> o projection -> residual -> RMSNorm -> SwiGLU MLP
(gate, up, down; per expert for MoE) -> residual. FLOPs count a multiply-add as 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.schema import ModelArch

LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TRACED = "traced"  # the name of a projection read from a trace (which does not name its module)


@dataclass(frozen=True)
class Linear:
    """One projection of a decoder layer: ``in_features -> out_features``, repeated ``experts`` times."""

    name: str
    in_features: int
    out_features: int
    experts: int = 1  # weight copies (MoE experts)
    tokens_fraction: float = 1.0  # share of the layer's tokens each copy sees (top-k / experts)
    per_layer: float = 1.0  # times an average layer has it (a traced shape: alike projections, a dense prefix layer)

    @property
    def params(self) -> float:
        return self.in_features * self.out_features * self.experts * self.per_layer

    def flops(self, tokens: int) -> float:
        """Forward FLOPs over all copies for ``tokens`` tokens entering the layer."""
        return 2.0 * tokens * self.tokens_fraction * self.experts * self.in_features * self.out_features * self.per_layer


@dataclass(frozen=True)
class ParamCounts:
    total: int
    embedding: int
    lm_head: int  # 0 when tied to the embedding
    per_layer_linear: int  # q,k,v,o + MLP (all experts)
    per_layer_other: int  # norms, biases, router
    final_norm: int
    layers: int
    largest: int = 0  # the largest single tensor when counted on the model (an expert stack can beat the head)

    @property
    def decoder_linear(self) -> int:
        """Parameters inside the decoder layers' projections: what quantization replaces."""
        return self.per_layer_linear * self.layers

    @property
    def non_linear(self) -> int:
        return self.total - self.decoder_linear

    @property
    def largest_module(self) -> int:
        """Largest single parameter tensor (DeepSpeed's ``largest_layer_params``)."""
        return max(self.embedding, self.lm_head, self.largest)


def linears(arch: ModelArch) -> list[Linear]:
    """One decoder layer's projections: the model's own (``ModelArch.projections``, from its trace) where known, else
    the Llama count."""
    if arch.projections:
        return [Linear(TRACED, p.in_features, p.out_features, p.experts, p.tokens_fraction, p.per_layer)
                for p in arch.projections]
    h, hq, kv = arch.hidden_size, arch.num_attention_heads * arch.head_size, arch.num_key_value_heads * arch.head_size
    e, k = arch.num_local_experts, arch.num_experts_per_tok
    frac = k / e
    return [
        Linear("q_proj", h, hq),
        Linear("k_proj", h, kv),
        Linear("v_proj", h, kv),
        Linear("o_proj", hq, h),
        Linear("gate_proj", h, arch.intermediate_size, e, frac),
        Linear("up_proj", h, arch.intermediate_size, e, frac),
        Linear("down_proj", arch.intermediate_size, h, e, frac),
    ]


def weight_tensors(arch: ModelArch, params: ParamCounts, projections: bool = True) -> list[tuple[int, float]]:
    """(elements, how many) of the model's large weight tensors, one per projection of every layer (each expert its
    own), the embedding and an untied LM head; without the layers' ``projections`` where those are not 16-bit tensors
    (quantized). Norms and biases are left out: small enough not to matter where this is used."""
    out = [(lin.in_features * lin.out_features, lin.experts * lin.per_layer * params.layers) for lin in linears(arch)] if projections else []
    return out + [(n, 1.0) for n in (params.embedding, params.lm_head) if n]


def param_counts(arch: ModelArch) -> ParamCounts:
    h = arch.hidden_size
    hq, kv = arch.num_attention_heads * arch.head_size, arch.num_key_value_heads * arch.head_size
    linear = round(sum(lin.params for lin in linears(arch)))
    other = 2 * h + ((hq + 2 * kv) if arch.attention_bias else 0) + (h * arch.num_local_experts if arch.is_moe else 0)
    emb = arch.vocab_size * h
    head = 0 if arch.tie_word_embeddings else emb
    total = emb + head + arch.num_hidden_layers * (linear + other) + h
    if arch.projections and arch.param_count:
        total = arch.param_count  # the traced model's own count: its norms and biases are not the Llama layer's
    return ParamCounts(total, emb, head, linear, other, h, arch.num_hidden_layers)


def lora_params_per_layer(arch: ModelArch, rank: int, targets: list[str]) -> int:
    """LoRA A (in x r) and B (r x out) for every targeted projection of one layer (every expert)."""
    return sum((lin.in_features + lin.out_features) * rank * lin.experts for lin in linears(arch) if lin.name in targets)


def attention_flops(arch: ModelArch, batch: int, seq_len: int, causal_skip: bool) -> float:
    """Forward FLOPs of QK^T and AV for one layer; fused kernels skip the masked half of a causal square."""
    full = 2 * 2.0 * batch * seq_len * seq_len * arch.num_attention_heads * arch.head_size
    return full / 2 if causal_skip else full


def forward_flops_per_token(arch: ModelArch, seq_len: int) -> float:
    """Model FLOPs of one token's forward pass (projections, causal attention, LM head)."""
    lin = sum(x.flops(1) for x in linears(arch)) * arch.num_hidden_layers
    attn = attention_flops(arch, 1, seq_len, causal_skip=True) / seq_len * arch.num_hidden_layers
    return lin + attn + 2.0 * arch.hidden_size * arch.vocab_size


def unfused_elementwise_bytes(hidden: float, q_width: float, kv_width: float, mlp_width: float) -> float:
    """Bytes per token of one layer's memory-bound ops run as separate kernels (Hugging Face's modules): two
    RMSNorms upcast to fp32 (20 B per element each), RoPE on q and k (12 B), two residual adds (6 B), SwiGLU's
    activation and product (10 B per MLP unit). Widths are one GPU's (split by tensor parallelism)."""
    return 2 * 20.0 * hidden + 12.0 * (q_width + kv_width) + 2 * 6.0 * hidden + 10.0 * mlp_width
