"""Load and resolve the bundled catalogs: GPUs, platforms (``<gpu>x<count>[-pcie|-nvlink]``), models."""

from __future__ import annotations

import difflib
import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from knowledge.config_reads import kept
from knowledge.errors import AdvisorError, unknown
from knowledge.store import InputFileError, read_bounded_text
from knowledge.schema import DECODER_MODEL_TYPES, GPUSpec, HostSpec, ModelArch, PlatformSpec

DATA = Path(__file__).parent / "data"
# ASCII only: ``\d`` would also take full-width and other Unicode digits ("h100x１")
_PLATFORM_RE = re.compile(r"^(?P<gpu>[a-z0-9][a-z0-9.\-]*?)x(?P<count>[0-9]{1,6})(?:-(?P<variant>pcie|nvlink))?$", re.ASCII)
MAX_CONFIG_BYTES = 4 << 20  # a Hugging Face config.json is a few kB

# Defaults for a server the catalog does not describe. Assumption, not a measurement: typical cloud
# shapes give 8 to 16 vCPUs and at least twice the GPUs' memory in RAM per GPU.
DEFAULT_CORES_PER_GPU = 8
DEFAULT_RAM_PER_GPU_MEMORY = 2.0
# The most GPUs one server the catalog does not list may hold: NVIDIA's HGX boards (A100, H100, H200, B200) and the
# usual PCIe GPU servers carry 8. A larger box is listed (v100x16, the DGX-2) or described in a platform file; more
# GPUs than that are servers joined by a network (--nodes), not one NVSwitch domain with the rule's 4 TiB host.
GPUS_PER_SERVER_MAX = 8


class MalformedInput(AdvisorError):
    """A user's file that is not what it must be: not JSON, not an object, a field of the wrong JSON type (a platform
    file, a model's config.json). The README's exit 2 for a malformed file, where an unsupported value exits 1."""

    exit_code = 2


# pydantic error types that mean the JSON type was wrong (``"4"``, ``4.5`` or ``true`` for an integer, NaN), not the value
_MALFORMED_SUFFIXES = ("_type", "_parsing")


def is_malformed(err: dict[str, Any]) -> bool:
    """Whether one pydantic error says the input had the wrong JSON type (exit 2) rather than an unsupported value:
    a platform file's, a model config's and a contract case's alike."""
    return err["type"].endswith(_MALFORMED_SUFFIXES) or err["type"] == "finite_number" or _wrong_literal_type(err)


def _wrong_literal_type(err: dict[str, Any]) -> bool:
    """A choice field given a value of another JSON type (``"method": 5``, ``"interconnect": 5``, ``"zero_stage": "2"``)
    is malformed, not unsupported."""
    if err["type"] != "literal_error":
        return False
    expected = err.get("ctx", {}).get("expected", "")
    value = err.get("input")
    wants_str = "'" in expected
    return (isinstance(value, str) != wants_str) or isinstance(value, (bool, list, dict)) or value is None


def validation_text(err: dict[str, Any]) -> str:
    """``field: message (got value)`` for one pydantic error, without pydantic's ``Value error, `` prefix; a whole-object
    check has no field and its input is the whole object: just its message (``num_attention_heads=32 is not …``)."""
    loc = ".".join(str(x) for x in err["loc"])
    msg = err["msg"].replace("\n", " ").removeprefix("Value error, ")
    return f"{loc}: {msg} (got {_short(err.get('input'))})" if loc else msg


def closest_unknown(kind: str, value: str, valid: list[str], listed: list[str] | None = None) -> AdvisorError:
    """``unknown`` with the names that hold ``value`` whole as well as the look-alikes: ``8b`` is llama3-8b's size, which
    no edit distance ranks above ``7b``. Nothing close: ``listed`` (default ``valid``) as examples."""
    given = str(value).strip().lower()
    names = sorted(set(valid))
    holding = [n for n in names if given and given != n and given in re.split(r"[-_/]", n)]
    alike = difflib.get_close_matches(given, names, n=3, cutoff=0.5)
    close = list(dict.fromkeys(holding[:3] + alike))[:4]
    if not close:
        return unknown(kind, value, listed or names)
    return AdvisorError(f"unknown {kind} {value!r}; closest: {', '.join(close)}")


