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

from app import state
from knowledge.catalog import arch_from_hf_config, resolve_model
from knowledge.schema import LORA_TARGETS

TASKS = ("finetune", "pretrain", "serve")
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
                     help="default: what the GPU has (NVLink where it exists); pcie: NVLink off; nvlink: force NVLink")
    return f"{g}x{n}" + ("" if v == "default" else f"-{v}")


def _reset_counts() -> None:
    """A new platform: use all its GPUs and no tensor parallelism rather than keep stale counts."""
    st.session_state["gpus"] = "all"
    st.session_state["tensor_parallel"] = 1


def _reset_method() -> None:
    st.session_state["method"] = DEFAULT_METHOD.get(st.session_state.get("task"), "full")


def _model() -> tuple[str | dict | None, str | None]:
    src = st.radio("Model", ("catalog", "paste JSON"), key="model_src", horizontal=True)
    if src == "catalog":
        names = state.model_names()
        return st.selectbox("Catalog model", names, index=names.index("llama2-7b"), key="model"), None
    text = st.text_area("Architecture JSON or Hugging Face config.json", EXAMPLE_ARCH, key="model_json", height=180)
    model, err = parse_model_text(text)
    if err:
        st.error(err)
    return model, err


def _train_knobs(count: int) -> dict[str, Any]:
    k: dict[str, Any] = {}
    k["method"] = st.selectbox("method", ("full", "lora", "qlora"), key="method")
    k["engine"] = st.selectbox("engine", ("deepspeed", "pytorch"), key="engine")
    k["zero_stage"] = st.selectbox("zero_stage", (0, 1, 2, 3), key="zero_stage")
    k["offload"] = st.selectbox("offload", ("none", "optimizer", "optimizer+params"), key="offload")
    quant = st.selectbox("quantization", ("default", "none", "int8", "nf4"), key="quantization",
                         help="default: nf4 for qlora, none otherwise")
    if quant != "default":
        k["quantization"] = quant
    k["recompute"] = st.checkbox("recompute (activation checkpointing)", key="recompute")
    k["flash_attention"] = st.checkbox("flash_attention", value=True, key="flash_attention")
    k["micro_batch_size"] = int(st.number_input("micro_batch_size", 1, 4096, 1, key="micro_batch_size"))
    k["grad_accum"] = int(st.number_input("grad_accum", 1, 4096, 1, key="grad_accum"))
    k["seq_len"] = int(st.number_input("seq_len", 1, 1 << 20, 2048, step=256, key="seq_len"))
    lora = k["method"] != "full"
    k["lora_rank"] = int(st.number_input("lora_rank", 1, 4096, 64, key="lora_rank", disabled=not lora))
    k["lora_targets"] = st.multiselect("lora_targets", LORA_TARGETS, default=["q_proj", "k_proj", "v_proj", "o_proj"],
                                       key="lora_targets", disabled=not lora)
    gpus = st.selectbox("gpus (data-parallel ranks)", ("all", *range(1, count + 1)), key="gpus")
    if gpus != "all":
        k["gpus"] = int(gpus)
    return k


def _serve_knobs(count: int) -> dict[str, Any]:
    k: dict[str, Any] = {}
    k["batch_size"] = int(st.number_input("batch_size", 1, 65536, 1, key="batch_size"))
    k["prompt_len"] = int(st.number_input("prompt_len", 1, 1 << 20, 512, step=128, key="prompt_len"))
    kv = st.number_input("kv_len (empty = prompt_len)", 1, 1 << 20, None, step=128, key="kv_len")
    if kv is not None:
        k["kv_len"] = int(kv)
    out = st.number_input("output_len (empty = none)", 1, 1 << 20, 256, step=64, key="output_len")
    if out is not None:
        k["output_len"] = int(out)
    k["weight_bits"] = st.selectbox("weight_bits", (16, 8, 4), key="weight_bits")
    k["kv_bits"] = st.selectbox("kv_bits", (16, 8), key="kv_bits")
    k["tensor_parallel"] = st.selectbox("tensor_parallel", tuple(range(1, count + 1)), key="tensor_parallel")
    return k


def sidebar() -> Selection:
    with st.sidebar:
        st.header("Job")
        task = st.selectbox("task", TASKS, key="task", on_change=_reset_method)
        if "method" not in st.session_state:
            st.session_state["method"] = DEFAULT_METHOD.get(task, "full")
        hardware = _hardware("", "Hardware", "a800", 8)
        with st.expander("Second platform (Compare tab, side-by-side prediction)"):
            hardware_b = _hardware("b_", "Second", "h100", 8)
            compare_on = st.checkbox("also predict on the second platform", key="compare_on")
        model, model_error = _model()
        st.header("What if…")
        count = int(st.session_state.get("count", 8))
        knobs = _serve_knobs(count) if task == "serve" else _train_knobs(count)
    return Selection(task, hardware, hardware_b, compare_on, model, model_error, knobs)
