"""Sidebar: the job (task, hardware, model) and a what-if control for every knob of the contract.

Controls only collect values; the case they form is validated and predicted by the advisor itself
(``app.state.predict``), so an impossible combination shows the advisor's own one-line error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import streamlit as st
from pydantic import ValidationError

from advisor import space
from app import state
from knowledge.catalog import arch_from_hf_config, resolve_model, with_host
from knowledge.schema import FORMAT_BITS, LORA_TARGETS, ServeCase, TrainCase
from models.serve_launch import ENGINE_NAMES, ENGINES

FORMAT_LABELS = {None: "engine default for the GPU", "fp8": "FP8 (W8A8)", "int8": "int8 (W8A8)", "int4": "int4 (AWQ/GPTQ W4A16)",
                 "bnb-int8": "bitsandbytes LLM.int8", "bnb-nf4": "bitsandbytes NF4"}

TASKS = ("finetune", "pretrain", "serve")
TASK_LABELS = {"finetune": "fine-tune", "pretrain": "pre-train", "serve": "serve (inference)"}
COUNTS = (1, 2, 4, 8, 16, 32, 64)
VARIANTS = ("default", "pcie", "nvlink")
DEFAULT_METHOD = {"pretrain": "full", "finetune": "lora"}
EXAMPLE_ARCH = json.dumps({"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}, indent=1)


@dataclass
class Selection:
    task: str
    hardware: str
    hardware_b: str
    compare_on: bool
    model: str | dict | None
    model_error: str | None
    knobs: dict[str, Any] = field(default_factory=dict)
    slo: dict[str, Any] = field(default_factory=dict)  # serving limits and burst: not case fields

    def case(self, hardware: str | None = None) -> dict[str, Any]:
        """The contract case of the current controls (``hardware`` overrides the platform)."""
        return {"id": "app", "task": self.task, "hardware": hardware or self.hardware, "model": self.model, **self.knobs}

    def case_json(self, hardware: str | None = None) -> str:
        return json.dumps(self.case(hardware), sort_keys=True)

    @property
    def model_key(self) -> str:
        return state.model_json(self.model)


def parse_model_text(text: str) -> tuple[str | dict | None, str | None]:
    """A pasted inline architecture or Hugging Face config.json -> (case model value, one-line error)."""
    if not text.strip():
        return None, "paste an architecture JSON or a config.json"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return None, f"model: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
    if not isinstance(obj, dict):
        return None, f"model: expected a JSON object, got {type(obj).__name__}"
    if any(k in obj for k in ("model_type", "architectures", "torch_dtype", "_name_or_path")):
        try:  # a Hugging Face config.json: take the Llama-style fields the advisor reads
            arch = arch_from_hf_config(obj, name=str(obj.get("_name_or_path") or obj.get("model_type") or "config.json"))
        except ValidationError as e:
            err = e.errors()[0]
            return None, f"config.json: {'.'.join(map(str, err['loc'])) or 'model'}: {err['msg']}"
        except (TypeError, ValueError) as e:
            return None, f"config.json: {state.one_line(e)}"
        return arch.model_dump(mode="json", exclude={"aliases", "source", "param_count"}), None
    try:
        resolve_model(obj)
    except ValueError as e:
        return None, state.one_line(e)
    return obj, None


def _hardware(prefix: str, label: str, gpu: str, count: int) -> str:
    ids = state.gpu_ids()
    names = state.gpu_names()
    reset = None if prefix else _reset_counts
    g = st.selectbox(f"{label} GPU", ids, index=ids.index(gpu), key=f"{prefix}gpu", format_func=lambda i: names.get(i, i),
                     on_change=reset)
    n = st.selectbox(f"{label} count", COUNTS, index=COUNTS.index(count), key=f"{prefix}count", on_change=reset)
    v = st.selectbox(f"{label} interconnect", VARIANTS, key=f"{prefix}variant",
                     format_func={"default": "as the GPU has it (NVLink where it exists)", "pcie": "PCIe only (NVLink off)",
                                  "nvlink": "NVLink"}.get,
                     help="default: what the GPU has (NVLink where it exists); pcie: NVLink off; nvlink: force NVLink")
    hardware = f"{g}x{n}" + ("" if v == "default" else f"-{v}")
    if prefix:
        return hardware
    with st.expander("Host of this server (RAM, CPU cores)"):
        info, _ = state.platform_info(hardware)
        ram = st.number_input("Host RAM (GiB)", 1, 1 << 20, None, step=64, key="host_ram_gib",
                              placeholder=f"catalog: {info.host.host_ram_gib:.0f} GiB" if info else "catalog value",
                              help="Empty: the catalog's value for this server. Offload needs it: pinned buffers and CPU optimizer states.")
        cores = st.number_input("CPU cores", 1, 1 << 16, None, key="cpu_cores",
                                placeholder=f"catalog: {info.host.cpu_cores}" if info else "catalog value",
                                help="Empty: the catalog's value. CPU Adam (ZeRO-Offload) runs on them.")
    try:
        return with_host(hardware, float(ram) if ram else None, int(cores) if cores else None)
    except ValueError:
        return hardware


def _reset_counts() -> None:
    """A new platform: use all its GPUs and no tensor parallelism rather than keep stale counts."""
    st.session_state["gpus"] = "all"
    st.session_state["tensor_parallel"] = 1


def _reset_method() -> None:
    st.session_state["method"] = DEFAULT_METHOD.get(st.session_state.get("task"), "full")


def _model() -> tuple[str | dict | None, str | None]:
    src = st.radio("Model", ("catalog", "paste JSON"), key="model_src", horizontal=True,
                   format_func={"catalog": "from the catalog", "paste JSON": "paste an architecture / config.json"}.get)
    if src == "catalog":
        names = state.model_names()
        return st.selectbox("Catalog model", names, index=names.index("llama2-7b"), key="model"), None
    text = st.text_area("Architecture JSON or Hugging Face config.json", EXAMPLE_ARCH, key="model_json", height=180)
    model, err = parse_model_text(text)
    if err:
        st.error(err)
    return model, err


def _choose(label: str, options: tuple, key: str, help: str | None = None, fmt=None, default=None):
    """A selectbox over the options ``advisor.space`` allows here; a value that stopped being valid falls back."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]
    return st.selectbox(label, options, key=key, help=help, format_func=fmt or (lambda v: space.LABELS.get(v, str(v))))


