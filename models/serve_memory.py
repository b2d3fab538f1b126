"""GPU memory of a serving case on one GPU, as its engine allocates it. Pure functions.

An engine (vLLM, SGLang, TensorRT-LLM) holds the weights, a workspace, the activations of one scheduled chunk
(``max_num_batched_tokens`` tokens, not the whole batch's prompt: prefill is chunked) and a paged KV pool of what
its memory fraction leaves; a case fits when its sequences' blocks fit the pool. The ``transformers`` runtime
holds a static cache for the batch and prefills the whole batch's prompt in one forward."""

from __future__ import annotations

from dataclasses import dataclass, replace

from knowledge.engines import TRANSFORMERS_RECURRENT_NOTE
from knowledge.units import GiB
from models.architecture import linears, param_counts
from models.kv_cache import state_bytes
from models.memory import usable_gib
from models.oom import P_OOM_FITS, SERVE_SPREAD, p_exceeds
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
    over ``repeat_len`` cached tokens (the transformers runtime only)."""
    repeat = expanded_kv_bytes_per_token_layer(s) * min(1.0, s.eff.kv_expand_factor) if not s.engine_style else 0.0
    return SequenceBytes(s.kv_bytes(context_len), activation_bytes_per_seq(s, prompt_len), repeat_len * repeat)


def chunk_tokens(s: ServeSetup) -> int:
    """Tokens one prefill step processes: the engine's ``max_num_batched_tokens`` on this GPU (``knowledge.engines``)."""
    g = s.platform.gpu
    return s.engine.chunk_tokens_for(g.memory_gib, g.name)


def engine_used_bytes(s: ServeSetup) -> float:
    """What an engine holds besides its KV pool: weights, workspace, and the activations of one full chunk (the
    engine's profiling run sizes the pool after a forward of ``max_num_batched_tokens`` tokens)."""
    return fixed_bytes(s) + activation_bytes_per_seq(s, chunk_tokens(s))


def kv_pool_bytes(s: ServeSetup) -> float:
    """The paged KV pool an engine sets aside on one GPU (0 when weights and activations leave nothing)."""
    e, cap, used = s.engine, s.platform.gpu.memory_gib * GiB, engine_used_bytes(s)
    pool = e.memory_fraction * (cap - used) if e.of_free else e.memory_fraction * cap - used
    return max(0.0, pool)


