"""Trace a model's own code on fake tensors: one training step, no weights, no GPU, about a second.

transformers builds the model from its config on the meta device; its parameters become fake tensors (shapes
and dtypes only); PEFT attaches adapters to the module names the user gave, exactly as it would for real; one
forward and backward run under a dispatch mode that sees every aten operator. Per operator it counts FLOPs
(matrix products by weight shape, attention from the query/key/value shapes), bytes read and written by the
memory-bound kernels, kernels launched, and the bytes alive at each moment (activations autograd keeps, the
loss's fp32 buffers, a backward's temporaries). A one-period and a two-period cut at three sequence lengths
give the per-layer and per-token coefficients (``knowledge.traces``); a long pattern (Gemma-3's 5 sliding + 1 full)
is cut one layer per kind instead, each kind weighted by its share of the model's layers (``layer_kinds``).

torch, transformers and peft are imported inside the functions: the CLI imports this module.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import time
import weakref
from collections import defaultdict
from typing import Any, Iterator

from knowledge.errors import AdvisorError
from knowledge.op_launches import INDEX_PUT, launches
from knowledge.traces import ArchTrace, Gemm, ParamTrace, Part, Poly, TraceVariant

SEQS = (120, 184, 248)  # token counts that no model dimension equals, so a product's token side is unambiguous
GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "_grouped_mm"}
_BLOCK = re.compile(r"\.\d+\.")


def in_block(module_name: str) -> bool:
    """Is this module inside a numbered decoder block (Llama's ``model.layers.0``, Falcon's and GPT-2's
    ``transformer.h.0``)? What quantization replaces, what LoRA lists and what DeepSpeed hooks per layer."""
    return bool(_BLOCK.search(f".{module_name}."))


# kernels whose memory access follows an index (routing's gathers and scatters, sorts, embedding lookups): they move
# their bytes at a lower rate than streaming elementwise kernels (own H100 kernel times, probes/anatomy.py)
IRREGULAR = {"index", "index_select", "index_put", "_index_put_impl", "index_add", "index_copy", "gather", "scatter",
             "scatter_add", "scatter_reduce", "sort", "argsort", "topk", "histc", "bincount", "embedding",
             "embedding_dense_backward", "masked_select", "masked_scatter", "nonzero", "take", "_unsafe_index",
             "_unsafe_index_put", "index_fill", "masked_fill"}
NO_KERNEL = {"detach", "lift_fresh", "_to_copy_noop", "alias", "clone_noop", "copy_noop"}


def counted(func: Any) -> bool:
    """Whether the trace counts an operator as launching kernels: an ATen operator that is not a view or a no-op
    (``probes.op_launches`` measures launches at exactly these)."""
    return not (func.is_view or func.overloadpacket.__name__ in NO_KERNEL or func.namespace != "aten")
FLASH_MAX_HEAD = 256  # FlashAttention-2 takes head sizes up to 256 (PyTorch's check_head_dim_size_flash)
ATTENTION_BACKWARD = 2.5  # FlashAttention-2's backward does 5 products to the forward's 2 (Dao 2023, sec. 3)


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _periodic(sig: list[tuple], p: int) -> bool:
    return all(sig[i] == sig[i % p] for i in range(len(sig)))


def _plan(config: dict[str, Any]) -> tuple[int, int]:
    """(the layers before the pattern starts, the layers in one repeat of it), from what sets each layer apart
    (``hf_model.layer_signatures``): Gemma-2 alternates sliding and full (0, 2), DeepSeek's dense first layers come
    before its MoE ones (``first_k_dense_replace``, or ``mlp_layer_types``: (3, 1)). A hub config.json written before
    ``layer_types`` existed (Gemma-2's) lacks it, and transformers derives it; without it the cuts priced every layer
    as a full-attention one (no window mask)."""
    from probes.hf_model import layer_signatures

    sig = layer_signatures(config)
    for prefix in range(0, min(len(sig) - 1, 8) + 1):
        for p in range(1, min((len(sig) - prefix) // 2, 8) + 1):  # a pattern repeats: two periods at least
            if _periodic(sig[prefix:], p):
                return prefix, p
    # a model too short to repeat, or layers placed without a short period (Granite-4.0-H's attention layers among its
    # Mamba ones): the period of the whole, which ``layer_kinds`` then traces one layer per kind
    few = len(set(sig)) <= 4  # else the old answer: every layer as the first (a cut of the whole model costs too much)
    return 0, next((p for p in range(1, min(len(sig), 8) + 1) if _periodic(sig, p)), len(sig) if few else 1)


def _cut_config(config: dict[str, Any], layers: int, attention: str, layer_index: list[int] | None = None) -> Any:
    from probes.hf_model import config_from_dict

    try:
        return config_from_dict(config, layers, attn_impl=attention, layer_index=layer_index)
    except Exception as e:  # noqa: BLE001 - a family's config class raises what it likes (Exaone-4: ZeroDivisionError)
        raise _cannot_build(config.get("model_type"), e) from None


def _cannot_build(model_type: Any, e: Exception, detail: str = "", width: int = 160) -> AdvisorError:
    """One line for a family that transformers cannot build from this config: its config class or its constructor
    raised ``e`` (``detail``: what failed where, ending in ": ")."""
    import transformers

    why = (str(e).splitlines() or [""])[0][:width]
    return AdvisorError(f"transformers {transformers.__version__} cannot build model_type {model_type!r} from this config: "
                        f"{detail}{type(e).__name__}: {why}")


def _from_config(cfg: Any, **kw: Any) -> Any:
    """``AutoModelForCausalLM.from_config``, where a failure inside the family's own constructor becomes a one-line error
    naming the line that failed and the config fields it reads that are null (a config.json without ``head_dim`` where
    the code computes ``self.head_dim**-0.5``), not a bare TypeError."""
    import traceback

    import transformers

    try:
        return transformers.AutoModelForCausalLM.from_config(cfg, **kw)
    except Exception as e:  # noqa: BLE001 - a family's constructor raises what it likes
        frames = traceback.extract_tb(e.__traceback__)
        where = next((f for f in reversed(frames) if "/transformers/models/" in f.filename), frames[-1] if frames else None)
        line = (where.line or "").strip() if where else ""
        unset = sorted({name for name in re.findall(r"(?:self|config)\.(\w+)", line)
                        if hasattr(cfg, name) and getattr(cfg, name) is None})
        what = f"{', '.join(unset)} {'is' if len(unset) == 1 else 'are'} null in the config, and " if unset else ""
        at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno} ({line[:80]})" if where else ""
        raise _cannot_build(cfg.model_type, e, f"{what}its code failed{at}: ", width=120) from None


class _Counter:
    """Everything the dispatch mode counts during one step (the mode itself is built in ``_mode``)."""

    def __init__(self, param_keys: set[int], weights: dict[int, tuple[tuple[int, int], bool, bool]],
                 grad_shapes: set[tuple[int, ...]] = frozenset()):
        self.phase = "fwd"
        # a product whose operand is a weight is told by that weight's storage; its shape alone can be another weight's
        # (Granite-3.0-3B-A800M: an expert's 1536 x 512 is the k/v projections', so expert products were priced as 4-bit
        # projections under QLoRA: trace schema 25). Weight gradients multiply no weight: their shape tells them, named
        # after the first weight of that shape in module order
        self.weight_storages = weights  # storage -> ((in, out) sorted, quantizable, adapter)
        weight_shapes: dict[frozenset, tuple[bool, bool]] = {}
        for shape, quant, adapter in weights.values():
            weight_shapes.setdefault(frozenset(shape), (quant, adapter))
        self.grad_shapes = grad_shapes  # a backward output of a trained parameter's shape is its gradient: a model
        # state the memory model counts per ZeRO stage, not an activation
        self.param_keys = param_keys
        self.weight_shapes = weight_shapes  # {in, out} -> (quantizable, adapter)
        self.gemms: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # flops, calls, token rows
        self.attn_flops = {"fwd": 0.0, "bwd": 0.0}
        self.masked_flops = {"fwd": 0.0, "bwd": 0.0}
        self.wide_flops = {"fwd": 0.0, "bwd": 0.0}  # fused attention with heads wider than FlashAttention takes
        self.fp32_flops = {"fwd": 0.0, "bwd": 0.0}  # products of fp32 inputs, whatever they multiply
        self.attn_bytes = {"fwd": 0.0, "bwd": 0.0}  # what eager attention's products read and write (the s x s scores)
        self.attn_calls = 0.0
        self.other_bytes = {"fwd": 0.0, "bwd": 0.0}
        self.irregular_bytes = {"fwd": 0.0, "bwd": 0.0}  # the part of other_bytes moved by IRREGULAR kernels
        self.strided_bytes = {"fwd": 0.0, "bwd": 0.0}  # the part of other_bytes moved off the vectorized path (strided)
        # and those kernels' offset work: output elements x its dimensions x operands (the generic kernel computes every
        # operand's offset of every element, dimension by dimension: a 6-D broadcast costs more per byte than a 3-D copy)
        self.strided_elem_dims = {"fwd": 0.0, "bwd": 0.0}
        self.kernels = {"fwd": 0.0, "bwd": 0.0}
        self.adapter_kernels = 0.0
        self.in_adapter = 0  # > 0 while a LoRA module's forward runs
        # ZeRO-3 gathers a parameter only while a module that holds it directly runs its forward: parameters the code
        # reads outside every such forward (LFM2's short convolution reads its Conv1d's weight from the block) stay
        # partitioned there, and the step crashes (measured: LFM2 under ZeRO-3, IndexError on the empty shard)
        self.owners: dict[int, tuple[frozenset[int], tuple[str, int]]] = {}  # storage -> (its modules, (name, elements))
        self.running: dict[int, int] = defaultdict(int)  # module id -> forwards in progress
        self.outside: set[tuple[str, int]] = set()
        self.live = 0.0
        self.peak = 0.0
        self.in_layer = 0  # > 0 while a decoder layer's forward runs (a recomputed one in backward too)
        self.largest_in_layer = 0.0  # the largest single allocation made there (``ArchTrace.largest_layer_alloc_bytes``)
        self.layer_grads: list[tuple[bool, bool]] = []  # per decoder layer, in order: (it trains, its output needs grad)
        self._refs: dict[int, Any] = {}

    def track(self, t: Any) -> None:
        if self.phase == "bwd" and tuple(t.shape) in self.grad_shapes:
            return
        st = t.untyped_storage()
        key = st._cdata
        if key in self.param_keys or key in self._refs:
            return
        n = st.nbytes()
        self.live += n
        self.peak = max(self.peak, self.live)
        if self.in_layer:
            self.largest_in_layer = max(self.largest_in_layer, n)

        def freed(_ref: Any, key: int = key, n: int = n) -> None:
            self.live -= n
            self._refs.pop(key, None)

        self._refs[key] = weakref.ref(st, freed)

    def note_outside(self, args: tuple) -> None:
        """Remember the parameters among ``args`` that no running module holds."""
        for a in args:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if hasattr(t, "untyped_storage"):
                    hit = self.owners.get(t.untyped_storage()._cdata)
                    if hit and not any(self.running[m] for m in hit[0]):
                        self.outside.add(hit[1])

    def gemm(self, name: str, args: tuple) -> None:
        tensors = [a for a in args if hasattr(a, "shape")]
        a, b = (tensors[-2], tensors[-1]) if name in ("addmm", "baddbmm") else (tensors[0], tensors[1])
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        batch = a.numel() // (m * k) if a.dim() > 2 else 1
        groups = 1
        if name == "_grouped_mm":  # routed experts: one kernel, one GEMM tile per expert over its share of tokens
            batch, m = 1, a.shape[0] if a.dim() == 2 else a.shape[0] * a.shape[1]
            offs = next((x for x in args[2:] if hasattr(x, "shape")), None)
            groups = int(offs.shape[0]) if offs is not None else (b.shape[0] if b.dim() == 3 else 1)
        flops = 2.0 * batch * m * k * n
        if str(a.dtype) == "torch.float32":  # the CUDA cores run it (SDPA's math path upcasts; fp32 experts), whatever it is
            self.fp32_flops[self.phase] += flops
            return
        dims = {"m": m, "k": k, "n": n}
        key = None
        for t, tok in ((b, "m"), (a, "n")):  # x @ W^T, dy @ W (forward, input gradient); W @ x
            hit = self.weight_storages.get(t.untyped_storage()._cdata)
            if hit is not None:
                shape, quant, adapter = hit
                key = (self.phase, *shape, quant, adapter, groups > 1)
                rows = dims[tok] * batch / groups
                break
        for tok, (x, y) in () if key is not None else (("m", ("k", "n")), ("k", ("m", "n")), ("n", ("m", "k"))):
            shape = frozenset((dims[x], dims[y]))
            if shape in self.weight_shapes and dims[tok] not in (dims[x], dims[y]):
                quant, adapter = self.weight_shapes[shape]
                quant = quant and groups == 1  # a grouped product's weight is a 3-D expert tensor: no nn.Linear to replace
                key = (self.phase, *sorted((dims[x], dims[y])), quant, adapter, groups > 1)
                rows = dims[tok] * batch / groups  # token rows each expert's product sees
                break
        if key is None:  # no weight on either side: attention's products (eager) or a router's
            self.attn_flops[self.phase] += flops
            size = a.element_size()
            self.attn_bytes[self.phase] += (a.numel() + b.numel() + batch * m * n) * size
            self.attn_calls += self.phase == "fwd"
            return
        g = self.gemms[key]
        g[0] += flops
        g[1] += 1
        g[2] += rows


def _sdpa_flops(func: Any, args: tuple, kwargs: dict) -> tuple[float, bool, bool]:
    """(FLOPs of a fused attention call from its query/key/value shapes, half the square when causal; whether it was
    given an explicit mask; whether its heads are wider than FlashAttention takes, 256: a GPU runs those on the
    memory-efficient kernel's generic path, Gemma-4's full-attention layers at 512)."""
    names = [a.name for a in func._schema.arguments]
    values = dict(zip(names, args)) | kwargs
    q, k, v = values.get("query"), values.get("key"), values.get("value")
    if q is None or k is None or v is None:
        return 0.0, False, False
    b_h = q.numel() // (q.shape[-2] * q.shape[-1])
    full = 2.0 * b_h * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])
    masked = values.get("attn_mask") is not None or values.get("attn_bias") is not None
    return (full / 2 if values.get("is_causal") else full), masked, max(q.shape[-1], v.shape[-1]) > FLASH_MAX_HEAD


def _fp32_grouped_mm(func: Any, args: tuple, kwargs: dict, c: _Counter) -> Any:
    """Routed experts' grouped product as CUDA runs it: bf16 in one kernel; fp32 (PyTorch full training keeps fp32
    experts under autocast, which leaves grouped_mm alone) as one cuBLAS FP32 product per expert (own H100 anatomy of
    Granite-MoE, 2026-11-25: sgemm kernels, 1,000+ calls a step), where the fake kernel accepts bf16 only."""
    import torch

    a = next((x for x in args if hasattr(x, "dtype")), None)
    if a is None or a.dtype != torch.float32:
        return func(*args, **kwargs)
    proxy = [x.to(torch.bfloat16) if hasattr(x, "dtype") and x.dtype == torch.float32 else x for x in args]
    offs = next((x for x in args[2:] if hasattr(x, "shape")), None)
    c.kernels[c.phase] += (int(offs.shape[0]) - 1) if offs is not None else 0  # one launch per expert
    return func(*proxy, **kwargs).to(torch.float32)


# A softmax reads its rows in several passes (max, sum of exponentials, normalize) inside one kernel: it does not stream.
# Measured on one H200 (logs/h200x1-eager-scores-2026-11-29.jsonl): the fp32 softmax of 16-bit scores at 0.88-1.17
# TB/s of the bytes it moves, its backward at 2.2, where a contiguous copy streams at 4.3
ROW_PASSES = {"_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data"}


def strided(ins: list[Any], outs: list[Any]) -> bool:
    """Does a memory-bound kernel leave PyTorch's vectorized path? That path takes operands that are all contiguous and
    of the output's shape; a broadcast operand, a non-contiguous one, a concatenation or a reduction over other than
    the innermost dimension runs the generic kernel (``elementwise_kernel<128, ...>``, ``CatArrayBatchedCopy``,
    ``reduce_kernel`` over outer dimensions), which computes every element's offsets and is bound by the SMs, not by
    memory (own anatomy, 2026-11-24 and -29: Bamba's Mamba-2 scan spent 0.81 s of 0.82 in them)."""
    big = [t for t in ins + outs if t.numel() > 1]
    if not outs or not big:
        return False
    out = outs[0]
    if any(not t.is_contiguous() for t in big):
        return True
    for t in ins:
        if t.numel() <= 1 or tuple(t.shape) == tuple(out.shape):
            continue
        # a reduction over the innermost dimension of a contiguous input (a norm's mean, a row's max) streams
        if t.dim() and out.numel() * t.shape[-1] == t.numel() and out.numel() < t.numel():
            continue
        return True
    return False


def elem_dims(ins: list[Any], outs: list[Any]) -> float:
    """A strided kernel's offset work: its output's elements x the output's dimensions x the operands it addresses."""
    if not outs:
        return 0.0
    out = outs[0]
    operands = sum(1 for t in ins + outs if t.numel() > 1)
    return float(out.numel() * max(out.dim(), 1) * operands)


def _accumulates(args: tuple, kwargs: dict) -> bool:
    """An ``index_put`` call's ``accumulate`` (its fourth argument)."""
    return bool(args[3] if len(args) > 3 else kwargs.get("accumulate", False))


def _mode(c: _Counter) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            if c.phase == "fwd" and c.owners:
                c.note_outside(args)
            out = _fp32_grouped_mm(func, args, kwargs, c) if name == "_grouped_mm" else func(*args, **kwargs)
            if not counted(func):
                return out
            flat = out if isinstance(out, (tuple, list)) else (out,)
            outs = [t for t in flat if hasattr(t, "untyped_storage")]
            for t in outs:
                c.track(t)
            # as a GPU launches it: a sort or an accumulating index_put is many kernels (knowledge.op_launches)
            n = launches(name, name in INDEX_PUT and _accumulates(args, kwargs))
            c.kernels[c.phase] += n
            c.adapter_kernels += n * (c.in_adapter > 0 and c.phase == "fwd")
            if name in GEMM_OPS:
                c.gemm(name, args)
            elif "scaled_dot_product" in name:
                flops, masked, wide = _sdpa_flops(func, args, kwargs)
                flops *= ATTENTION_BACKWARD if name.endswith("_backward") else 1.0
                c.attn_flops[c.phase] += flops
                c.wide_flops[c.phase] += flops * wide
                c.masked_flops[c.phase] += flops * (masked and not wide)
                c.attn_calls += c.phase == "fwd"
            else:
                ins = [a for a in args if hasattr(a, "untyped_storage")]
                ins += [a for x in args if isinstance(x, (list, tuple)) for a in x if hasattr(a, "untyped_storage")]
                # a broadcast (stride-0) input is read once: never count more than its storage holds
                moved = sum(min(t.numel() * t.element_size(), t.untyped_storage().nbytes()) for t in ins + outs)
                c.other_bytes[c.phase] += moved
                if name.lstrip("_") in IRREGULAR or name in IRREGULAR:
                    c.irregular_bytes[c.phase] += moved
                elif name in ROW_PASSES or strided(ins, outs):
                    c.strided_bytes[c.phase] += moved
                    c.strided_elem_dims[c.phase] += elem_dims(ins, outs)
            return out

    return Mode()


def _weights(model: Any) -> dict[int, tuple[tuple[int, int], bool, bool]]:
    """Storage of every weight matrix -> ((in, out) sorted, a decoder projection quantization replaces, a LoRA matrix), in
    module order (where two weights share a shape, ``_Counter`` names the shape after the first)."""
    import torch

    weights: dict[int, tuple[tuple[int, int], bool, bool]] = {}
    for name, mod in model.named_modules():
        w = getattr(mod, "weight", None)
        # PEFT's LoRA wrapper forwards ``weight`` to its base_layer, the projection itself, which follows it here: the
        # wrapper (no nn.Linear) had recorded the shape first as no projection, so QLoRA's adapted projections were
        # priced as bf16 products, without their dequantize or bitsandbytes' host cost (trace schema 24)
        if not isinstance(w, torch.Tensor) or w.dim() < 2 or hasattr(mod, "base_layer"):
            continue
        adapter = ".lora_" in name
        quant = isinstance(mod, torch.nn.Linear) and in_block(name) and not adapter and "lm_head" not in name
        weights.setdefault(w.untyped_storage()._cdata, (tuple(sorted(w.shape[-2:])), quant, adapter))
    for name, p in model.named_parameters():  # fused expert tensors (E, out, in) are parameters, not Linears
        if p.dim() == 3:
            weights.setdefault(p.untyped_storage()._cdata, (tuple(sorted(p.shape[-2:])), False, False))
    return weights


def _layer_linear_names(model: Any, attention_only: bool = False, within: str = "") -> list[str]:
    """The names of the decoder layers' linear modules (under a numbered block: Llama's ``layers.0``, Falcon's and
    GPT-2's ``h.0``; ``within``: under that module path alone); ``attention_only``: those inside the attention block (a
    module path with ``attn`` or ``attention``); GPT-2's ``Conv1D`` projections count as linears (PEFT adapts them)."""
    import torch
    from transformers.pytorch_utils import Conv1D

    return sorted({n.removesuffix(".base_layer").rsplit(".", 1)[-1] for n, m in model.named_modules()
                   if isinstance(m, (torch.nn.Linear, Conv1D)) and in_block(n) and ".lora_" not in n
                   and n.startswith(within)
                   and (not attention_only or any(part in n.lower() for part in ("attn", "attention")))})


def default_lora_targets(config: dict[str, Any], usual: list[str]) -> list[str] | None:
    """The LoRA targets a case that names none gets: the attention block's projections, as the usual q/k/v/o are a
    Llama-style decoder's. None (keep ``usual``) where the model has all four; else PEFT's own default for the model
    type where it exists here (what ``get_peft_model`` picks when no target is given: GPT-NeoX's
    ``query_key_value``); else the linear layers of the model's attention block (Phi-3's fused ``qkv_proj`` and
    ``o_proj``, DeepSeek-V2's latent ``q_proj``, ``kv_a_proj_with_mqa``, ``kv_b_proj`` and ``o_proj``: adapting only
    the usual names found there would leave Phi-3 with ``o_proj`` alone); None where it has none of these (the error
    then names the model's projections). Built on the meta device: no weights."""
    import torch
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as PEFT_DEFAULTS

    from probes.hf_model import decoder_layers, first_of_each_kind, layer_signatures

    # the model's first layer decides (a hybrid's first linear-attention layer: its projections), built in a cut with
    # a layer of each kind, as some families' config classes refuse one kind alone (OLMo-Hybrid)
    kinds = first_of_each_kind(layer_signatures(config))
    with torch.device("meta"):
        model = _from_config(_cut_config(config, len(kinds), "sdpa", layer_index=kinds))
    first = decoder_layers(model)[0]
    within = next(n for n, m in model.named_modules() if m is first) + "."
    names = set(_layer_linear_names(model, within=within))
    if set(usual) <= names:
        return None
    own = [t for t in PEFT_DEFAULTS.get(config.get("model_type", ""), []) if t in names]
    return own or _layer_linear_names(model, attention_only=True, within=within) or None


def build_fake_model(config: dict[str, Any], layers: int, v: TraceVariant, layer_index: list[int] | None = None
                     ) -> tuple[Any, Any]:
    """The cut model with fake parameters, adapters attached and requires_grad set as the variant trains.

    Built on the meta device (no initialisation), adapters attached there by PEFT, then every tensor made fake.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    cfg = _cut_config(config, layers, "eager" if v.attention == "eager" else "sdpa", layer_index)
    dtype = torch.float32 if v.fp32_weights else torch.bfloat16
    with torch.device("meta"):
        model = _from_config(cfg, dtype=dtype)
        if v.trains == "adapters":
            model = _with_adapters(model, v)
        if not v.autocast and not v.fp32_weights:  # DeepSpeed's bf16: the whole module, PEFT's fp32 adapters included
            _to_bf16(model, keep_adapters=v.zero3)
    if v.recompute:
        from probes.hf_model import enable_recompute

        enable_recompute(model)
        if v.trains == "adapters":  # as probes.hf_model.apply_method (and PEFT under checkpointing) make it
            model.enable_input_require_grads()
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    with fake:
        model = model.to_empty(device="cpu")
        # to_empty gives every parameter its own storage: tie the embedding and the head again, as loading does
        (model.get_base_model() if hasattr(model, "get_base_model") else model).tie_weights()
    model.train()
    if v.bnb_base:
        _as_bitsandbytes(model)
    if v.trains == "non-projections":
        for n, m in model.named_modules():
            if isinstance(m, torch.nn.Linear) and in_block(n):
                m.weight.requires_grad_(False)
    return model, fake


def _to_bf16(model: Any, keep_adapters: bool) -> None:
    """DeepSpeed's bf16 cast of the module (``_cast_module_mixed_precision``). Under ZeRO-3 the base is built under
    ``zero.Init`` and DeepSpeed casts no parameter of such a model (``is_zero_init_model``): PEFT's adapters, added
    after it in fp32 (``autocast_adapter_dtype``), stay fp32, and each casts its input to fp32 (DeepSpeed 0.19.8,
    deepspeed/runtime/engine.py)."""
    import torch

    if not keep_adapters:
        model.to(torch.bfloat16)  # buffers too, as every trace of DeepSpeed's bf16 has been made
        return
    for name, module in model.named_modules():
        if ".lora_" in f".{name}":
            continue
        for p in module.parameters(recurse=False):
            p.data = p.data.to(torch.bfloat16)
        for key, b in module.named_buffers(recurse=False):
            if b.is_floating_point():
                setattr(module, key, b.to(torch.bfloat16))


class _Zero3Linear:
    """DeepSpeed's ``LinearFunctionForZeroStage3`` (deepspeed/runtime/zero/linear.py, 0.19.8), which ZeRO-3 puts in
    place of ``torch.nn.functional.linear`` ("This will persist unless manually reset"): the product as ``matmul`` and
    the input, weight and bias saved for backward whatever needs a gradient, so a frozen projection keeps its input
    too (Qwen3-8B LoRA on two GPUs, 2048 tokens: 20.1 GiB saved at the end of forward under ZeRO-3, 12.2 under
    ZeRO-2; probes/anatomy_cases_10.jsonl). Written here, not imported, so a trace needs no DeepSpeed import."""

    function: Any = None

    @classmethod
    def apply(cls, input: Any, weight: Any, bias: Any = None) -> Any:  # noqa: A002 - F.linear's own names
        if cls.function is None:
            import torch

            class LinearFunctionForZeroStage3(torch.autograd.Function):
                @staticmethod
                def forward(input, weight, bias=None):  # noqa: A002
                    if input.dim() == 2 and bias is not None:
                        return torch.addmm(bias, input, weight.t())
                    out = input.matmul(weight.t())
                    return out + bias if bias is not None else out

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, bias = inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None  # noqa: A001
                    ctx.save_for_backward(input, weight, bias)

                @staticmethod
                def backward(ctx, grad):
                    input, weight, bias = ctx.saved_tensors  # noqa: A001
                    gi = grad.matmul(weight) if ctx.needs_input_grad[0] else None
                    gw = (grad.reshape(-1, grad.shape[-1]).t().matmul(input.reshape(-1, input.shape[-1]))
                          if ctx.needs_input_grad[1] else None)
                    gb = grad.sum(list(range(grad.dim() - 1))) if bias is not None and ctx.needs_input_grad[2] else None
                    return gi, gw, gb

            cls.function = LinearFunctionForZeroStage3
        return cls.function.apply(input, weight, bias)


@contextlib.contextmanager
def _zero3_linear(on: bool) -> Iterator[None]:
    """``torch.nn.functional.linear`` as DeepSpeed's ZeRO-3 leaves it while ``on``, torch's own otherwise: what an
    earlier ZeRO-3 engine of this process left behind never reaches the trace of a case without it."""
    import torch

    linear = torch.nn.functional.linear
    torch.nn.functional.linear = _Zero3Linear.apply if on else torch._C._nn.linear
    try:
        yield
    finally:
        torch.nn.functional.linear = linear


def _as_bitsandbytes(model: Any) -> None:
    """Frozen decoder projections behave as bitsandbytes' Linear4bit / Linear8bitLt do: the product in bf16, the output
    cast back to the input's dtype (``out.to(inp_dtype)``), so after an autocast LayerNorm (fp32) the projections and
    the MLP between them run in fp32. The dequantize kernels themselves are priced by the step-time model."""
    import torch

    def forward(self: Any, x: Any) -> Any:
        bias = None if self.bias is None else self.bias.to(torch.bfloat16)
        return torch.nn.functional.linear(x.to(torch.bfloat16), self.weight, bias).to(x.dtype)

    # transformers' replace_with_bnb_linear takes the blocks' nn.Linear layers, a subclass with a product of its own too
    # (Falcon's FalconLinear); a subclass that post-processes nn.Linear's product (PhiMoE's and Llama-4's routers, which
    # return a tuple) keeps its forward, as QLoRA of those models ran
    for n, m in model.named_modules():
        if isinstance(m, torch.nn.Linear) and in_block(n) and ".lora_" not in n and not calls_linear_forward(m):
            m.forward = forward.__get__(m)


def _with_adapters(model: Any, v: TraceVariant) -> Any:
    """PEFT's LoRA on the model's own module names (or 'all-linear'), as ``get_peft_model`` resolves them."""
    import peft

    lcfg = peft.LoraConfig(r=v.lora_rank, lora_alpha=2 * v.lora_rank, lora_dropout=0.0, bias="none",
                           target_modules=v.lora_targets, task_type="CAUSAL_LM")
    try:
        return peft.get_peft_model(model, lcfg)
    except ValueError as e:
        names = _layer_linear_names(model)
        if "not found" in str(e):  # PEFT 0.21: "Target modules {...} not found in the base model"
            raise AdvisorError(f"LoRA targets {v.lora_targets!r}: PEFT finds none of them in this model; "
                               f"its projections: {', '.join(names)}, or 'all-linear'") from None
        # PEFT found them and refuses some (Mamba's out_proj on a hybrid, which 'all-linear' takes in): its own reason
        reason = " ".join(str(e).split())[:240]
        usable = [n for n in names if f"'{n}'" not in reason]  # those PEFT names as incompatible left out
        raise AdvisorError(f"LoRA targets {v.lora_targets!r}: PEFT refuses them ({reason}); name the projections "
                           f"instead: {', '.join(usable)}") from None


@contextlib.contextmanager
def _cuda_autocast_fp32() -> Iterator[None]:
    """CUDA autocast's fp32 list on CPU tensors: CPU autocast leaves layer_norm / group_norm, pow, exp, softmax... in
    bf16, CUDA's runs them in fp32, so a LayerNorm model's residual branch comes out fp32 there, and Phi-2's tanh GELU
    (pow) runs in fp32 with its fp32 inputs saved (own H100 anatomy, 2026-11-25: fp32 elementwise kernels, 62 GiB where
    the bf16 trace counted 47). Held over the backward too: a checkpointed layer recomputes its forward there under the
    autocast state it saved, and must get the dtypes it saved (StarCoder2 LoRA with recomputation failed to trace
    without it)."""
    import torch

    def fp32(fn: Any) -> Any:
        def run(x: Any, *args: Any, **kw: Any) -> Any:
            if (not torch.is_autocast_enabled("cpu") or not isinstance(x, torch.Tensor) or not x.is_floating_point()
                    or x.dtype == torch.float32):
                return fn(x, *args, **kw)
            with torch.autocast("cpu", enabled=False):
                up = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
                kw = {k: (a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a) for k, a in kw.items()}
                return fn(x.float(), *up, **kw)
        return run

    f, T = torch.nn.functional, torch.Tensor
    upcast = [(f, "layer_norm"), (f, "group_norm"), (torch, "pow"), (T, "pow"), (T, "__pow__"), (torch, "exp"),
              (T, "exp"), (torch, "rsqrt"), (T, "rsqrt"), (f, "softmax"), (f, "log_softmax"), (torch, "softmax"),
              (T, "softmax"), (f, "softplus"), (torch, "square"), (T, "square"),  # square: pow(x, 2) on a GPU, so fp32
              (torch, "expm1"), (T, "expm1"), (torch, "log"), (T, "log"), (torch, "log1p"), (T, "log1p"),
              (torch, "reciprocal"), (T, "reciprocal")]
    # (Jais-2's squared-ReLU MLP saved an fp32 copy of its input: 52.2 GiB on one H100 where the bf16 trace counted 39.3;
    # Apertus's xIELU takes expm1 of its input: fp32 on a GPU, its activations 38.0 GiB at the end of forward where the
    # trace without expm1 counted 34.0, own H200 anatomy 2026-11-28)
    kept = [(owner, name, getattr(owner, name)) for owner, name in upcast]
    for owner, name, fn in kept:
        setattr(owner, name, fp32(fn))
    try:
        yield
    finally:
        for owner, name, fn in kept:
            setattr(owner, name, fn)


@contextlib.contextmanager
def as_on_a_gpu() -> Iterator[None]:
    """transformers takes a fake tensor for a graph being traced: it cannot read the position ids to rule out packed
    sequences, so it materialises the causal mask that a real run skips (SDPA's ``is_causal``). Our batches are never
    packed; the trace must see what the real run does."""
    import torch
    import transformers.masking_utils as mu

    old, sdpa = mu.find_packed_sequence_indices, torch.nn.functional.scaled_dot_product_attention

    def fused(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
        # attention dropout (Seed-OSS's config: 0.1): a GPU's fused kernels drop inside the kernel and keep only the RNG
        # state, where the CPU's math path would keep the s x s probabilities (Seed-OSS-36B LoRA at 2k: 288 GiB)
        dropout_p = 0.0
        # query/key and value head sizes differ (DeepSeek's latent attention: 192 and 128): the CPU has no fused kernel
        # for it and would materialise the s x s scores, where a GPU runs a fused one (cuDNN / memory-efficient, which
        # keep the output and a log-sum-exp). The memory-efficient kernel's own operator gives the GPU's shapes.
        if query.shape[-1] == value.shape[-1] or kw.get("enable_gqa") or key.shape[-3] != query.shape[-3]:
            return sdpa(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                        **kw)
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            query, key, value, attn_mask, query.requires_grad or key.requires_grad, dropout_p, is_causal,
            scale=scale)[0]

    dropout = torch.nn.functional.dropout

    def fused_dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002 - F.dropout's own names
        # on a GPU, ATen's dropout is one fused kernel keeping a 1-byte mask (native_dropout); the CPU's path launches
        # four (empty, bernoulli, div, mul) and keeps a mask of the input's dtype (OPT-1.3B, residual dropout 0.1:
        # 16-25% slow and 8.5% heavy on an H200)
        if not training or p <= 0.0 or p >= 1.0:
            return dropout(input, p, training, inplace)
        return torch.ops.aten.native_dropout(input, p, True)[0]

    rand = torch.rand

    def draw(*size, **kw):  # LayerDrop's draw (OPT, XGLM, BioGPT: ``torch.rand([]) < layerdrop``) is read on the host,
        # which a fake tensor cannot answer; a known 1.0 drops no layer, as their configs' layerdrop of 0 never does
        return torch.tensor(1.0) if size in (([],), ((),), ()) and not kw.get("out") else rand(*size, **kw)

    mu.find_packed_sequence_indices = lambda *a, **k: None
    torch.nn.functional.scaled_dot_product_attention = fused
    torch.rand = draw
    torch.nn.functional.dropout = fused_dropout
    try:
        yield
    finally:
        mu.find_packed_sequence_indices = old
        torch.nn.functional.scaled_dot_product_attention = sdpa
        torch.rand = rand
        torch.nn.functional.dropout = dropout


# a layer's own chunk length where its config names one (Mamba-2's chunked scan: Falcon-H1, Bamba, Granite-4.0-H)
SCAN_CHUNK_KEYS = ("mamba_chunk_size", "chunk_size")


def scan_chunk(config: dict[str, Any]) -> int:
    """The chunk a config's scan pads the sequence to (0: none named, or no longer than SEQS's steps)."""
    sizes = [v for k in SCAN_CHUNK_KEYS if isinstance(v := config.get(k), int) and not isinstance(v, bool)]
    return max(sizes, default=0)


def seqs(v: TraceVariant, chunk: int = 0) -> tuple[int, ...]:
    """The three traced lengths: past the variant's ``min_seq`` (a sliding window) when it has one; 2, 3 and 4 chunks
    (less 8) of a scan whose chunk is longer than SEQS's steps, so that what a chunk allocates (Falcon-H1's Mamba-2:
    256 x 256 per head and state, 16 GiB a chunk at 7B) grows with the length as it does: at SEQS the three lengths
    padded to one chunk, a constant, and Falcon-H1 at 2k, predicted 50 GiB, asked for 64 GiB more on an H100."""
    lengths = tuple(k * chunk - 8 for k in (2, 3, 4)) if chunk > SEQS[1] - SEQS[0] else SEQS
    return tuple(v.min_seq + s for s in lengths)


def _run(model: Any, fake: Any, v: TraceVariant, seq: int) -> dict[str, Any]:
    import torch

    params = [p for p in model.parameters()]
    keys = {p.untyped_storage()._cdata for p in params} | {b.untyped_storage()._cdata for b in model.buffers()}
    c = _Counter(keys, _weights(model), {tuple(p.shape) for p in params if p.requires_grad})
    hooks = [p.register_post_accumulate_grad_hook(lambda p: setattr(p, "grad", None)) for p in params if p.requires_grad]
    def shift(d: int) -> Any:
        return lambda *_: setattr(c, "in_adapter", c.in_adapter + d)

    def shift_layer(d: int) -> Any:
        return lambda *_: setattr(c, "in_layer", c.in_layer + d)

    def enter(m: Any, *_: Any) -> None:
        c.running[id(m)] += 1

    def leave(m: Any, *_: Any) -> None:
        c.running[id(m)] -= 1

    holders: dict[int, set[int]] = defaultdict(set)
    for name, mod in model.named_modules():
        for p in mod.parameters(recurse=False):
            holders[p.untyped_storage()._cdata].add(id(mod))
        hooks += [mod.register_forward_pre_hook(enter), mod.register_forward_hook(leave)]
    from probes.hf_model import decoder_layers

    # the decoder layers themselves, not any numbered module (Granite-SWA's ``model.rotary_embs.0`` runs first, and its
    # output needs no gradient: taken for a layer, it made full training's first layer look frozen and its allocations
    # count as a layer's)
    for mod in decoder_layers(model):
        hooks += [mod.register_forward_pre_hook(shift_layer(1)), mod.register_forward_hook(shift_layer(-1)),
                  mod.register_forward_hook(functools.partial(_note_grad, c, any(q.requires_grad for q in mod.parameters())))]
    names = {p.untyped_storage()._cdata: (n, p.numel()) for n, p in model.named_parameters()}
    c.owners = {k: (frozenset(v), names.get(k, ("?", 0))) for k, v in holders.items()}
    for mod in model.modules():  # kernels of PEFT's LoRA wrappers beyond their base layer's, told apart
        base = getattr(mod, "base_layer", None)
        if base is not None and hasattr(mod, "lora_A"):
            hooks += [mod.register_forward_pre_hook(shift(1)), mod.register_forward_hook(shift(-1)),
                      base.register_forward_pre_hook(shift(-1)), base.register_forward_hook(shift(1))]
    # bf16 autocast where the real run has it (Trainer(bf16=True), our PyTorch loop): without it PEFT's fp32 adapters
    # would save fp32 copies of their inputs
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if v.autocast else contextlib.nullcontext()
    retained = _Retained(model)
    with fake:
        ids = torch.zeros((1, seq), dtype=torch.long)
        with _mode(c), as_on_a_gpu(), _cuda_autocast_fp32(), _zero3_linear(v.zero3):
            with amp, torch.autograd.graph.saved_tensors_hooks(retained.pack, lambda t: t):
                loss = model(input_ids=ids, labels=ids).loss
            saved = c.live
            c.phase = "bwd"
            loss.backward()
            del loss
    for h in hooks:
        h.remove()
    return {"c": c, "saved": saved, "peak": c.peak, "outside": c.outside, "retained": retained.elements(),
            "layer_grads": c.layer_grads}


def _note_grad(c: _Counter, trains: bool, _mod: Any, _args: Any, out: Any) -> None:
    """A decoder layer's forward ended: whether it trains and whether its output needs a gradient (a layer before
    the first that trains, whose input needs none, runs no backward and keeps nothing for one). Forward only: a
    recomputed layer runs its forward again in backward."""
    if c.phase == "fwd":
        first = out[0] if isinstance(out, (tuple, list)) else out
        c.layer_grads.append((trains, bool(getattr(first, "requires_grad", False))))


class _Retained:
    """The parameters whose storage a tensor saved for backward holds, other than the parameter itself, outside every
    ``nn.Linear``: under ZeRO-3, DeepSpeed releases a gathered parameter by giving it an empty storage, and its own linear
    function saves the parameter itself, but a view saved by another product (a MoE layer's stacked experts, transposed
    for a grouped GEMM) keeps the gathered storage alive until backward. Where the product saves the parameter itself
    (Llama-4's experts, through ``bmm``), it is released. Parameters under the persistence threshold of the config we
    write stay whole on every rank: ZeRO-3 never releases them."""

    def __init__(self, model: Any) -> None:
        import torch

        from models.memory import STAGE3_PERSISTENCE_THRESHOLD

        linear = {p.untyped_storage()._cdata for m in model.modules() if _runs_f_linear(m, torch)
                  for p in m.parameters(recurse=False)}
        self.params = {p.untyped_storage()._cdata: p for p in model.parameters()
                       if p.untyped_storage()._cdata not in linear and p.numel() > STAGE3_PERSISTENCE_THRESHOLD}
        self.held: set[int] = set()

    def pack(self, t: Any) -> Any:
        if hasattr(t, "untyped_storage"):
            key = t.untyped_storage()._cdata
            p = self.params.get(key)
            if p is not None and t is not p:
                self.held.add(key)
        return t

    def elements(self) -> float:
        return float(sum(self.params[k].numel() for k in self.held))


@functools.lru_cache(maxsize=None)
def _forward_source(cls: type) -> str | None:
    """The source of a module class's own forward (None where it cannot be read), read once per class."""
    import inspect

    try:
        return inspect.getsource(cls.forward)
    except (OSError, TypeError):
        return None


def calls_linear_forward(m: Any) -> bool:
    """A linear subclass whose forward runs ``nn.Linear.forward`` and works on its result (a router's
    ``super().forward``)."""
    import torch

    if type(m).forward is torch.nn.Linear.forward:
        return False
    source = _forward_source(type(m))
    return source is not None and "super().forward" in source


def _runs_f_linear(m: Any, torch: Any) -> bool:
    """Does this module's product go through ``F.linear``, which ZeRO-3 replaces by its own function (saving the
    parameter itself)? ``nn.Linear`` does, so does a subclass whose forward calls it (a router's ``super().forward``),
    and PEFT's and bitsandbytes' layers; a subclass with a product of its own does not: Falcon's ``FalconLinear``
    multiplies by ``self.weight.T``, a view that keeps the gathered weight alive until backward (Falcon-7B full ZeRO-3
    on two H200s, 2026-11-28: 122.8 GiB measured, 105.9 predicted while every ``nn.Linear`` was taken as released),
    unless bitsandbytes replaced it (QLoRA: its stand-in calls F.linear)."""
    if not isinstance(m, torch.nn.Linear):
        return False
    if "forward" in vars(m):  # the bitsandbytes stand-in replaced its forward (``_as_bitsandbytes``): F.linear
        return True
    if type(m).forward is torch.nn.Linear.forward or type(m).__module__.split(".")[0] in ("peft", "bitsandbytes") \
            or calls_linear_forward(m):
        return True
    source = _forward_source(type(m))
    return source is None or "linear(" in source


def _poly(values: list[float], lengths: tuple[int, ...] = SEQS) -> Poly:
    """Exact c0 + c1·s + c2·s² through the three traced lengths (batch 1)."""
    import numpy as np

    s = np.array(lengths, dtype=float)
    c2, c1, c0 = np.polyfit(s, np.array(values, dtype=float), 2)
    clean = lambda x, scale: 0.0 if abs(x) * scale < 1e-6 * max(1.0, max(abs(y) for y in values)) else float(x)  # noqa: E731
    return Poly(const=clean(c0, 1), per_token=clean(c1, s[-1]), per_token_seq=clean(c2, s[-1] ** 2))


def _part(runs: list[dict[str, Any]], lengths: tuple[int, ...] = SEQS) -> dict[str, Any]:
    """Polynomials of one cut over the three lengths."""
    cs = [r["c"] for r in runs]

    def fit(values: list[float]) -> Poly:
        return _poly(values, lengths)

    gemms = {}
    for key in set().union(*(c.gemms for c in cs)):
        rows = [c.gemms[key][2] for c in cs]
        gemms[key] = (fit([c.gemms[key][0] for c in cs]), cs[0].gemms[key][1], rows[-1] / lengths[-1])
    return {
        "gemms": gemms,
        "attention_flops_fwd": fit([c.attn_flops["fwd"] for c in cs]),
        "attention_flops_bwd": fit([c.attn_flops["bwd"] for c in cs]),
        "masked_attention_flops_fwd": fit([c.masked_flops["fwd"] for c in cs]),
        "masked_attention_flops_bwd": fit([c.masked_flops["bwd"] for c in cs]),
        "wide_attention_flops_fwd": fit([c.wide_flops["fwd"] for c in cs]),
        "wide_attention_flops_bwd": fit([c.wide_flops["bwd"] for c in cs]),
        "fp32_flops_fwd": fit([c.fp32_flops["fwd"] for c in cs]),
        "attention_bytes_fwd": fit([c.attn_bytes["fwd"] for c in cs]),
        "attention_bytes_bwd": fit([c.attn_bytes["bwd"] for c in cs]),
        "fp32_flops_bwd": fit([c.fp32_flops["bwd"] for c in cs]),
        "attention_calls": cs[0].attn_calls,
        "other_bytes_fwd": fit([c.other_bytes["fwd"] for c in cs]),
        "other_bytes_bwd": fit([c.other_bytes["bwd"] for c in cs]),
        "irregular_bytes_fwd": fit([c.irregular_bytes["fwd"] for c in cs]),
        "irregular_bytes_bwd": fit([c.irregular_bytes["bwd"] for c in cs]),
        "strided_bytes_fwd": fit([c.strided_bytes["fwd"] for c in cs]),
        "strided_bytes_bwd": fit([c.strided_bytes["bwd"] for c in cs]),
        "strided_elem_dims_fwd": fit([c.strided_elem_dims["fwd"] for c in cs]),
        "strided_elem_dims_bwd": fit([c.strided_elem_dims["bwd"] for c in cs]),
        **_kernel_counts(cs, lengths, "fwd"),
        **_kernel_counts(cs, lengths, "bwd"),
        "adapter_kernels_fwd": cs[0].adapter_kernels,
        "saved_bytes": fit([r["saved"] for r in runs]),
        "peak_extra": fit([r["peak"] - r["saved"] for r in runs]),
        "largest_layer_alloc": fit([r["c"].largest_in_layer for r in runs]),
    }


def _kernel_counts(cs: list[_Counter], lengths: tuple[int, ...], phase: str) -> dict[str, float]:
    """Kernels of one pass: a count, plus a count per token of the sequence where the launches grow with it at every
    traced length (a loop over chunks of the sequence); attention's kernels do not."""
    k = [c.kernels[phase] for c in cs]
    grows = all(x < y for x, y in zip(k, k[1:]))
    slope = (k[-1] - k[0]) / (lengths[-1] - lengths[0]) if grows else 0.0
    return {f"kernels_{phase}": k[0] - slope * lengths[0], f"kernels_seq_{phase}": slope}


def _layer_part(a: dict[str, Any], b: dict[str, Any], p: int) -> Part:
    """One decoder layer (the pattern's average) from cuts of ``base`` and ``base + p`` layers."""
    inv = 1.0 / p
    gemms = []
    for key in sorted(set(a["gemms"]) | set(b["gemms"])):
        phase, k, n, quant, adapter, grouped = key
        fa, ca, ra = a["gemms"].get(key, (Poly(), 0.0, 0.0))
        fb, cb, rb = b["gemms"].get(key, (Poly(), 0.0, 0.0))
        if cb > ca:
            gemms.append(Gemm(phase=phase, k=k, n=n, calls=(cb - ca) * inv, rows_per_token=(rb - ra) / (cb - ca),
                              flops=_scale(fb.plus(fa, -1.0), inv), quantizable=quant, adapter=adapter,
                              grouped=grouped))
    return Part(gemms=gemms, **{f: _scale(b[f].plus(a[f], -1.0), inv) for f in Part.polys()},
                **{f: (b[f] - a[f]) * inv for f in Part.counts()})


def _lincomb(terms: list[tuple[float, dict[str, Any]]]) -> dict[str, Any]:
    """Σ coef · cut, field by field (polynomials, counts, and each weight shape's FLOPs, calls and rows); a weight
    shape whose calls cancel is dropped."""
    out: dict[str, Any] = {}
    for field in terms[0][1]:
        if field == "gemms":
            keys = set().union(*(cut["gemms"] for _, cut in terms))
            gemms = {}
            for key in keys:
                flops, calls, rows = Poly(), 0.0, 0.0
                for c, cut in terms:
                    if key in cut["gemms"]:
                        f, n, r = cut["gemms"][key]
                        flops, calls, rows = flops.plus(f, c), calls + c * n, rows + c * r
                if abs(calls) > 1e-9:
                    gemms[key] = (flops, calls, rows)
            out[field] = gemms
        elif isinstance(terms[0][1][field], Poly):
            acc = Poly()
            for c, cut in terms:
                acc = acc.plus(cut[field], c)
            out[field] = acc
        else:
            out[field] = sum(c * cut[field] for c, cut in terms)
    return out


def _whole_part(a: dict[str, Any]) -> Part:
    """The base cut as it ran: embedding, its layers, final norm, LM head and loss."""
    gemms = [Gemm(phase=k[0], k=k[1], n=k[2], calls=c, rows_per_token=r / c, flops=f, quantizable=k[3], adapter=k[4],
                  grouped=k[5])
             for k, (f, c, r) in sorted(a["gemms"].items())]
    return Part(gemms=gemms, **{f: a[f] for f in Part.polys() + Part.counts()})


def _scale(p: Poly, k: float) -> Poly:
    return Poly(const=p.const * k, per_token=p.per_token * k, per_token_seq=p.per_token_seq * k)


def _params(model: Any) -> dict[str, float]:
    import torch

    def count(pred) -> float:
        seen, n = set(), 0
        for name, p in model.named_parameters():
            if p.untyped_storage()._cdata not in seen and pred(name, p):
                seen.add(p.untyped_storage()._cdata)
                n += p.numel()
        return float(n)

    quant = sum(m.weight.numel() for n, m in model.named_modules()
                if isinstance(m, torch.nn.Linear) and in_block(n) and ".lora_" not in n)
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    tied = head is not None and head.weight.untyped_storage()._cdata == emb.untyped_storage()._cdata
    leaf_modules = [m for n, m in model.named_modules() if in_block(n)
                    and any(True for _ in m.parameters(recurse=False))]
    return {
        "total": count(lambda n, p: ".lora_" not in n), "trainable": count(lambda n, p: p.requires_grad),
        "adapter": count(lambda n, p: ".lora_" in n), "quantizable": float(quant), "embedding": float(emb.numel()),
        "lm_head": 0.0 if tied or head is None else float(head.weight.numel()),
        "largest": float(max(p.numel() for p in model.parameters())),
        "tensors_trainable": float(sum(1 for n, p in model.named_parameters() if p.requires_grad and in_block(n))),
        "modules": float(len(leaf_modules)),
    }


def layer_plan(config: dict[str, Any]) -> tuple[int, int, int]:
    """(layers of the full model, layers of the base cut, the pattern's period)."""
    layers = int(config["num_hidden_layers"])
    prefix, p = _plan(config)
    return layers, min(layers, prefix + p), p


def trace_model(config: dict[str, Any], variant: TraceVariant) -> ArchTrace:
    """Trace ``config`` (a Hugging Face config dict with ``model_type``) under ``variant``; the libraries' deprecation
    chatter, and fake tensors' log of an operator that refuses its inputs (raised to the caller as one line), stay out
    of the user's terminal."""
    import logging
    import warnings

    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    quiet = logging.Filter("(none)")  # a filter, not a level: torch's logging setup resets its loggers' levels
    fake_log.addFilter(quiet)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _trace_model(config, variant)
    finally:
        hf_logging.set_verbosity(level)
        fake_log.removeFilter(quiet)


def _layer_name(name: str) -> str:
    """A parameter's name with its layer numbers as N (``model.layers.N.conv.conv.weight``): one name per kind."""
    return re.sub(r"\.\d+(?=\.)", ".N", name)


def _cut(config: dict[str, Any], n: int, variant: TraceVariant, layer_index: list[int] | None = None
         ) -> tuple[dict[str, Any], dict[str, float], str, set[tuple[str, int]], list[tuple[bool, bool]]]:
    """One cut of ``n`` layers (the model's layers ``layer_index`` when given, else its first) traced at the variant's
    three lengths: its polynomials, its parameters, the attention it ran, the parameters it read outside the
    forward of every module that holds them, and per layer (it trains, its output needs a gradient)."""
    model, fake = build_fake_model(config, n, variant, layer_index)
    used = model.config._attn_implementation
    lengths = seqs(variant, scan_chunk(config))
    try:
        runs = [_run(model, fake, variant, s) for s in lengths]
    except AdvisorError:
        raise
    except Exception as e:  # the model's code did something fake tensors cannot follow
        why = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        wrapped = _failing_adapter(model, e.__traceback__)
        if wrapped:
            # PEFT wrapped a module that is no plain projection (PhiMoE's and Llama-4's routers are nn.Linear
            # subclasses returning a tuple): the same step fails on a GPU, so say which and what to name instead
            names = [n for n in _layer_linear_names(model) if n != wrapped.rsplit(".", 1)[-1]]
            raise AdvisorError(f"LoRA targets {variant.lora_targets!r}: PEFT wraps {wrapped!r}, which its LoRA layer "
                               f"cannot run ({why}); name the projections instead: {', '.join(names)}") from None
        raise AdvisorError(f"cannot trace model_type {config.get('model_type')!r}: {why}") from None
    return (_part(runs, lengths), {**_params(model), "zero3_retained": max(r["retained"] for r in runs)}, used,
            set().union(*(r["outside"] for r in runs)), runs[0]["layer_grads"])


def _failing_adapter(model: Any, tb: Any) -> str | None:
    """The name of the PEFT-wrapped module whose LoRA forward raised (the innermost frame of a LoRA layer in PEFT's
    tuners), or None. The tuner's own model wrapper (``base_model``) is on every trace's stack: an error of the model's
    code under it is the model's, not an adapter's (DeepSeek-V2's default config: a data-dependent top-k)."""
    import torch

    name = None
    while tb is not None:
        frame = tb.tb_frame
        owner = frame.f_locals.get("self")
        if "/peft/tuners/" in frame.f_code.co_filename.replace("\\", "/") and isinstance(owner, torch.nn.Module) \
                and hasattr(owner, "lora_A"):
            name = next((n for n, m in model.named_modules() if m is owner), name)
        tb = tb.tb_next
    return name.removeprefix("base_model.model.") if name else None


def layer_kinds(config: dict[str, Any]) -> tuple[list[int], dict[int, float]] | None:
    """A long layer pattern traced one layer per kind: (one layer of each kind, by its number in the model, in order
    of appearance; each kind's share of the model's layers), where that runs fewer layers than a one- and a
    two-period cut (Gemma-3: 5 sliding + 1 full, 8 layers instead of 18); None otherwise (and for a dense prefix,
    which the period cuts handle)."""
    from probes.hf_model import first_of_each_kind, layer_signatures

    prefix, p = _plan(config)
    if p < 3 or prefix or int(config.get("first_k_dense_replace") or 0):  # (an irregular model: p is all its layers)
        return None
    sig = layer_signatures(config)
    kinds = first_of_each_kind(sig)
    if len(kinds) < 2 or len(kinds) * (len(kinds) + 2) >= 3 * p:
        return None
    return kinds, {i: sig.count(sig[i]) / len(sig) for i in kinds}


def _frozen_prefix(sig: list[tuple], cut_layers: list[int], grads: list[tuple[bool, bool]]) -> int:
    """Layers of the whole model that run no backward: those before its first layer of a kind that trains, where the
    cut's first layer's input needs no gradient (LoRA on the attention projections of a hybrid: the Mamba and MoE
    layers before its first attention layer; under recomputation the input needs one, as PEFT makes it). 0 where every
    layer runs backward. ``sig``: the model's layer signatures; ``grads``: the cut's layers (the model's
    ``cut_layers``), each (trains, output needs grad)."""
    if not grads or grads[0][1]:
        return 0
    trained = {sig[i] for i, (trains, _) in zip(cut_layers, grads) if trains}
    return next((i for i, s in enumerate(sig) if s in trained), len(sig))


def _backward_of(cut: dict[str, Any]) -> dict[str, Any]:
    """What a layer's backward adds to a cut (its backward products and kernels, what it saves for them): the part of a
    layer that one before the first trained layer does not run."""
    out: dict[str, Any] = {}
    for field, value in cut.items():
        if field == "gemms":
            out[field] = {k: g for k, g in value.items() if k[0] == "bwd"}
        elif field.endswith("_bwd") or field == "saved_bytes":
            out[field] = value
        else:
            out[field] = Poly() if isinstance(value, Poly) else 0.0
    return out


def _frozen_terms(sig: list[tuple], kinds: list[int], grads: list[tuple[bool, bool]], frozen: int,
                  a: dict[str, Any], more: list[dict[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
    """The terms that take the backward of the whole model's ``frozen`` first layers out of a long pattern's rest, and
    put back that of the base cut's own layers before its first trained one (each kind's layer, the difference of its
    longer cut, ran behind a trained layer)."""
    if not frozen:
        return []
    a_frozen = next((j for j, (_, needs) in enumerate(grads) if needs), len(grads))
    terms = []
    for j, (k, m) in enumerate(zip(kinds, more)):
        coef = float(j < a_frozen) - sig[:frozen].count(sig[k])
        if coef:
            terms.append((coef, _backward_of(_lincomb([(1.0, m), (-1.0, a)]))))
    return terms


def _one_more(config: dict[str, Any], kinds: list[int]) -> list[list[int]]:
    """For each kind, the layers of a cut with one more layer of it: after the others, as most of a model's layers are
    (behind a trained one, they keep what autograd needs for the input's gradient: Qwen3.5's delta-net layers, frozen
    under LoRA on q/k/v/o, kept nothing as the cut's first layer, and its peak was predicted 28% low); first where the
    config would change the last layer's kind (Gemma-4 makes its last layer a full-attention one)."""
    from probes.hf_model import config_from_dict, layer_signatures

    sig = layer_signatures(config)

    def order(k: int) -> list[int]:
        last = kinds + [k]
        # NemotronH's to_dict leaves out num_hidden_layers (derived from its layers_block_type)
        cut = {"num_hidden_layers": len(last), **config_from_dict(config, len(last), layer_index=last).to_dict(),
               "model_type": config["model_type"]}
        return last if layer_signatures(cut) == [sig[i] for i in last] else [k] + kinds

    return [order(k) for k in kinds]


def _trace_model(config: dict[str, Any], variant: TraceVariant) -> ArchTrace:
    from importlib.metadata import version

    import torch
    import transformers

    from probes.hf_model import layer_signatures

    t0 = time.perf_counter()
    sig = layer_signatures(config)
    layers, base, p = layer_plan(config)
    typed = layer_kinds(config)
    if typed is None:  # a one-period and a two-period cut: the layer is their difference over the period
        (a, pa, used, outside, grads), (b, pb, _, more_outside, _) = (_cut(config, n, variant) for n in (base, base + p))
        outside |= more_outside
        layer, rest = _layer_part(a, b, p), _whole_part(a)
        per_layer = {k: (pb[k] - pa[k]) / p for k in pa}
        # the base cut's first layers are the model's, a frozen prefix included: rest + (layers - base) x layer is the
        # whole model as it is. The longer cut's second period runs behind a trained layer, which a model no longer
        # than the base cut never does (Nemotron-H's four layers under LoRA on attention: its Mamba-2 layer's backward,
        # 20 GiB of temporaries, was taken for the peak of a step that runs none)
        frozen = _frozen_prefix(sig, list(range(base)), grads)
        base_params, peaked = pa, ((a, b) if layers > base else (a,))
    else:  # one layer of each kind, then that plus one more of each kind: each kind's layer is its difference
        kinds, share = typed
        a, pa, used, outside, grads = _cut(config, len(kinds), variant, kinds)
        more = [_cut(config, len(kinds) + 1, variant, order) for order in _one_more(config, kinds)]
        outside = outside.union(*(m[3] for m in more))
        avg = _lincomb([(share[k], m[0]) for k, m in zip(kinds, more)] + [(-1.0, a)])  # the model's average layer
        layer = _layer_part(_lincomb([(0.0, a)]), avg, 1)
        frozen = _frozen_prefix(sig, kinds, grads)
        # the base cut's own layers replaced by average ones: rest + (layers - base) x layer is then the whole model,
        # less the backward of the layers before the first that trains (each kind's layer ran behind a trained one)
        rest = _whole_part(_lincomb([(1.0 + len(kinds), a)] + [(-1.0, m[0]) for m in more] + [(float(len(kinds)), avg)]
                                    + _frozen_terms(sig, kinds, grads, frozen, a, [m[0] for m in more])))
        per_layer = {key: sum(share[k] * (m[1][key] - pa[key]) for k, m in zip(kinds, more)) for key in pa}
        base = len(kinds)
        base_params = {key: (1 + base) * pa[key] - sum(m[1][key] for m in more) + base * per_layer[key] for key in pa}
        peaked = (a, *(m[0] for k, m in zip(kinds, more) if sig[k] in sig[frozen:]))
    extra = layers - base

    def whole(k: str) -> int:
        return int(round(base_params[k] + extra * per_layer[k]))

    s_top = seqs(variant, scan_chunk(config))[-1]
    peak = max((c["peak_extra"] for c in peaked), key=lambda x: x.at(1, s_top))
    largest = max((c["largest_layer_alloc"] for c in peaked), key=lambda x: x.at(1, s_top))
    return ArchTrace(
        config_hash=config_hash(config), model_type=str(config["model_type"]), variant=variant, layers=layers,
        rest_layers=base, layer=layer, rest=rest, peak_extra_bytes=peak, largest_layer_alloc_bytes=largest,
        attention_used="eager" if used == "eager" else "sdpa", layers_without_backward=frozen,
        params_outside_module=dict(sorted({_layer_name(n): k for n, k in outside}.items())[:8]),
        params=ParamTrace(total=whole("total"), embedding=int(pa["embedding"]), lm_head=int(pa["lm_head"]),
                          quantizable=whole("quantizable"), largest=int(pa["largest"]),
                          trainable=whole("trainable"), adapter=whole("adapter"),
                          tensors_trainable_per_layer=per_layer["tensors_trainable"],
                          modules_per_layer=per_layer["modules"],
                          zero3_retained_per_layer=per_layer["zero3_retained"]),
        versions={"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__,
                  "peft": version("peft")},
        seconds=time.perf_counter() - t0,
    )