def _load_dir(sub: str, cls):
    out = []
    for path in sorted((DATA / sub).glob("*.json")):
        try:
            out.append(cls.model_validate_json(path.read_text()))
        except ValidationError as e:  # a broken bundled file is a bug in the package: fail loudly
            raise RuntimeError(f"invalid catalog file {path}: {e}") from e
    return out


@lru_cache(maxsize=1)
def gpus() -> dict[str, GPUSpec]:
    """Every catalog GPU by id and by alias (lower case)."""
    table: dict[str, GPUSpec] = {}
    for g in _load_dir("gpus", GPUSpec):
        for key in [g.id, *g.aliases]:
            table[key.lower()] = g
    return table


@lru_cache(maxsize=1)
def models() -> dict[str, ModelArch]:
    table: dict[str, ModelArch] = {}
    for m in _load_dir("models", ModelArch):
        for key in [m.name, *m.aliases]:
            table[key.lower()] = m
    return table


@lru_cache(maxsize=1)
def named_platforms() -> dict[str, dict[str, Any]]:
    path = DATA / "platforms.json"
    if not path.exists():
        return {}
    return {p["id"]: p for p in json.loads(path.read_text())["platforms"]}


@lru_cache(maxsize=1)
def hub_ids() -> dict[str, ModelArch]:
    """Catalog models by the Hugging Face repo their config came from (``qwen/qwen2.5-7b``), lower case."""
    out: dict[str, ModelArch] = {}
    for m in models().values():
        first = m.source.split()[0] if m.source else ""
        if "/" in first:
            out[first.lower()] = m
    return out


def resolve_gpu(name: str) -> GPUSpec:
    g = gpus().get(name.lower())
    if g is None:
        raise closest_unknown("GPU", name, list(gpus()))
    return g


def match_gpu(device_name: str) -> GPUSpec | None:
    """Map a CUDA device name ('NVIDIA H100 80GB HBM3') to a catalog GPU, or None."""
    s = device_name.lower().replace("nvidia", "").replace("geforce", "").replace(" ", "")
    best = None
    for key, g in gpus().items():
        k = key.replace("-", "")
        if k and k in s and (best is None or len(k) > len(best[0])):
            best = (k, g)
    if best and best[1].id == "h100" and "pcie" in s:
        return gpus().get("h100-pcie", best[1])
    return best[1] if best else None


def _interconnect(gpu: GPUSpec, count: int, variant: str | None, hardware: str) -> str:
    if count == 1:
        return "single"
    if variant == "nvlink":
        if gpu.nvlink_kind == "none":
            raise AdvisorError(f"hardware {hardware!r}: {gpu.id} has no NVLink; use {gpu.id}x{count} or -pcie")
        return "nvswitch" if gpu.nvlink_kind == "nvswitch" else "nvlink-pairs"
    if variant == "pcie" or gpu.nvlink_kind == "none":
        return "pcie" if gpu.p2p_over_pcie else "pcie-no-p2p"
    return "nvswitch" if gpu.nvlink_kind == "nvswitch" else "nvlink-pairs"


def link_gbs(gpu: GPUSpec, interconnect: str) -> float:
    """Per-GPU one-direction bandwidth of the slowest hop a ring collective crosses, GB/s (datasheet)."""
    if interconnect == "nvswitch":
        return gpu.nvlink_gbs
    if interconnect == "pcie-no-p2p":
        return gpu.pcie_gbs / 2  # each hop is staged through host memory: two PCIe crossings
    return gpu.pcie_gbs  # pcie, and NVLink bridge pairs, whose ring still crosses PCIe hops


HOST_KEYS = ("sockets", "host_pcie_gen", "gpus_per_uplink", "dram_gbs", "dram_measured", "topology_source", "swap_gib", "swap_source")


_BY_RULE = "default: "  # the source of a host given by rule, not read from anywhere


def _default_host(gpu: GPUSpec, count: int) -> HostSpec:
    ram = DEFAULT_RAM_PER_GPU_MEMORY * count * gpu.memory_gib
    return HostSpec(
        cpu_cores=DEFAULT_CORES_PER_GPU * count,
        host_ram_gib=float(2 ** math.ceil(math.log2(max(ram, 64)))),
        source=f"{_BY_RULE}{DEFAULT_CORES_PER_GPU} cores per GPU, RAM ≥ {DEFAULT_RAM_PER_GPU_MEMORY:g}× GPU memory",
    )


