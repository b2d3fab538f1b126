"""Cached calls into the advisor's library: the app computes nothing itself, it asks these.

Every function returns plain data or pydantic objects and an error line instead of raising, so the
pages can show the advisor's one-line message and never a traceback. Inputs are JSON strings (cases,
models) so Streamlit can hash them for the cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import streamlit as st

from advisor.cases import parse_case
from advisor.predictor import Predictor
from knowledge.catalog import gpus, models, named_platforms, resolve_model, resolve_platform
from knowledge.efficiency import CALIBRATION_DIR, load_efficiencies

Result = tuple[Any, str | None]  # (value, None) or (None, one-line error)


@st.cache_resource(show_spinner=False)
def predictor() -> Predictor:
    return Predictor()


@st.cache_data(show_spinner=False)
def gpu_ids() -> list[str]:
    return sorted({g.id for g in gpus().values()})


@st.cache_data(show_spinner=False)
def gpu_names() -> dict[str, str]:
    return {g.id: f"{g.id} — {g.name}, {g.memory_gib:.0f} GiB" for g in gpus().values()}


@st.cache_data(show_spinner=False)
def model_names() -> list[str]:
    return sorted({m.name for m in models().values()})


@st.cache_data(show_spinner=False)
def platform_ids() -> list[str]:
    return sorted(named_platforms())


def has_fitted_correction() -> bool:
    return (CALIBRATION_DIR / "fitted.json").exists()


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


@st.cache_data(show_spinner=False, max_entries=1024)
def predict(case_json: str) -> Result:
    """The contract prediction of one case (same path as `advisor predict`)."""
    try:
        case = parse_case(json.loads(case_json))
        return predictor().predict(case), None
    except ValueError as e:  # AdvisorError and MalformedFile
        return None, one_line(e)


@st.cache_data(show_spinner=False, max_entries=256)
def platform_info(hardware: str) -> Result:
    try:
        return resolve_platform(hardware), None
    except ValueError as e:
        return None, one_line(e)


def hardware_label(hardware: str) -> str:
    """How to show a hardware string: its platform id, plus the host when the sidebar overrides it."""
    info, _ = platform_info(hardware)
    if info is None or not hardware.lstrip().startswith("{"):
        return hardware
    return f"{info.id} (host {info.host.host_ram_gib:.0f} GiB RAM, {info.host.cpu_cores} cores)"


@st.cache_data(show_spinner=False, max_entries=256)
def deepspeed_json(case_json: str) -> Result:
    """The DeepSpeed JSON for the current case, as the recommender would write it."""
    from models.deepspeed_config import deepspeed_config

    try:
        case = parse_case(json.loads(case_json))
        platform = resolve_platform(case.hardware, case.gpus)
        return json.dumps(deepspeed_config(case, platform.gpu, case.gpus or platform.count), indent=2), None
    except ValueError as e:
        return None, one_line(e)


@st.cache_data(show_spinner=False, max_entries=256)
def operators(case_json: str) -> Result:
    """Per-operator FLOPs, bytes and time of one layer forward (models.operators) and the GPU's roofs."""
    from models.operators import layer_operators
    from models.roofline import ceilings

    try:
        case = parse_case(json.loads(case_json))
        platform = resolve_platform(case.hardware, case.gpus)
        arch = resolve_model(case.model)
        eff = predictor().calibration(platform).eff
        ops = layer_operators(case, arch, platform, eff)
        c = ceilings(platform, eff)
        return {"ops": ops, "peak_flops": c.matmul_flops, "bandwidth": c.memory_bps, "gpu": platform.gpu.name,
                "layers": arch.num_hidden_layers}, None
    except ValueError as e:
        return None, one_line(e)


def model_json(model: str | dict) -> str:
    return json.dumps(model, sort_keys=True)


@st.cache_data(show_spinner="Searching the configuration space…", max_entries=64)
def train_search(hardware: str, model: str, task: str, gpus: int | None, seq_len: int, lora_rank: int, top: int = 10) -> Result:
    from app.search_view import train_recommendations

    try:
        return train_recommendations(hardware, json.loads(model), task, gpus, seq_len, lora_rank, top), None
    except ValueError as e:
        return None, one_line(e)


@st.cache_data(show_spinner="Searching serving configurations…", max_entries=64)
def serve_search(hardware: str, model: str, prompt_len: int, output_len: int, top: int = 10,
                 max_tpot_ms: float | None = None, max_ttft_ms: float | None = None, requests: int | None = None,
                 engine: str = "vllm", rate: float | None = None) -> Result:
    """`advisor recommend --task serve` (``advisor.serve_recommend.serve_recommendation``), as its JSON dict."""
    from advisor.serve_recommend import serve_recommendation

    try:
        return serve_recommendation(hardware, json.loads(model), prompt_len=prompt_len, output_len=output_len,
                                    engine=engine, max_tpot_ms=max_tpot_ms, max_ttft_ms=max_ttft_ms,
                                    requests=requests, rate_per_s=rate, top=top), None
    except ValueError as e:
        return None, one_line(e)


@st.cache_data(show_spinner="Computing the comparison mesh…", max_entries=64)
def compare_mesh(hw_a: str, hw_b: str, model: str, phase: str, batches: tuple[int, ...], seqs: tuple[int, ...]) -> Result:
    """The CLI's `advisor compare`: ratio mesh (cells that do not fit or pass the context masked), regions, PNG."""
    from advisor.commands.compare import heatmap_png, serving_comparison

    try:
        m = serving_comparison(hw_a, hw_b, json.loads(model), phase, list(batches), list(seqs), default_seqs=True)
    except ValueError as e:
        return None, one_line(e)
    png = heatmap_png(m["ratio"], m["bound"], m["batch_sizes"], m["seq_lens"], m["a"], m["b"], m["model"], phase,
                      m["fits"], m["beyond"])
    return {**m, "png": png}, None


@st.cache_data(show_spinner="Predicting every measured run…")
def accuracy() -> dict[str, Any]:
    """Predicted vs measured for every training measurement (published + own), with the bundled fit."""
    from app.accuracy_data import accuracy_points

    return accuracy_points(predictor())


def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]
