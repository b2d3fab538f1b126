"""Random-initialised Hugging Face decoders for real measurements, never loaded from a hub.

Only shapes matter for speed and memory, so every model here is built from a ``ModelArch`` with random
weights directly on the target device. Quantized bases (bitsandbytes NF4 / int8) are built one decoder
layer at a time and quantized as they are made, so the device never holds the whole 16-bit model: that is
how ``from_pretrained(..., quantization_config=...)`` behaves, and it keeps the measured peak honest.

torch / transformers / peft / bitsandbytes are imported inside the functions: the CLI imports this module.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import TYPE_CHECKING, Any, Iterator

from knowledge.schema import ModelArch, TrainCase
from probes.engine_linears import FORMATS as ENGINE_FORMATS, quantize_layer_for_engine

if TYPE_CHECKING:  # pragma: no cover
    import torch

# hf_model_type -> (config class, modeling module, decoder layer class)
_FAMILIES: dict[str, tuple[str, str, str]] = {
    "llama": ("LlamaConfig", "llama", "LlamaDecoderLayer"),
    "mistral": ("MistralConfig", "mistral", "MistralDecoderLayer"),
    "mixtral": ("MixtralConfig", "mixtral", "MixtralDecoderLayer"),
    "qwen2": ("Qwen2Config", "qwen2", "Qwen2DecoderLayer"),
}


def _family(arch: ModelArch) -> str:
    kind = arch.hf_model_type
    if arch.is_moe and kind in ("llama", "mistral"):
        kind = "mixtral"  # an inline MoE architecture is a Mixtral-style decoder
    if kind not in _FAMILIES:
        raise ValueError(f"model type {arch.hf_model_type!r} is not supported (one of {', '.join(_FAMILIES)})")
    return kind


def hf_config(arch: ModelArch, num_layers: int | None = None, *, attn_impl: str = "sdpa", use_cache: bool = False) -> Any:
    """The transformers config of ``arch``; ``num_layers`` overrides the depth (a truncated probe model).

    ``attn_impl`` is "sdpa" (fused attention; FlashAttention kernels on Hopper in bf16) or "eager" (scores
    materialised). ``use_cache`` is False for training so no KV cache is built. A model given by its config.json
    is built from that config, whatever its family.
    """
    if arch.hf_config is not None:
        return config_from_dict(arch.hf_config, num_layers, attn_impl=attn_impl, use_cache=use_cache)
    import transformers

    kind = _family(arch)
    cls = getattr(transformers, _FAMILIES[kind][0])
    kw: dict[str, Any] = dict(
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=num_layers or arch.num_hidden_layers,
        num_attention_heads=arch.num_attention_heads,
        num_key_value_heads=arch.num_key_value_heads,
        vocab_size=arch.vocab_size,
        max_position_embeddings=arch.max_position_embeddings,
        tie_word_embeddings=arch.tie_word_embeddings,
        use_cache=use_cache,
        attention_dropout=0.0,
    )
    if arch.head_dim:
        kw["head_dim"] = arch.head_dim
    if kind == "llama":
        kw["attention_bias"] = arch.attention_bias
    if kind == "mixtral":
        kw["num_local_experts"] = arch.num_local_experts
        kw["num_experts_per_tok"] = arch.num_experts_per_tok
    if kind in ("mistral", "mixtral"):
        kw["sliding_window"] = None  # full causal attention, as the published 7B/8x7B runs at <= 4k tokens
    cfg = cls(**kw)
    cfg._attn_implementation = attn_impl
    return cfg


def config_dict(arch: ModelArch) -> dict[str, Any]:
    """The config.json of ``arch`` as a plain dict with ``model_type``: its own, or the Llama-family one."""
    if arch.hf_config is not None:
        return dict(arch.hf_config)
    cfg = hf_config(arch).to_dict()
    return {k: v for k, v in cfg.items() if not k.startswith("_") and k not in ("architectures", "dtype", "torch_dtype")}


def attention_for(cfg: Any, want: str) -> str:
    """``want`` ("sdpa" or "eager"), or "eager" where the family has no SDPA path (Gemma-2's soft-capping): what
    transformers runs for it, so the trace and the measurement see the same kernels."""
    import transformers

    if want != "sdpa":
        return want
    arch = (getattr(cfg, "architectures", None) or [None])[0]
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    cls = getattr(transformers, arch or MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(cfg.model_type, ""), None)
    return "sdpa" if cls is None or getattr(cls, "_supports_sdpa", True) else "eager"


# lists of layer numbers (not one entry per layer, whatever their length): Qwen-MoE's dense layers, Bamba's and LFM2's
# attention layers, Llama-4's MoE layers (a 4-layer model's [0, 1, 2, 3] read as one entry per layer made its 8-layer cut
# half dense: the trace put four dense MLPs on top of its experts), Inkling's sliding layers
_LAYER_NUMBERS = ("mlp_only_layers", "attn_layer_indices", "full_attn_idxs", "moe_layers", "local_layer_ids")
# list-valued config keys that are not one entry per layer, whatever their length
_NOT_PER_LAYER = frozenset({"architectures", "eos_token_id", "bos_token_id", "pad_token_id"})


# strings of one character per layer: Nemotron-H's (M for Mamba, * for attention, - for an MLP)
_PATTERN_STRINGS = ("hybrid_override_pattern",)


def _per_layer_keys(cfg: dict[str, Any], layers: int) -> list[str]:
    """The keys of ``cfg`` holding one entry per layer: ``layer_types`` and its kin (``mlp_layer_types``,
    ``indexer_types``, ``num_attention_heads_per_layer``...), whatever the family calls them, and the layer patterns
    written as strings."""
    lists = [k for k, v in cfg.items() if isinstance(v, list) and k not in _NOT_PER_LAYER and k not in _LAYER_NUMBERS
             and (k == "layer_types" and v or len(v) == layers and layers > 1)]
    return lists + [k for k in _PATTERN_STRINGS if isinstance(cfg.get(k), str) and len(cfg[k]) == layers]


def _cut_per_layer(cfg: dict[str, Any], index: list[int]) -> None:
    """Cut ``cfg``'s per-layer entries in place to the model's layers ``index`` (a cut's layer j is layer index[j]):
    lists of one entry per layer, ``per_layer_config`` (Gemma-4: {"05": {...}}) and lists of layer numbers
    (``_LAYER_NUMBERS``). transformers' config classes check each list's length against the cut's layer count."""
    layers = int(cfg["num_hidden_layers"])
    for k in _per_layer_keys(cfg, layers):
        cut = [cfg[k][i % len(cfg[k])] for i in index]
        cfg[k] = "".join(cut) if isinstance(cfg[k], str) else cut
    if isinstance(cfg.get("per_layer_config"), dict):
        by_layer = {int(k): v for k, v in cfg["per_layer_config"].items()}
        cfg["per_layer_config"] = {str(j): by_layer[i] for j, i in enumerate(index) if i in by_layer}
    for k in _LAYER_NUMBERS:
        if isinstance(cfg.get(k), list) and cfg[k]:
            chosen = set(cfg[k])
            # a cut longer than the model repeats its layers, as the per-layer lists above do
            cfg[k] = [j for j, i in enumerate(index) if i % layers in chosen]


def layer_signatures(config: dict[str, Any]) -> list[tuple]:
    """What sets each layer of the model apart, as transformers reads the config (it derives ``layer_types`` where a
    config.json predates them): every per-layer entry, a ``per_layer_config`` override, DeepSeek's dense prefix
    (``first_k_dense_replace``), membership of each list of layer numbers. Layers of equal signature run the same code."""
    full = config_from_dict(config).to_dict()
    layers = int(config["num_hidden_layers"])
    keys = _per_layer_keys(full, layers)
    overrides = {int(k): v for k, v in (full.get("per_layer_config") or {}).items()} if isinstance(
        full.get("per_layer_config"), dict) else {}
    numbered = [set(full[k]) if isinstance(full.get(k), list) else set() for k in _LAYER_NUMBERS]
    prefix = int(config.get("first_k_dense_replace") or 0)
    return [tuple(str(full[k][i % len(full[k])]) for k in keys) + (str(overrides.get(i, "")), i < prefix)
            + tuple(i in n for n in numbered) for i in range(layers)]


def first_of_each_kind(sig: list[tuple]) -> list[int]:
    """The model's first layer of each kind (``sig``: its ``layer_signatures``), in order: the smallest cut that
    transformers builds for every family (OLMo-Hybrid's config class refuses a model without a linear-attention layer
    and one without an attention layer) and that holds every projection name the model has."""
    return sorted({s: i for i, s in reversed(list(enumerate(sig)))}.values())


def config_from_dict(config: dict[str, Any], num_layers: int | None = None, *, attn_impl: str = "sdpa",
                     use_cache: bool = False, layer_index: list[int] | None = None) -> Any:
    """A transformers config from a config.json dict, cut to ``num_layers``: its first layers, or the model's layers
    ``layer_index`` (one of each kind of a long pattern), their per-layer entries kept."""
    import transformers

    cfg = dict(config)
    kind = cfg.pop("model_type")
    layers = num_layers or int(cfg["num_hidden_layers"])
    if "layer_types" not in cfg and (num_layers is not None or layer_index is not None):
        # a config.json that predates layer_types (Gemma-3's sliding_window_pattern): the whole model's, as transformers
        # derives them, cut with the layers; a cut's own derivation restarts the pattern (a 3-layer cut of Gemma-3:
        # three sliding layers, its full-attention layer never traced)
        whole = config_from_dict(config, attn_impl=attn_impl)
        derived = getattr(whole, "layer_types", None)
        takes = "layer_types" in inspect.signature(type(whole).__init__).parameters  # (Falcon-H1's is a derived property)
        if takes and isinstance(derived, list) and len(derived) == int(cfg["num_hidden_layers"]):
            cfg["layer_types"] = list(derived)
    _cut_per_layer(cfg, list(layer_index) if layer_index is not None else list(range(layers)))
    cfg["num_hidden_layers"] = layers
    cfg["use_cache"] = use_cache
    for k in ("quantization_config", "dtype", "torch_dtype"):
        cfg.pop(k, None)  # a checkpoint's storage format says nothing of speed or memory
    vocab = cfg.get("vocab_size")
    for k in ("pad_token_id", "bos_token_id", "eos_token_id"):  # the tokenizer's ids: a family's defaults may lie outside
        ids = cfg.get(k)  # a shortened vocabulary; ids inside it stay (CWM's and ModernBERT's classes require them)
        inside = isinstance(vocab, int) and all(isinstance(i, int) and 0 <= i < vocab for i in (ids if isinstance(ids, list) else [ids]))
        cfg[k] = ids if inside and ids not in (None, []) else None
    out = transformers.AutoConfig.for_model(kind, **cfg)
    out._attn_implementation = attention_for(out, attn_impl)
    return out


@contextlib.contextmanager
def _default_dtype(dtype: "torch.dtype") -> Iterator[None]:
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def build_model(
    arch: ModelArch,
    *,
    device: "str | torch.device",
    dtype: "torch.dtype",
    num_layers: int | None = None,
    attn_impl: str = "sdpa",
    quantization: str = "none",
    use_cache: bool = False,
    zero3_config: dict | None = None,
) -> Any:
    """A random-init ``*ForCausalLM`` on ``device`` in ``dtype``; no hub access.

    ``quantization`` "nf4" / "int8" builds the decoder layers one at a time and replaces their linears by
    bitsandbytes layers at once (peak = quantized model + one 16-bit layer). ``zero3_config`` (a DeepSpeed
    config dict) builds under ``deepspeed.zero.Init`` so parameters are partitioned as they are created.
    """
    import torch
    import transformers

    cfg = hf_config(arch, num_layers, attn_impl=attn_impl, use_cache=use_cache)
    if zero3_config is not None:
        import deepspeed

        # deepspeed.comm must see the torch process group, else zero.Init checks the batch product
        # against a world size of 1 and rejects any multi-GPU config
        deepspeed.init_distributed(dist_backend="nccl" if torch.cuda.is_available() else "gloo")
        # random weights only: an embedding's padding row, zeroed in place by transformers' init, is an empty shard
        # under zero.Init (Hunyuan's pad id 0, GLM's 151,329, LFM2: IndexError); the row changes no speed nor memory
        cfg.pad_token_id = None
        def partitioned() -> Any:
            with deepspeed.zero.Init(config_dict_or_path=zero3_config, dtype=dtype):
                return transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=cfg._attn_implementation)

        try:
            return partitioned()
        except RuntimeError as e:
            if "must match the size" not in str(e):
                raise
        # a family's init copies a tensor of the parameter's size into it (Qwen3.5-MoE's A_log), which an empty shard
        # cannot take (one H200, 2026-11-29: "size of tensor a (0) must match ... (32)"); as from_pretrained, which
        # never inits what it loads: built uninitialised, then each rank's partition drawn at random
        from transformers.initialization import no_init_weights

        with no_init_weights():
            model = partitioned()
        with torch.no_grad():
            for p in model.parameters():
                p.ds_tensor.normal_(0.0, 0.02)
        return model
    if quantization == "none":
        with torch.device(device):
            return transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=cfg._attn_implementation)

    # Quantized base: a one-layer shell for embeddings / norm / rotary / lm_head, then the real layers.
    # "engine:fp8" / "engine:int8" / "engine:int4": engines' kernels (probes.engine_linears); plain "int8" and
    # "nf4" are bitsandbytes, as training's quantized bases
    engine = quantization.startswith("engine:")
    if engine and quantization[7:] not in ENGINE_FORMATS:
        raise ValueError(f"unknown engine format {quantization[7:]!r} (one of {', '.join(ENGINE_FORMATS)})")
    if not engine:
        _bnb()  # fail early, before allocating anything, when bitsandbytes is missing
    # the shell holds a layer of every kind the model has: a model builds its per-kind masks and rotary tables from
    # the layer kinds of its config at init (OLMo-3 cut to its first, sliding, layer: KeyError 'full_attention')
    shell_cfg = hf_config(arch, _layers_of_every_kind(cfg), attn_impl=attn_impl, use_cache=use_cache)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(shell_cfg, dtype=dtype, attn_implementation=shell_cfg._attn_implementation)
    holder, layers_attr = _layer_list(model)
    layer_cls = type(getattr(holder, layers_attr)[0])  # the family's decoder layer, whatever the family
    # the kernels the model's init chose (attention, routed experts' grouped GEMM), as from_pretrained chooses them
    # with a quantization_config: layers built from the bare config would run their experts in an eager loop
    for attr in ("_attn_implementation_internal", "_experts_implementation_internal"):
        if getattr(model.config, attr, None) is not None:
            setattr(cfg, attr, getattr(model.config, attr))
    layers = torch.nn.ModuleList()
    setattr(holder, layers_attr, layers)  # drop the shell's layers before building the real ones
    for i in range(cfg.num_hidden_layers):
        with torch.device(device), _default_dtype(dtype):
            layer = layer_cls(cfg, layer_idx=i)
        if engine:
            quantize_layer_for_engine(layer, quantization[7:])
        else:
            quantize_linears(layer, quantization, device)
        layers.append(layer)
    # The forward loops over ``self.layers[: config.num_hidden_layers]``: give every module the full config.
    cfg.dtype = dtype
    model.config = cfg
    holder.config = cfg
    return model