def host_by_rule(host: HostSpec) -> bool:
    """Is ``host`` the rule's (a server the catalog does not list: cores and RAM per GPU), not a listed or given one?"""
    return host.source.startswith(_BY_RULE)


def is_platform_file(hardware: str) -> bool:
    """Does ``hardware`` name a platform file or an inline platform object rather than a catalog id?"""
    text = hardware.strip()
    return text.startswith("{") or text.endswith(".json") or "/" in text


def resolve_platform(hardware: str, gpus_used: int | None = None, nodes: int = 1) -> PlatformSpec:
    """A platform id (``rtx4090x8``, ``a800x8``, ``rtx3090x8-pcie``, ``l40sx4``), a platform file
    (``box.json``) or an inline platform object (``{"gpu": "rtx4090", "count": 2, …}``).

    ``gpus_used`` may reach ``nodes`` x the platform's GPUs (identical servers joined by a network)."""
    if not isinstance(hardware, str):
        raise AdvisorError(f"hardware must be a platform id or a platform file path, got {hardware!r}")
    if isinstance(gpus_used, bool) or (gpus_used is not None and gpus_used < 1):
        raise AdvisorError(f"gpus={gpus_used!r} must be a positive integer")
    if is_platform_file(hardware):
        from knowledge.platform_file import platform_from_spec

        platform = platform_from_spec(hardware)
        _check_gpus(gpus_used, platform.count, nodes, repr(platform.id))
        return platform
    hardware = hardware.strip(" \t")  # ' h100x8 ' pasted with its spaces is still h100x8 (a newline is not a space)
    if not hardware.isascii() or not hardware.isprintable() or len(hardware) > 200:
        shown = ascii(hardware[:80]) + ("…" if len(hardware) > 80 else "")
        raise AdvisorError(f"hardware {shown} is not a platform id: ASCII letters and digits such as h100x8, a800x8, rtx3090x8-pcie")
    hw = hardware.strip().lower().replace("_", "-")
    hw = {"rtx3090x8-nvlink": "rtx3090x8"}.get(hw, hw)
    if hw in gpus():  # checked first: 'rtx4090' would otherwise parse as GPU 'rt' x 4090
        raise AdvisorError(f"hardware {hardware!r} lacks a GPU count; e.g. {gpus()[hw].id}x1 or {gpus()[hw].id}x8")
    flipped = re.fullmatch(r"(\d+)\s*[x×*]\s*([a-z][a-z0-9-]*)", hw)  # '8xrtx4090': the count written first
    if flipped and flipped[2] in gpus():
        raise AdvisorError(f"hardware {hardware!r}: the GPU comes first; did you mean {gpus()[flipped[2]].id}x{flipped[1]}?")
    m = _PLATFORM_RE.match(hw)
    if not m:
        examples = [f"{g}x8" for g in sorted({g.id for g in gpus().values()})]
        raise closest_unknown("hardware", hardware, _platform_ids(hw), list(named_platforms()) + examples)
    gpu_name, count, variant = m["gpu"], int(m["count"]), m["variant"]
    if gpu_name not in gpus():
        raise closest_unknown("GPU", gpu_name, list(gpus()))
    if count < 1 or count > 1024:
        raise AdvisorError(f"hardware {hardware!r}: GPU count {count} is out of range 1..1024")
    gpu = gpus()[gpu_name]
    if variant == "pcie" and f"{gpu.id}-pcie" in gpus():
        # 'h100x8-pcie' is a server of the PCIe card, a chip of its own (fewer SMs, lower clocks and bandwidth): read as
        # SXM5 modules on a PCIe link it was predicted 40% above eight H100 PCIe cards, and no server puts SXM on PCIe
        gpu = gpus()[f"{gpu.id}-pcie"]
    interconnect = _interconnect(gpu, count, variant, hardware)
    named = named_platforms().get(hw)
    if named:
        interconnect = named.get("interconnect", interconnect)
        host = HostSpec(cpu_cores=named["cpu_cores"], host_ram_gib=named["host_ram_gib"], source=named.get("source", ""),
                        cpu_adam_gparams_per_s=named.get("cpu_adam_gparams_per_s"), cpu_adam_threads=named.get("cpu_adam_threads"),
                        **{k: named[k] for k in HOST_KEYS if k in named})
        notes = named.get("notes", "")
    else:
        host = _default_host(gpu, count)
        notes = ""
    _check_gpus(gpus_used, count, nodes, repr(hardware))
    return PlatformSpec(
        id=hw, gpu=gpu, count=count, interconnect=interconnect, link_gbs=link_gbs(gpu, interconnect), host=host, notes=notes
    )