def _nodes(count: int) -> dict[str, Any]:
    """Servers joined by a network, where the contract's case supports them (``nodes``)."""
    if "nodes" not in TrainCase.model_fields and "nodes" not in ServeCase.model_fields:
        return {}
    n = int(st.number_input("Servers (nodes)", 1, 1024, 1, key="nodes",
                            help=f"Identical servers of {count} GPUs each, joined by the catalog's network"))
    return {"nodes": n} if n > 1 else {}


def _train_knobs(count: int, task: str) -> dict[str, Any]:
    k: dict[str, Any] = {}
    k["method"] = _choose("Training method", space.methods_for(task), "method",
                          help="pre-training trains every weight; LoRA/QLoRA train adapters on a frozen base")
    k["engine"] = _choose("Engine", space.ENGINES, "engine")
    k["zero_stage"] = _choose("ZeRO stage", space.zero_stages_for(k["engine"]), "zero_stage",
                              fmt=lambda z: f"ZeRO-{z}" + (" (plain data parallel)" if z == 0 else ""),
                              # DeepSpeed users' usual stage; ZeRO-0 keeps whole optimizer states on every rank
                              default=2)
    k["offload"] = _choose("CPU offload (ZeRO-Offload)", space.offloads_for(k["engine"], k["zero_stage"]), "offload",
                           help="optimizer states need ZeRO 1-3; parameters too need ZeRO-3")
    pinned = st.checkbox("Offloaded states in pinned host memory (DeepSpeed's pin_memory)", value=True, key="offload_pin_memory",
                         disabled=k["offload"] == "none",
                         help="pinned: faster copies, buffers rounded up to powers of two; unpinned (DeepSpeed's default): "
                              "less host RAM, copies through the host's memcpy")
    if k["offload"] != "none" and not pinned:
        k["offload_pin_memory"] = False
    k["quantization"] = _choose("Frozen base weights", space.quantizations_for(k["method"]), "quantization",
                                fmt=lambda q: {"none": "16-bit", "int8": "int8 (LLM.int8)", "nf4": "NF4 4-bit (QLoRA)"}[q])
    k["recompute"] = st.checkbox("Activation recomputation (gradient checkpointing)", key="recompute")
    k["flash_attention"] = st.checkbox("Fused attention (FlashAttention / SDPA)", value=True, key="flash_attention")
    k["micro_batch_size"] = int(st.number_input("Micro-batch size (sequences per GPU)", 1, 4096, 1, key="micro_batch_size"))
    k["grad_accum"] = int(st.number_input("Gradient accumulation steps", 1, 4096, 1, key="grad_accum"))
    k["seq_len"] = int(st.number_input("Sequence length (tokens)", 1, 1 << 20, 2048, step=256, key="seq_len"))
    lora = k["method"] != "full"
    k["lora_rank"] = int(st.number_input("LoRA rank", 1, 4096, 64, key="lora_rank", disabled=not lora))
    k["lora_targets"] = st.multiselect("LoRA target projections", LORA_TARGETS, default=["q_proj", "k_proj", "v_proj", "o_proj"],
                                       key="lora_targets", disabled=not lora)
    gpus = st.selectbox("GPUs used (data-parallel ranks)", ("all", *range(1, count + 1)), key="gpus")
    if gpus != "all":
        k["gpus"] = int(gpus)
    k.update(_nodes(count))
    return k


