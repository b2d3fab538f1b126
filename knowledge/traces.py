"""What a fake-tensor trace of a model's own code says about it: the typed record ``probes.trace`` writes.

A trace runs one training step of a one-period and a two-period cut of the model (a period is the repeat of
its layer pattern: 1 for Llama, 2 for Gemma-2's sliding/full pair; a long pattern is cut one layer per kind)
at three sequence lengths on fake tensors,
and keeps, per decoder layer and for the rest of the model (embedding, the layers before the pattern, final
norm, LM head, loss), every quantity the performance model needs as a polynomial in the micro-batch's shape:
``const + batch * seq * (per_token + seq * per_token_seq)``. Nothing here is fitted: it is what the model's
code does, counted operator by operator.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from knowledge.schema import Projection, Strict

TRACE_SCHEMA = 26  # 26: a model's layers before its first trained one run no backward (Nemotron-H's Mamba-2 and MoE layers under LoRA on attention: ``layers_without_backward``), the head part signed (it had dropped what its own layers lack of an average one), the base cut's peak alone where the model is no longer, and under recomputation LoRA's input needs a gradient as PEFT makes it; 25: a product is told by its weight operand's storage, its shape only where no weight is an operand (a weight gradient): Granite-MoE's experts share the k/v projections' shape and were priced as 4-bit projections; 24: a LoRA-adapted projection is a projection quantization replaces (PEFT's wrapper had hidden it); 23: kernels as a GPU launches each operator (a sort 22, an accumulating index_put 20, a slice's backward 2: knowledge.op_launches); 22: strided kernels' offset work apart (output elements x dimensions x operands: Mamba-2's 6-D broadcasts); 21: the largest single allocation inside a decoder layer's forward (what the caching allocator must find free again for the next layer); 20: softmax and its backward with them (row passes, not streamed); 19: the bytes of kernels off the vectorized path apart (strided: broadcasts, non-contiguous operands, concatenations, outer reductions); 18: bitsandbytes replaces a linear subclass too (Falcon's QLoRA projections go through F.linear, released under ZeRO-3); 17: a linear subclass with a product of its own (Falcon: @ weight.T) holds its gathered weight under ZeRO-3; 16: expm1, log, log1p, reciprocal in fp32 under autocast, as a GPU runs them (xIELU); 15: parameters a saved view holds (ZeRO-3 keeps their gathered copy: MoE experts); 14: torch.square in fp32 under autocast, as a GPU runs it (pow); 13: lists of layer numbers cut as numbers (Llama-4's moe_layers: read as one entry per layer, its longer cut was half dense); 12: a scan with a chunk longer than the traced steps (Mamba-2's 256) traced at 2, 3 and 4 chunks; 11: a long pattern's extra layer of a kind placed after the others (behind a trained layer), a config.json without layer_types cut with the whole model's (Gemma-3's full-attention layer); 10: the parameters the code reads outside their modules' forward (ZeRO-3 leaves them partitioned); 9: dropout as CUDA fuses it (one kernel, a 1-byte mask); 8: kernels launched per token of the sequence (a scan over chunks), attention dropout inside the fused kernel, heads over 256 apart (the memory-efficient kernel's generic path); 7: the bytes of eager attention's products; 6: a decoder block is any numbered block (Falcon's h.0: its projections are quantized, hooked, counted); 5: products that run in fp32 apart (SDPA's math path, fp32 experts); 4: the layer pattern as transformers derives it (Gemma-2 alternates sliding and full without layer_types in its config.json); 2: traced under bf16 autocast (adapters' inputs saved as bf16, as real runs save them); 3: irregular bytes


class Poly(Strict):
    """A quantity of one micro-batch of ``batch`` sequences of ``seq`` tokens: c0 + b·s·(c1 + c2·s)."""

    const: float = 0.0
    per_token: float = 0.0
    per_token_seq: float = 0.0  # the s² term: eager attention's score matrix, a materialised mask

    def at(self, batch: int, seq: int) -> float:
        return self.const + batch * seq * (self.per_token + seq * self.per_token_seq)

    def plus(self, other: "Poly", scale: float = 1.0) -> "Poly":
        return Poly(const=self.const + scale * other.const, per_token=self.per_token + scale * other.per_token,
                    per_token_seq=self.per_token_seq + scale * other.per_token_seq)


class Gemm(Strict):
    """Matrix products of one weight shape in one phase: ``flops`` over all of them, ``calls`` kernels, and the
    token rows each call multiplies per token of the micro-batch (1 for a dense projection, k/E for an expert,
    the reduction for a weight gradient)."""

    phase: Literal["fwd", "bwd"]
    k: int
    n: int
    calls: float
    rows_per_token: float
    flops: Poly
    quantizable: bool  # a frozen or trained decoder projection that weight quantization would replace
    adapter: bool = False  # a LoRA matrix
    grouped: bool = False  # routed experts' grouped GEMM: each expert's tile sees rows_per_token x tokens rows


class Part(Strict):
    """One decoder layer (the pattern's average), or everything else of the model."""

    gemms: list[Gemm] = []
    attention_flops_fwd: Poly = Poly()
    attention_flops_bwd: Poly = Poly()
    masked_attention_flops_fwd: Poly = Poly()  # of the above, calls given an explicit mask (a sliding window's):
    masked_attention_flops_bwd: Poly = Poly()  # on a GPU they run the memory-efficient kernel, not FlashAttention
    wide_attention_flops_fwd: Poly = Poly()  # of the above, calls with heads over 256 (Gemma-4's full layers: 512):
    wide_attention_flops_bwd: Poly = Poly()  # FlashAttention does not take them; the memory-efficient kernel's generic path
    fp32_flops_fwd: Poly = Poly()  # products whose inputs are fp32 (SDPA's math path upcasts: Falcon's multi-query
    fp32_flops_bwd: Poly = Poly()  # attention with a mask; fp32 experts' grouped products): CUDA cores, not tensor cores
    attention_bytes_fwd: Poly = Poly()  # eager attention's products read and write the s x s scores: at a head size of
    attention_bytes_bwd: Poly = Poly()  # 64 the bandwidth, not the tensor cores, bounds them
    attention_calls: float = 0.0
    other_bytes_fwd: Poly = Poly()  # memory-bound kernels: norms, upcasts, RoPE, activations, residuals, loss
    other_bytes_bwd: Poly = Poly()
    irregular_bytes_fwd: Poly = Poly()  # of other_bytes: kernels that follow an index (gather, scatter, sort, lookup)
    irregular_bytes_bwd: Poly = Poly()
    strided_bytes_fwd: Poly = Poly()  # of other_bytes, the rest: kernels off the vectorized path (a broadcast or
    strided_bytes_bwd: Poly = Poly()  # non-contiguous operand, a concatenation, an outer reduction) and softmax's row
    # passes, bound by the SMs
    strided_elem_dims_fwd: Poly = Poly()  # their offset work: output elements x dimensions x operands (schema 22)
    strided_elem_dims_bwd: Poly = Poly()
    kernels_fwd: float = 0.0  # kernels launched (view ops excluded)
    kernels_bwd: float = 0.0
    # and those launched once per token of the sequence more: a scan over chunks (Qwen3.5's gated delta-net layers
    # without their fused kernel run a loop body per 64 tokens: 21 kernels forward, 43 backward); 0 for attention
    kernels_seq_fwd: float = 0.0
    kernels_seq_bwd: float = 0.0
    adapter_kernels_fwd: float = 0.0  # of kernels_fwd, those launched inside PEFT's LoRA modules
    saved_bytes: Poly = Poly()  # activations alive when forward ends (what autograd keeps, loss buffers)

    @classmethod
    def polys(cls) -> tuple[str, ...]:
        """The fields that grow with the tokens (polynomials): what a cut's difference, a head and a layer share."""
        return tuple(name for name, f in cls.model_fields.items() if f.annotation is Poly)

    @classmethod
    def counts(cls) -> tuple[str, ...]:
        """The per-pass counts (kernels, attention calls)."""
        return tuple(name for name, f in cls.model_fields.items() if f.annotation is float)


class TraceVariant(Strict):
    """What varies between traces of one architecture: what trains and how the step runs."""

    trains: Literal["all", "adapters", "non-projections"]  # full; LoRA/QLoRA; full with a quantized frozen base
    lora_targets: list[str] | Literal["all-linear"] = []
    lora_rank: int = 0
    attention: Literal["sdpa", "eager"] = "sdpa"
    recompute: bool = False
    fp32_weights: bool = False  # plain PyTorch full training: fp32 weights under bf16 autocast
    autocast: bool = True  # bf16 autocast as CUDA runs it (our PyTorch loop, Trainer(bf16=True)); DeepSpeed's bf16 casts
    # the model, adapters included, and runs no autocast: LayerNorms stay bf16 there
    bnb_base: bool = False  # frozen projections are bitsandbytes layers: they return their input's dtype (fp32 after
    # a LayerNorm under autocast), where a 16-bit nn.Linear under autocast returns bf16
    min_seq: int = 0  # traced lengths start here: past a sliding window the mask (and the kernel) change
    zero3: bool = False  # DeepSpeed ZeRO-3 with adapters: every nn.Linear runs DeepSpeed's memory-efficient linear (its
    # input saved whether its weight trains or not) and PEFT's fp32 adapters stay fp32 (a zero-init model is not cast)

    @property
    def key(self) -> str:
        targets = self.lora_targets if isinstance(self.lora_targets, str) else ",".join(sorted(self.lora_targets))
        return (f"{self.trains}|{targets}|r{self.lora_rank}|{self.attention}|rc{int(self.recompute)}"
                f"|fp32{int(self.fp32_weights)}" + ("|bnb" if self.bnb_base else "") + ("" if self.autocast else "|noamp") + (f"|s>{self.min_seq}" if self.min_seq else "") + ("|z3" if self.zero3 else ""))


class ParamTrace(Strict):
    """Parameters as the model (and PEFT, for adapters) creates them."""

    total: int  # the base model's parameters
    embedding: int
    lm_head: int  # 0 when tied
    quantizable: int  # weights of the decoder layers' linear projections (what NF4 / int8 replace)
    largest: int  # the largest single tensor (DeepSpeed's largest_layer_params)
    trainable: int  # what the optimizer updates under the variant (PEFT's count for adapters)
    adapter: int = 0
    tensors_trainable_per_layer: float = 0.0  # gradient hooks DeepSpeed runs per layer
    modules_per_layer: float = 0.0  # leaf modules with parameters per layer (ZeRO-3 fetches)
    zero3_retained_per_layer: float = 0.0  # parameter elements per layer whose storage a saved view holds (no nn.Linear):
    # ZeRO-3 cannot release their gathered copy until the layer's backward


class ArchTrace(Strict):
    schema_version: int = TRACE_SCHEMA
    config_hash: str
    model_type: str
    variant: TraceVariant
    layers: int  # the full model's decoder layers
    rest_layers: int  # layers counted inside ``rest`` (the cut's base)
    layer: Part
    rest: Part
    peak_extra_bytes: Poly  # peak of activations + temporaries above ``saved_bytes`` (loss backward, a layer's backward)
    # the largest single allocation inside a decoder layer's forward (Mamba-2's torch path: 8 GiB per 256-token chunk at
    # Falcon-H1's width; eager attention's scores): each layer's saved tensors, allocated after it, split its cached
    # block, so the next layer asks the caching allocator for a new one (``models.memory.fragmentation_bytes``)
    largest_layer_alloc_bytes: Poly = Poly()
    params: ParamTrace
    attention_used: Literal["sdpa", "eager"] = "sdpa"  # what the model ran: a family without SDPA runs eager
    # the model's first layers, before its first layer that trains, whose input needs no gradient (LoRA on attention
    # projections of a hybrid: the Mamba-2 and MoE layers before the first attention layer): no backward, nothing saved
    layers_without_backward: int = Field(default=0, ge=0)
    # parameters the model's code reads outside the forward of every module holding them (layer numbers as N): ZeRO-3
    # gathers a parameter only inside such a forward, so under it the step reads an empty shard and crashes
    params_outside_module: dict[str, int] = {}  # name -> elements
    versions: dict[str, str] = {}
    seconds: float = Field(default=0.0, ge=0)

    def head(self) -> Part:
        """Everything but the decoder layers: embedding, final norm, LM head, loss (and a dense prefix beyond the
        pattern's average): the base cut less its layers priced as average ones. Signed: where the base cut's own
        layers do less than average ones (a dense prefix's layers have no experts; layers before the first trained one
        run no backward) the head is negative there, so that head + layers x layer is the whole model."""
        r, k = self.rest, float(self.rest_layers)
        gemms = {(g.phase, g.k, g.n, g.quantizable, g.adapter, g.grouped): g for g in r.gemms}
        for lg in self.layer.gemms:
            key = (lg.phase, lg.k, lg.n, lg.quantizable, lg.adapter, lg.grouped)
            g = gemms.get(key)
            calls = (g.calls if g else 0.0) - k * lg.calls
            flops = g.flops.plus(lg.flops, -k) if g else Poly().plus(lg.flops, -k)
            gemms[key] = (g or lg).model_copy(update={"calls": calls, "flops": flops})
        return Part(gemms=[g for g in gemms.values() if abs(g.calls) > 1e-9],
                    **{f: getattr(r, f).plus(getattr(self.layer, f), -k) for f in Part.polys()},
                    **{f: getattr(r, f) - k * getattr(self.layer, f) for f in Part.counts()})

    def projections(self, top_k: int, vocab: int) -> list[Projection]:
        """The forward projections of one average decoder layer: the layer's own, and those of the layers inside
        ``rest`` beyond the pattern (a dense first layer) spread over all layers; the LM head (``vocab`` wide) and
        adapters left out. A grouped GEMM's experts: top-k over the share of tokens each expert sees."""
        out: dict[tuple[int, int, int, float], float] = {}
        rest_calls: dict[tuple, float] = {}
        for g in self.rest.gemms:
            if g.phase == "fwd" and not g.adapter and vocab not in (g.k, g.n):
                key = (g.k, g.n, round(top_k / g.rows_per_token) if g.grouped else 1, g.rows_per_token)
                rest_calls[key] = rest_calls.get(key, 0.0) + g.calls
        for g in self.layer.gemms:
            if g.phase == "fwd" and not g.adapter:
                key = (g.k, g.n, round(top_k / g.rows_per_token) if g.grouped else 1, g.rows_per_token)
                out[key] = out.get(key, 0.0) + g.calls * (self.layers - self.rest_layers)
        for key, calls in rest_calls.items():
            out[key] = out.get(key, 0.0) + calls
        return [Projection(in_features=k, out_features=n, experts=e, tokens_fraction=min(1.0, f),
                           per_layer=calls / self.layers) for (k, n, e, f), calls in out.items() if calls > 0]

    def forward_gemm_flops_per_token(self) -> float:
        """FLOPs per token of the whole model's forward weight products (adapters left out): each token through the
        projections and experts it visits and the LM head, as the model's own code multiplies."""
        def per_token(part: Part) -> float:
            return sum(g.flops.per_token for g in part.gemms if g.phase == "fwd" and not g.adapter)
        return per_token(self.rest) + (self.layers - self.rest_layers) * per_token(self.layer)

    def total(self, attr: str, batch: int, seq: int) -> float:
        """A Poly attribute of the whole model at a micro-batch shape."""
        per = getattr(self.layer, attr).at(batch, seq)
        return getattr(self.rest, attr).at(batch, seq) + (self.layers - self.rest_layers) * per