def _layers_of_every_kind(cfg: Any) -> int:
    """The shortest cut of ``cfg``'s layers that has every kind of layer it lists (``layer_types``), at least one."""
    kinds = list(getattr(cfg, "layer_types", None) or [])
    return max((kinds.index(k) + 1 for k in set(kinds)), default=1)


def _layer_list(model: Any) -> tuple[Any, str]:
    """(the module holding a causal LM's decoder layers, the attribute of their ModuleList): Llama's ``model.layers``,
    Falcon's and GPT-2's ``transformer.h``; a PEFT wrapper is looked through."""
    import torch

    from probes.trace import in_block

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    for name, mod in base.named_modules():
        for attr, child in mod.named_children():
            path = f"{name}.{attr}" if name else attr
            if isinstance(child, torch.nn.ModuleList) and len(child) and in_block(f"{path}.0"):
                return mod, attr
    raise ValueError(f"{type(base).__name__}: no numbered decoder blocks (model.layers, transformer.h) found")


def _bnb() -> Any:
    try:
        import bitsandbytes  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError(
            "quantization nf4/int8 needs bitsandbytes (pip install 'bitsandbytes>=0.45'); it is not installed"
        ) from e
    import bitsandbytes

    return bitsandbytes


def quantize_linears(module: Any, quantization: str, device: "str | torch.device") -> int:
    """Replace every ``nn.Linear`` under ``module`` by a frozen bitsandbytes layer holding its weights (a router that
    post-processes its product excepted).

    nf4: ``Linear4bit`` (NF4, double quantization, bf16 compute) = the QLoRA base. int8: ``Linear8bitLt``
    with ``has_fp16_weights=False`` (LLM.int8(), threshold 6.0 as transformers' default). Returns the count.
    """
    import torch

    if quantization not in ("nf4", "int8"):
        return 0
    from probes.trace import calls_linear_forward

    bnb = _bnb()
    device = torch.device(device)
    count = 0
    for name, child in list(module.named_children()):
        # a subclass that works on nn.Linear's product keeps its forward (Llama-4's and PhiMoE's routers return a tuple:
        # a bitsandbytes layer in their place returned one tensor, and Llama-4's QLoRA stopped at "too many values to
        # unpack", grid h100-blind-recommend-groups, 2026-12-07), as the trace keeps it (``probes.trace._as_bitsandbytes``)
        if isinstance(child, torch.nn.Linear) and not isinstance(child, (bnb.nn.Linear4bit, bnb.nn.Linear8bitLt)) \
                and not calls_linear_forward(child):
            setattr(module, name, _to_bnb(bnb, child, quantization, device))
            count += 1
        else:
            count += quantize_linears(child, quantization, device)
    return count