def _serve_knobs(count: int) -> tuple[dict[str, Any], dict[str, Any]]:
    k: dict[str, Any] = {}
    k["batch_size"] = int(st.number_input("Concurrent sequences (batch)", 1, 65536, 1, key="batch_size"))
    k["prompt_len"] = int(st.number_input("Prompt length (tokens)", 1, 1 << 20, 512, step=128, key="prompt_len"))
    kv = st.number_input("KV-cache length of the timed decode step (tokens)", 1, 1 << 20, None, step=128, key="kv_len",
                         placeholder="empty: the prompt length")
    if kv is not None:
        k["kv_len"] = int(kv)
    out = st.number_input("Generated tokens per request", 1, 1 << 20, 256, step=64, key="output_len",
                          placeholder="empty: decode step only")
    if out is not None:
        k["output_len"] = int(out)
    k["weight_bits"] = _choose("Weight precision", space.WEIGHT_BITS, "weight_bits", fmt=lambda b: f"{b}-bit")
    formats = (None, *(f for f, b in FORMAT_BITS.items() if b == k["weight_bits"] and f != "bf16"))
    fmt = _choose("Weight format", formats, "weight_format", fmt=lambda f: FORMAT_LABELS.get(f, f),
                  help="How engines store and multiply the weights; bitsandbytes only when chosen")
    if fmt:
        k["weight_format"] = fmt
    k["kv_bits"] = _choose("KV-cache precision", space.KV_BITS, "kv_bits", fmt=lambda b: f"{b}-bit")
    k["engine"] = _choose("Serving engine", ENGINES, "engine", fmt=ENGINE_NAMES.get)
    # a tensor-parallel group divides the server's GPUs (3 of 8 leaves GPUs no replica can use)
    k["tensor_parallel"] = st.selectbox("Tensor-parallel GPUs", tuple(t for t in range(1, count + 1) if count % t == 0),
                                        key="tensor_parallel")
    reps = st.selectbox("Data-parallel replicas", ("all", *range(1, count // k["tensor_parallel"] + 1)), key="replicas",
                        help="Copies of the model, each on its own tensor-parallel group (all: GPUs // tensor-parallel)")
    if reps != "all":
        k["replicas"] = int(reps)
    # no servers (nodes) here: serving is modelled on one server, as the CLI's --nodes refuses it
    st.subheader("Service-level objectives")
    slo: dict[str, Any] = {}
    slo["max_tpot_ms"] = st.number_input("Max time per output token (ms)", 0.1, 1e6, None, key="max_tpot_ms",
                                         placeholder="no limit", help="Recommendations keep only configurations that meet it")
    slo["max_ttft_ms"] = st.number_input("Max time to first token (ms)", 1.0, 1e7, None, key="max_ttft_ms", placeholder="no limit")
    slo["requests"] = st.number_input("Requests arriving at once", 1, 1 << 20, None, key="requests", placeholder="none",
                                      help="The load every configuration is judged under (Recommendations tab); with a rate: how many arrive")
    slo["rate"] = st.number_input("Arrival rate (requests/s)", 0.01, 1e6, None, key="rate", placeholder="none",
                                  help="Poisson arrivals (fixed seed) spread over the replicas")
    return k, slo


def sidebar() -> Selection:
    with st.sidebar:
        st.header("Job")
        task = st.selectbox("Task", TASKS, key="task", on_change=_reset_method, format_func=TASK_LABELS.get)
        if "method" not in st.session_state:
            st.session_state["method"] = DEFAULT_METHOD.get(task, "full")
        hardware = _hardware("", "Hardware", "a800", 8)
        with st.expander("Second platform (Compare tab, side-by-side prediction)"):
            hardware_b = _hardware("b_", "Second", "h100", 8)
            compare_on = st.checkbox("also predict on the second platform", key="compare_on")
        model, model_error = _model()
        st.header("What if…")
        count = int(st.session_state.get("count", 8))
        knobs, slo = _serve_knobs(count) if task == "serve" else (_train_knobs(count, task), {})
    return Selection(task, hardware, hardware_b, compare_on, model, model_error, knobs, slo)