def engine_kv_tokens(s: ServeSetup) -> int:
    """Tokens the engine's paged KV pool holds on one replica, in whole blocks."""
    block = s.engine.kv_block_tokens
    return int(kv_pool_bytes(s) // max(1.0, block * s.kv_bytes_per_token)) * block


def pool_sequences(s: ServeSetup, context_len: int) -> int:
    """Sequences of ``context_len`` tokens the engine's pool holds at once (each takes whole blocks)."""
    return int(kv_pool_bytes(s) // s.pooled_bytes(max(1, context_len)))


def max_batch(s: ServeSetup, prompt_len: int, context_len: int) -> int:
    """Largest batch (one replica) that fits: an engine's pool in sequences of ``context_len`` tokens; for the
    transformers runtime, the memory counted as its fit verdict counts it, beside the weights."""
    if s.engine_style:
        return pool_sequences(s, context_len)
    free = usable_gib(s.platform.gpu.memory_gib, s.eff) * GiB - fixed_bytes(s)
    return max(0, int(free // sequence_bytes(s, prompt_len, context_len, context_len).required))


@dataclass(frozen=True)
class MemoryVerdict:
    """One replica's memory on one GPU, bytes, and whether the case fits."""

    peak: float  # what its sequences use at the peak: weights, workspace, activations, their KV
    required: float  # what the verdict compares with ``capacity``
    capacity: float  # transformers: the usable memory; an engine: its memory fraction's share (weights + pool)
    kv: float  # the sequences' KV cache
    activations: float  # the largest transient (a prefill chunk, the whole prompt, or repeated K/V)
    max_batch: int  # sequences of this length that fit (one replica)
    pool: float | None  # the engine's KV pool (None: transformers)
    fits: bool
    why: str | None = None
    note: str | None = None
    p_oom: float = 0.0  # P(the true requirement exceeds ``capacity``), models.oom.SERVE_SPREAD


def _with_risk(v: MemoryVerdict) -> MemoryVerdict:
    """``v`` with its P(OOM); a case the bare comparison lets through but whose P(OOM) exceeds 5% does not fit."""
    p = p_exceeds(v.required, v.capacity, SERVE_SPREAD)
    if v.fits and p > P_OOM_FITS:
        return replace(v, fits=False, p_oom=p, why=f"too close to the limit: {v.required / v.capacity:.1%} of what it may use, "
                                                      f"P(OOM) {p:.0%} > {P_OOM_FITS:.0%}")
    return replace(v, p_oom=p)


def memory_verdict(s: ServeSetup, batch: int, prompt_len: int, context_len: int, kv_len: int) -> MemoryVerdict:
    """``batch`` sequences of one replica: prompts of ``prompt_len``, caches of ``context_len`` tokens at the end,
    decode timed at ``kv_len``. An engine fits them when their blocks fit its pool and weights + workspace + one
    chunk's activations fit its memory fraction; more sequences than the pool holds are preempted or queued by the
    engine (the ``note``), not a crash."""
    from models.training import round_down, round_up

    gpu_gib = s.platform.gpu.memory_gib
    if not s.engine_style:
        seq = sequence_bytes(s, prompt_len, context_len, kv_len + 1)
        fixed, cap = fixed_bytes(s), usable_gib(gpu_gib, s.eff) * GiB
        kv, act = batch * seq.kv, batch * seq.transient
        needed = fixed + batch * seq.required
        fits = needed <= cap
        why = None if fits else f"needs {round_up(needed / GiB)} GiB per GPU, {round_down(cap / GiB)} GiB usable of {gpu_gib:.1f}"
        note = TRANSFORMERS_RECURRENT_NOTE if state_bytes(s.arch, s.tp) else None
        return _with_risk(MemoryVerdict(fixed + kv + act, needed, cap, kv, act, max_batch(s, prompt_len, context_len), None, fits,
                                        why, note))
    e, used, pool = s.engine, engine_used_bytes(s), kv_pool_bytes(s)
    kv = batch * s.kv_bytes(context_len)
    act = activation_bytes_per_seq(s, min(chunk_tokens(s), batch * prompt_len))
    held = pool_sequences(s, context_len)
    required = used + batch * s.pooled_bytes(context_len)
    frac = f"{e.memory_fraction:.0%} of {'the memory left after weights and activations' if e.of_free else f'{gpu_gib:.1f} GiB'}"
    # the engine's budget: its fraction of the GPU (TensorRT-LLM: of what weights and activations leave free)
    cap = gpu_gib * GiB
    budget = cap - (1.0 - e.memory_fraction) * max(0.0, cap - used) if e.of_free else e.memory_fraction * cap
    why = note = None
    if required <= budget:
        pass
    elif pool <= 0:
        why = (f"{e.label} needs {round_up(used / GiB)} GiB per GPU for weights, workspace and a "
               f"{chunk_tokens(s)}-token chunk's activations, more than {frac}: no room for a KV cache")
    elif held < 1:
        why = (f"one {context_len}-token sequence needs {round_up(s.pooled_bytes(context_len) / GiB, 2)} GiB of KV; {e.label}'s "
               f"pool holds {round_down(pool / GiB)} GiB ({frac} less {round_up(used / GiB)} GiB of weights and activations): "
               f"it refuses to start at this length")
    else:  # more sequences than the pool holds
        why = (f"{batch} sequences of {context_len} tokens need {round_up(kv / GiB)} GiB of KV; {e.label}'s pool holds "
               f"{round_down(pool / GiB)} GiB per GPU, {held} of them")
        note = (f"{e.label} would run {held} sequences at once and preempt or queue the other {batch - held} "
                f"(recomputed when blocks free up): slower, not out of memory")
    # fits exactly when the sequences' blocks fit the pool: required <= used + pool = budget
    return _with_risk(MemoryVerdict(fixed_bytes(s) + act + kv, required, budget, kv, act, held, pool, why is None, why, note))