def _to_bnb(bnb: Any, lin: Any, quantization: str, device: Any) -> Any:
    import torch

    has_bias = lin.bias is not None
    w = lin.weight.data.to(torch.bfloat16)
    if quantization == "nf4":
        # device="meta": the constructor's own fp32 weight would be a wasted allocation + init
        q = bnb.nn.Linear4bit(
            lin.in_features, lin.out_features, bias=has_bias, compute_dtype=torch.bfloat16,
            compress_statistics=True, quant_type="nf4", device="meta",
        )
        q.weight = bnb.nn.Params4bit(w, requires_grad=False, compress_statistics=True, quant_type="nf4", module=q)
        q.weight = q.weight.to(device)  # quantizes on the way (Params4bit.to)
    else:
        q = bnb.nn.Linear8bitLt(
            lin.in_features, lin.out_features, bias=has_bias, has_fp16_weights=False, threshold=6.0, device="meta"
        )
        p = bnb.nn.Int8Params(w, requires_grad=False, has_fp16_weights=False)
        # Int8Params.to only quantizes from host memory; _quantize does it from anywhere (bnb >= 0.45)
        q.weight = p._quantize(device) if hasattr(p, "_quantize") else p.cpu().to(device)
    if has_bias:
        q.bias = torch.nn.Parameter(lin.bias.data.to(device=device, dtype=torch.bfloat16), requires_grad=False)
    return q


