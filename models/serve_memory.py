"""GPU memory of a serving case on one GPU: weights in their format, the KV cache, the prefill's transients,
and the paged KV pool an engine sets aside. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.engines import ENGINES
from knowledge.units import GiB
from models.architecture import linears, param_counts
from models.memory import usable_gib
from models.serve_setup import ServeSetup, expanded_kv_bytes_per_token_layer


def weight_bytes(s: ServeSetup) -> float:
    """Per GPU: decoder projections in the weight format, embeddings, head and norms in 16-bit."""
    pc = param_counts(s.arch)
    return (pc.decoder_linear * s.fmt.bytes_per_weight + pc.non_linear * 2.0) / s.tp


def activation_bytes_per_seq(s: ServeSetup, prompt_len: int) -> float:
    """Prefill transients of one layer per sequence: norm input, q/k/v, the MLP's intermediate, last-row logits."""
    a, t, e = s.arch, s.tp, s.eff
    hq, kv = a.num_attention_heads * a.head_size, s.kv_heads_per_gpu * a.head_size
    per_token = e.prefill_act_hidden_bytes * a.hidden_size + 4.0 * (hq / t + 2 * kv) \
        + e.prefill_act_mlp_bytes * a.intermediate_size * a.num_experts_per_tok / t
    return prompt_len * per_token + 6.0 * a.vocab_size / t


def fixed_bytes(s: ServeSetup) -> float:
    """Weights + workspace + the bf16 copy bitsandbytes NF4 dequantizes one projection into."""
    largest = max(lin.in_features * lin.out_features for lin in linears(s.arch)) / s.tp
    return weight_bytes(s) + s.eff.workspace_gib * GiB + (2.0 * largest if s.fmt.name == "bnb-nf4" else 0.0)


@dataclass(frozen=True)
class SequenceBytes:
    """What one sequence adds on one GPU, bytes."""

    kv: float  # its KV cache at the context length
    prefill: float  # its share of the prefill's transients
    repeat: float  # its share of a decode step's K/V repeated to the query heads (the probed runtime, GQA)

    @property
    def transient(self) -> float:
        """The larger transient, the one the peak holds."""
        return max(self.prefill, self.repeat)

    @property
    def required(self) -> float:
        """What the fit verdict counts: the peak's share plus the prefill's transients once more. While the cache
        grows layer by layer between them, the caching allocator cannot hand their freed blocks to the larger ones
        that follow (measured: Llama-2-13B prefills ran out of memory with 12-27 GiB reserved but unallocated;
        with this rule the verdicts of all 261 runs that prefilled are right, in sample: the rule was added after
        the two misses it fixes)."""
        return self.kv + self.transient + self.prefill


def sequence_bytes(s: ServeSetup, prompt_len: int, context_len: int, repeat_len: int) -> SequenceBytes:
    """One sequence's bytes: KV at ``context_len``, the prefill of ``prompt_len``, a decode step's repeated K/V
    over ``repeat_len`` cached tokens."""
    repeat = expanded_kv_bytes_per_token_layer(s) * min(1.0, s.eff.kv_expand_factor) if s.engine is None else 0.0
    return SequenceBytes(context_len * s.kv_bytes_per_token, activation_bytes_per_seq(s, prompt_len), repeat_len * repeat)


def max_batch(s: ServeSetup, prompt_len: int, context_len: int) -> int:
    """Largest batch (one replica) whose memory, counted as the fit verdict counts it, fits beside the weights."""
    free = usable_gib(s.platform.gpu.memory_gib, s.eff) * GiB - fixed_bytes(s)
    return max(0, int(free // sequence_bytes(s, prompt_len, context_len, context_len).required))


def engine_kv_tokens(s: ServeSetup, engine: str, chunk_tokens: int) -> int:
    """Tokens the engine's paged KV pool holds on one replica: its memory fraction less weights and the
    activation peak of one scheduled chunk (``chunk_tokens`` of prefill), in whole blocks."""
    e = ENGINES[engine]
    cap = s.platform.gpu.memory_gib * GiB
    used = fixed_bytes(s) + activation_bytes_per_seq(s, chunk_tokens)
    pool = e.memory_fraction * (cap - used) if e.of_free else e.memory_fraction * cap - used
    blocks = int(max(0.0, pool) // (s.kv_bytes_per_token * e.kv_block_tokens))
    return blocks * e.kv_block_tokens