def oversized_server_note(hardware: str, platform: PlatformSpec) -> str | None:
    """A warning for an id that makes one server of more GPUs than any unlisted server holds (``h100x16``): the
    contract parses any count, and the id is modelled as one box (one link domain, a host by rule), which is rarely
    what was meant. None for a listed server (``v100x16``), a platform file, or ``GPUS_PER_SERVER_MAX`` GPUs or fewer."""
    if platform.count <= GPUS_PER_SERVER_MAX or not host_by_rule(platform.host) or is_platform_file(hardware):
        return None
    m = _PLATFORM_RE.match(platform.id)  # the id as resolve_platform normalised it
    name, variant = (m["gpu"], m["variant"]) if m else (platform.gpu.id, None)
    per_node = max(n for n in range(1, GPUS_PER_SERVER_MAX + 1) if platform.count % n == 0)
    split = (f"for {platform.count} GPUs on {platform.count // per_node} servers: --hardware "
             f"{name}x{per_node}{'-' + variant if variant else ''} --nodes {platform.count // per_node}"
             if per_node > 1 else "")
    return (f"no listed server holds {platform.count} {platform.gpu.name}: {hardware} is modelled as one box of "
            f"{platform.count} ({platform.interconnect}, host by rule)" + (f"; {split}" if split else "")
            + " (or describe your server in a platform file)")


def _platform_ids(hw: str) -> list[str]:
    """Ids to suggest for an id that does not parse: the named platforms, and every GPU at the count ``hw`` gives (8
    where it gives none) with each link it may have, so ``a100x8-nvlnk`` is told ``a100x8-nvlink``."""
    given = re.search(r"x([0-9]{1,4})(?:-[a-z0-9]*)?$", hw)
    count = given[1] if given else "8"
    ids = list(named_platforms())
    for g in {g.id: g for g in gpus().values()}.values():
        ids += [f"{g.id}x{count}", f"{g.id}x{count}-pcie"] + ([f"{g.id}x{count}-nvlink"] if g.nvlink_kind != "none" else [])
    return ids


def _check_gpus(gpus_used: int | None, count: int, nodes: int, name: str) -> None:
    if gpus_used is not None and gpus_used > count * nodes:
        where = name if nodes == 1 else f"{nodes} nodes of {name}"
        hint = ""
        if gpus_used % count == 0:  # whole servers: say how to ask for several
            hint = f"; for {gpus_used} GPUs on {gpus_used // count} such servers: --nodes {gpus_used // count}"
        raise AdvisorError(f"gpus={gpus_used} exceeds the {count * nodes} GPUs of {where}{hint}")


def _short(value: Any) -> str:
    text = repr(value)
    text = text[:60] + ("…" if len(text) > 60 else "")
    return text if text.isprintable() else ascii(text)


def with_host(hardware: str, host_ram_gib: float | None = None, cpu_cores: int | None = None) -> str:
    """``hardware`` with its host replaced (``--host-ram-gib``, ``--cpu-cores``), as a hardware string
    every command and case accepts: unchanged when neither is given, else an inline platform object."""
    if host_ram_gib is None and cpu_cores is None:
        return hardware
    obj: dict[str, Any] = {"platform": hardware}
    if host_ram_gib is not None:
        obj["host_ram_gib"] = host_ram_gib
    if cpu_cores is not None:
        obj["cpu_cores"] = cpu_cores
    resolve_platform(json.dumps(obj))  # fail now, naming the bad value
    return json.dumps(obj, sort_keys=True)


_HF_KEYS = (
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "vocab_size", "num_local_experts", "num_experts_per_tok", "head_dim", "tie_word_embeddings",
    "max_position_embeddings",
)