def decoder_layers(model: Any) -> Any:
    """The ``nn.ModuleList`` of decoder layers of a (possibly PEFT-wrapped) causal LM."""
    holder, attr = _layer_list(model)
    return getattr(holder, attr)


def enable_recompute(model: Any) -> None:
    """Non-reentrant activation checkpointing of every decoder layer (reentrant breaks with frozen inputs)."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2x renamed it
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def apply_method(model: Any, case: TrainCase) -> Any:
    """Make ``model`` trainable the way ``case.method`` / ``case.quantization`` say; returns the model to train.

    full: every parameter trains, except quantized linears (the published "Q" pre-training rows train only
    embeddings, norms and lm_head). lora / qlora: a frozen base with PEFT LoRA adapters
    (r = lora_rank, alpha = 2r, dropout 0) on ``case.lora_targets``.
    """
    quant = case.quantization
    if quant in ("nf4", "int8"):
        # No-op for layers build_model already quantized; makes apply_method correct on any model.
        device = next(p.device for p in model.parameters())
        for layer in decoder_layers(model):
            quantize_linears(layer, quant, device)
    if case.recompute:
        enable_recompute(model)
    if case.method == "full":
        for p in model.parameters():
            # bnb weights (uint8 / int8 storage) cannot carry gradients: they stay frozen
            p.requires_grad_(p.is_floating_point())
        return model

    from peft import LoraConfig, get_peft_model

    for p in model.parameters():
        p.requires_grad_(False)
    if case.recompute:
        model.enable_input_require_grads()  # checkpointed blocks need an input that requires grad
    lcfg = LoraConfig(
        r=case.lora_rank,
        lora_alpha=2 * case.lora_rank,
        lora_dropout=0.0,
        target_modules=case.lora_targets if isinstance(case.lora_targets, str) else list(case.lora_targets),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lcfg)


def trainable_parameters(model: Any) -> list:
    return [p for p in model.parameters() if p.requires_grad]


def count_parameters(model: Any) -> tuple[int, int]:
    """(total, trainable) parameter counts; bnb 4-bit tensors count their packed elements twice (2 per byte)."""
    total = trainable = 0
    for p in model.parameters():
        n = p.numel() * (2 if p.dtype == __import__("torch").uint8 else 1)
        total += n
        trainable += n if p.requires_grad else 0
    return total, trainable