# Other names the families use for the same summary fields (MoE experts, per-expert width)
_HF_ALIASES = {"num_local_experts": ("num_experts", "n_routed_experts"), "intermediate_size": ("moe_intermediate_size",)}
# The context window under the families' own names: learned position tables (GPT-2's and CTRL's n_positions, MPT's
# max_seq_len) index out of range past it, a device-side assert on the GPU (CTRL at 1,024 tokens with its 256
# positions, two H200s, 2026-11-28), so a case beyond it is refused before it runs
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length", "seq_length")


def _transformers_config(cfg: dict[str, Any]) -> Any:
    """transformers' own config object of a config.json dict, or None where its class refuses it (or it is no family)."""
    try:
        import transformers

        return transformers.AutoConfig.for_model(str(cfg["model_type"]), **{k: v for k, v in cfg.items() if k != "model_type"})
    except Exception:  # noqa: BLE001 - a family's config class raises what it likes
        return None


def _summary_from_transformers(cfg: dict[str, Any], missing: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``cfg`` with the summary keys it names otherwise filled in as transformers' config class reads them (GPT-2's
    ``n_embd``, Falcon's ``ffn_hidden_size`` or its default of 4 x hidden), and the family's own names of the summary
    keys ({"num_hidden_layers": "n_layer"}); ``cfg`` itself and no names when the class refuses it."""
    conf = _transformers_config(cfg)
    if conf is None:  # the trace reports what the family's class refuses, in one line
        return cfg, {}
    out = dict(cfg)
    aliases = getattr(type(conf), "attribute_map", {}) or {}
    for k in missing:
        if k != "intermediate_size":  # only under the family's own name (GPT-2's n_layer), never a class default
            if aliases.get(k) in cfg and isinstance(cfg[aliases[k]], int):
                out[k] = cfg[aliases[k]]
            continue
        value = next((getattr(conf, n) for n in ("ffn_hidden_size", "n_inner", "ffn_dim") if isinstance(getattr(conf, n, None), int)), None)
        hidden = out.get("hidden_size")
        if value is None and isinstance(hidden, int):
            value = 4 * hidden  # GPT-2's n_inner=None, Falcon's ffn_hidden_size=None: a 4x MLP
        if value is not None:
            out[k] = value
    return out, {k: v for k, v in aliases.items() if isinstance(v, str)}


def arch_from_hf_config(cfg: dict[str, Any], name: str, hf_config: dict[str, Any] | None = None) -> ModelArch:
    """A ModelArch from a Hugging Face config.json dict: the summary fields, and the config itself for the trace
    (``hf_config``, default ``cfg``: the file as written, where ``cfg`` may carry summary keys read from it)."""
    fields = {k: cfg[k] for k in _HF_KEYS if cfg.get(k) is not None}
    widths = fields.get("intermediate_size")
    if isinstance(widths, list) and widths and all(isinstance(w, int) and not isinstance(w, bool) for w in widths):
        # one MLP width per layer (Gemma-3n's text model): the summary keeps the widest; the trace counts each layer's
        fields["intermediate_size"] = max(widths)
    context = next((cfg[k] for k in _CONTEXT_KEYS if isinstance(cfg.get(k), int) and not isinstance(cfg[k], bool)), None)
    if "max_position_embeddings" not in fields and context:
        fields["max_position_embeddings"] = context
    experts = next((cfg[k] for k in _HF_ALIASES["num_local_experts"] if isinstance(cfg.get(k), int)), None)
    if "num_local_experts" not in fields and experts:
        fields["num_local_experts"] = experts
        if isinstance(cfg.get("moe_intermediate_size"), int):
            fields["intermediate_size"] = cfg["moe_intermediate_size"]  # what each routed expert multiplies
    fields.setdefault("num_key_value_heads", cfg.get("num_attention_heads"))
    latent_head = (cfg.get("qk_nope_head_dim") or 0) + (cfg.get("qk_rope_head_dim") or 0)
    heads, hidden = fields.get("num_attention_heads"), fields.get("hidden_size")
    if "head_dim" not in fields and isinstance(latent_head, int) and latent_head > 0 and isinstance(heads, int) \
            and isinstance(hidden, int) and heads > 0 and hidden % heads:
        # latent attention's query/key head (qk_nope + qk_rope) is not hidden / heads: GLM-4.7-Flash's 2048 over 20
        fields["head_dim"] = latent_head
    if "model_type" in cfg:
        fields["hf_model_type"] = str(cfg["model_type"])
        fields["attention_bias"] = bool(cfg.get("attention_bias", cfg["model_type"] in ("qwen2", "qwen2_moe")))  # q/k/v biases
        fields["hf_config"] = {k: v for k, v in (hf_config or cfg).items() if not k.startswith("_") and k not in ("architectures", "auto_map")}
    if fields.get("num_experts_per_tok") and not fields.get("num_local_experts"):
        fields.pop("num_experts_per_tok")  # a dense model that names a default
    # strict: a boolean is not a layer count, "4096" and 4096.0 are not integers
    return ModelArch.model_validate({"name": name, "source": name, **fields}, strict=True)


def _layer_configs(conf: Any, layers: int) -> list[Any]:
    """Each layer's own config: a heterogeneous one's (Gemma-4's full-attention layers have their own head size,
    ``per_layer_config``), else the model's for every layer."""
    if getattr(conf, "is_heterogeneous", False):
        return [conf.per_layer_config[i] for i in range(layers)]
    return [conf] * layers


def _kv_values_per_token(conf: Any) -> tuple[int, bool]:
    """(values one layer caches per token, whether tensor parallelism splits them by head)."""
    latent = getattr(conf, "kv_lora_rank", None)
    if isinstance(latent, int) and latent > 0:
        return latent + int(getattr(conf, "qk_rope_head_dim", 0) or 0), False
    heads = int(getattr(conf, "num_key_value_heads", None) or getattr(conf, "num_kv_heads", None) or conf.num_attention_heads)
    if getattr(conf, "multi_query", False) and not getattr(conf, "new_decoder_architecture", False):
        heads = 1  # Falcon-7B's and GPT-BigCode's multi-query attention: one K/V head, whatever num_kv_heads says
    head_dim = int(getattr(conf, "head_dim", None) or conf.hidden_size // conf.num_attention_heads)
    return 2 * heads * head_dim, True


def _declared_kv_layers(conf: Any, layers: int) -> list[bool] | None:
    """Which layers keep K and V, as transformers' cache declares them from the config (``get_layer_types_and_kwargs``:
    a ``linear_attention``, ``conv``, ``mlp`` or ``moe`` layer keeps a fixed state or nothing); None when it cannot
    tell (then every layer does)."""
    try:
        from transformers.cache_utils import DYNAMIC_LAYER_TYPE_MAPPING, DynamicLayer, get_layer_types_and_kwargs

        kinds, _ = get_layer_types_and_kwargs(conf.get_text_config(decoder=True))
        keeps = [issubclass(DYNAMIC_LAYER_TYPE_MAPPING[k], DynamicLayer) for k in list(kinds)[:layers]]
        # the list stops before the last num_kv_shared_layers (Gemma-3n): they read an earlier layer's cache
        return keeps + [False] * (layers - len(keeps))
    except Exception:  # noqa: BLE001 - a family's config may declare what the mapping does not know
        return None


# vLLM keeps a recurrent layer's convolution and scan states in the model's dtype (16-bit) unless the model names its
# scan state's dtype, as Nemotron-H (mamba_ssm_cache_dtype, float32 by default) and Qwen3.5 (mamba_ssm_dtype) do; then it
# keeps that dtype, as transformers does (vLLM 0.34.0: model_executor/layers/mamba/mamba_utils.py
# MambaStateDtypeCalculator, model_executor/models/config.py NemotronHForCausalLMConfig and
# Qwen3_5ForConditionalGenerationConfig). transformers keeps a gated delta-net's scan state in fp32 whatever the config,
# and so does SGLang (float32 scan states unless the config or --mamba-ssm-dtype says otherwise, bf16 convolution
# windows: sglang 0.5.23 srt/configs/mamba_utils.py mamba2_state_dtype), whose pool counts transformers' bytes.
SSM_STATE_DTYPE_FIELDS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype")
VLLM_STATE_VALUE_BYTES = 2.0


def _names_ssm_state_dtype(conf: Any) -> bool:
    """Does the config name its scan state's dtype (``SSM_STATE_DTYPE_FIELDS``)? vLLM then keeps transformers' bytes."""
    text = conf.get_text_config(decoder=True) if hasattr(conf, "get_text_config") else conf
    return any(getattr(text, f, None) for f in SSM_STATE_DTYPE_FIELDS)


def kv_groups(cfg: dict[str, Any], traced: list[tuple[float, float, float]] | None = None) -> list[dict[str, Any]] | None:
    """The KV cache's layout as transformers reads the config: ``layer_types`` (which layers slide, and over what
    window), multi-head latent attention (``kv_lora_rank``: engines cache the compressed vector and the RoPE key,
    not K and V per head), layers of their own head size (``per_layer_config``). Which layers cache per token and the
    fixed state each keeps per sequence (a hybrid's Mamba, delta-net, convolution layers) come from ``traced``, the
    model's own cache (``probes.cache_trace.traced_cache``: bytes per token, bytes and values per sequence, per layer),
    else from the layer types transformers' cache declares. A state is kept as transformers holds it (``state_bytes``)
    and as vLLM does (``vllm_state_bytes``, ``SSM_STATE_DTYPE_FIELDS``). None when transformers cannot read the
    config (then every layer caches every KV head)."""
    conf = _transformers_config(cfg)
    if conf is None:  # an unknown family: the plain count stands
        return None
    layers = int(cfg["num_hidden_layers"])
    types = list(getattr(conf, "layer_types", None) or [])[:layers]
    if traced is not None and len(traced) == layers:
        named = _names_ssm_state_dtype(conf)
        keeps = [t[0] > 0 for t in traced]
        states = [(float(t[1]), float(t[1]) if named else VLLM_STATE_VALUE_BYTES * t[2]) for t in traced]
    else:
        keeps, states = _declared_kv_layers(conf, layers) or [True] * layers, [(0.0, 0.0)] * layers
    groups: dict[tuple, int] = {}
    for i, layer in enumerate(_layer_configs(conf, layers)):
        values, split = _kv_values_per_token(layer) if keeps[i] else (0, True)
        window = getattr(layer, "sliding_window", None)
        # without layer_types a window applies to every layer (transformers' Mistral, Phi-3, StarCoder2 attention)
        sliding = values and isinstance(window, int) and window > 0 and (not types or "sliding" in str(types[i]))
        key = (window if sliding else None, values, split, round(states[i][0], 1), round(states[i][1], 1))
        groups[key] = groups.get(key, 0) + 1
    if not any(v or st for _, v, _, st, _ in groups):
        return None  # no layer caches anything that could be read (Bamba's defaults: every layer Mamba, not run here)
    return [{"layers": n, "window": w, "values_per_token": v, "split_by_tp": sp,
             **({"state_bytes": st, "vllm_state_bytes": est} if st else {})}
            for (w, v, sp, st, est), n in sorted(groups.items(), key=lambda kv: kv[0][0] is not None)]


def language_model_config(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The language model of a multimodal checkpoint's config.json (Gemma-3 and -4, Qwen3.5, Llama-4: its
    ``text_config``) as a config.json of its own, complete as transformers reads it (a hub file keeps only what differs
    from the text config class's defaults: Gemma-3-4B's names no head counts), the wrapper's ``tie_word_embeddings``
    where the text config has none; None when ``cfg`` has no text config that transformers builds as a causal LM."""
    if not isinstance(cfg.get("text_config"), dict):
        return None
    conf = _transformers_config(cfg)
    inner = getattr(conf, "text_config", None)
    if inner is None or not causal_lm_type(getattr(inner, "model_type", None)):
        return None
    out = {k: v for k, v in inner.to_dict().items() if not k.startswith("_") and k not in ("architectures", "transformers_version")}
    if "tie_word_embeddings" not in cfg["text_config"] and isinstance(cfg.get("tie_word_embeddings"), bool):
        out["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    return out


# Causal LMs of transformers outside our summary's families (traced, never hand-counted): known here so that their
# config.json needs no import of transformers (6 s on two cores); tests check each against transformers' own mapping
OTHER_CAUSAL_LM_TYPES = frozenset({"gpt_neox", "gpt2", "gptj", "gpt_bigcode", "falcon", "bloom", "opt", "phi", "mpt"})


def causal_lm_type(kind: Any) -> bool:
    """Does transformers build a causal LM for this model_type? (Our summary table, then the pinned transformers'
    table: no import.)"""
    if not isinstance(kind, str):
        return False
    if kind in DECODER_MODEL_TYPES or kind in OTHER_CAUSAL_LM_TYPES:
        return True
    from knowledge.causal_lm_types import lm_model_types

    causal, masked = lm_model_types()
    # an encoder's causal head (BERT's BertLMHeadModel, RoBERTa's, BART's) is its decoder mode, not a causal LM
    return kind in causal and kind not in masked


def resolve_model(model: str | dict[str, Any]) -> ModelArch:
    """A catalog name or alias, an inline architecture dict, or a path to a HF ``config.json``."""
    if isinstance(model, dict):
        try:
            name = model.get("name", "inline")
            if not isinstance(name, str):
                raise AdvisorError(f"inline model: 'name' must be a string, got {name!r}")
            fields = {k: v for k, v in model.items() if k != "name"}
            # strict: a boolean is not a layer count, "4096" and 4096.0 are not integers
            return ModelArch.model_validate({"name": name, **fields}, strict=True)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "model"
            raise AdvisorError(f"inline model: {loc!r}: {err['msg'].removeprefix('Value error, ')} (got {_short(err.get('input'))})".replace("\n", " ")) from None
        except TypeError as e:
            raise AdvisorError(f"inline model: {e}") from None
    if not isinstance(model, str):
        raise AdvisorError(f"model must be a name, an architecture object or a config.json path, got {model!r}")
    if not model.strip():  # Path('') is the working folder: its config.json was read, and the error named that file
        raise AdvisorError("model '' names no model: a catalog name (7b, llama3-8b, …), a hub id or a config.json path")
    found = models().get(model.lower())
    if found:
        return found
    path = Path(model)
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError):
        is_dir = False
    if path.suffix == ".json" or is_dir:
        cfg_path = path / "config.json" if is_dir else path
        try:
            cfg = json.loads(read_bounded_text(cfg_path, MAX_CONFIG_BYTES, "model config"))
        except InputFileError as e:
            raise AdvisorError(str(e)) from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise MalformedInput(f"model config {str(cfg_path)!r} is not valid JSON: {str(e).splitlines()[0]}") from None
        except (OSError, ValueError) as e:  # a directory, no permission, a NUL byte, a name too long
            raise AdvisorError(f"model config {str(cfg_path)!r} cannot be read: {str(e).splitlines()[0]}") from None
        if not isinstance(cfg, dict):
            raise MalformedInput(f"model config {str(cfg_path)!r} is not a JSON object, got {type(cfg).__name__}")
        # a key written as null is not given either: GPT-Neo's "intermediate_size": null means a 4x MLP
        missing = [k for k in _HF_KEYS[:4] + ("vocab_size",) if cfg.get(k) is None]
        text = kept("language_model", cfg, lambda: language_model_config(cfg)) if missing else None
        if text is not None:  # a multimodal checkpoint: its language model is what trains and serves text
            cfg, cfg_path, missing = text, Path(f"{cfg_path} (language model)"), []
        summary, names = (kept("summary", [cfg, missing], lambda: _summary_from_transformers(cfg, missing))
                          if missing and causal_lm_type(cfg.get("model_type")) else (cfg, {}))
        missing = [f"{k} ({names[k]})" if k in names else k for k in missing if k not in summary]
        if missing:
            raise AdvisorError(f"model config {str(cfg_path)!r} lacks {', '.join(missing)} (a decoder's config.json has them)")
        kind = cfg.get("model_type")
        if kind is not None and not causal_lm_type(kind) or cfg.get("is_encoder_decoder"):
            raise AdvisorError(f"model config {str(cfg_path)!r}: model_type {kind!r} is not a causal LM that transformers "
                               f"builds; e.g. {', '.join(sorted(DECODER_MODEL_TYPES)[:8])}")
        try:
            named = {k: v for k, v in summary.items() if k != "intermediate_size" or k in cfg}
            return arch_from_hf_config(summary, name=str(cfg_path), hf_config=named)
        except ValidationError as e:
            err = e.errors()[0]
            error = MalformedInput if is_malformed(err) else AdvisorError
            raise error(f"model config {str(cfg_path)!r}: {validation_text(err)}") from None
    from knowledge.hub import HUB_ID_RE, hub_model

    if HUB_ID_RE.match(model.strip()):
        known = hub_ids().get(model.strip().lower())
        return known if known else hub_model(model.strip())
    raise closest_unknown("model", model, list(models()))
