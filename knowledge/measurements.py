"""Measured runs: the published rows (with their source) and the project's own JSON lines.

Published rows are converted to contract cases here, once, so every consumer (fit, validate, the app)
sees the same cases. Nothing is interpolated or invented: a row without a number stays without it.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from knowledge.deepspeed_releases import STUDY_RELEASE
from knowledge.schema import Measured, Measurement
from knowledge.store import read_jsonl

MEASUREMENTS = Path(__file__).parent / "measurements"
PUBLISHED = MEASUREMENTS / "published"
OWN = MEASUREMENTS / "own"

ZHANG = "Zhang et al. 2023, arXiv 2311.03687 v2"
_PLATFORM = {"a800x8": "a800x8", "rtx4090x8": "rtx4090x8", "rtx3090x8_nvlink": "rtx3090x8", "rtx3090x8_pcie": "rtx3090x8-pcie"}


def flags_to_case(flags: str, task: str) -> dict:
    """The paper's method flags (``R+Z3+O``, ``QL+F``) as contract case fields.

    The paper's baseline is eager attention (``F`` switches FlashAttention on); ``O`` offloads the
    optimizer with ZeRO-2 and the optimizer and parameters with ZeRO-3; ``Q`` in pre-training is the
    4-bit NF4 base with the rest trained.
    """
    parts = set(flags.split("+")) - {"Naive"}
    unknown = parts - {"Z2", "Z3", "O", "Q", "R", "F", "L", "QL"}
    if unknown:
        raise ValueError(f"unknown method flags {sorted(unknown)} in {flags!r}")
    zero = 3 if "Z3" in parts else 2 if "Z2" in parts else 0
    case: dict = {
        "task": task,
        "engine": "deepspeed",
        "zero_stage": zero,
        "offload": ("optimizer+params" if zero == 3 else "optimizer") if "O" in parts else "none",
        "recompute": "R" in parts,
        "flash_attention": "F" in parts,
        "method": "qlora" if "QL" in parts else "lora" if "L" in parts else "full",
    }
    if "Q" in parts:
        case["quantization"] = "nf4"
    if zero == 0:
        # the paper's DeepSpeed (2023) ran bf16 without ZeRO through BF16_Optimizer, its states split over the ranks
        # (Table II: 7B on eight A800s at 66.8 GB, where whole states alone are 94 GB); DeepSpeed 0.19 does that only
        # with fp32 gradient accumulation
        case["grad_accum_dtype"] = "fp32"
    return case


# OpenMP threads of each rank in the study's runs: the paper does not say how its ranks were started. Its offload
# rows fit one thread per rank (as under torchrun, or an exported OMP_NUM_THREADS=1): the fitted per-thread CPU Adam
# factor of the A800 server is then 0.63 of our measured rate; with every core per rank (the DeepSpeed launcher's
# default) they fall to 0.04-0.13, and each server left out is predicted 2-3x too fast on offload
# (A800 30% -> 115%, n=21, measured 2026-11-26 while the per-thread rate was still fitted).
STUDY_OMP_THREADS = 1
# ZeRO-Offload's pin_memory in the study's runs: the paper does not say; DeepSpeed's default is false (pageable). Its RTX
# 3090 box (128 GB) ran Llama-2-7B ZeRO-2 with the optimizer offloaded, which pinned buffers (rounded up to powers of
# two) would not hold: 142 GiB of host RAM by our count pinned, 124 pageable, 125.8 usable.
STUDY_PIN_MEMORY = False


def load_published() -> list[Measurement]:
    """Every DeepSpeed row of the Zhang et al. tables (Megatron rows and batch-less OOM rows skipped)."""
    rows: list[Measurement] = []
    for path in sorted(PUBLISHED.glob("*.csv")):
        with open(path, newline="") as f:
            for n, r in enumerate(csv.DictReader(f), start=2):
                if r["table"] == "Table II" or not r["batch_size"]:
                    continue  # Table II repeats Table III/IV's DeepSpeed rows beside Megatron-LM
                case = flags_to_case(r["method_flags"], r["task"])
                case.update(
                    id=f"{path.stem}:{n}", hardware=_PLATFORM[r["platform"]], model=r["model"],
                    micro_batch_size=int(r["batch_size"]), seq_len=int(r["seq_len"]),
                    omp_threads=STUDY_OMP_THREADS, deepspeed_version=STUDY_RELEASE,
                    offload_pin_memory=STUDY_PIN_MEMORY,
                )
                oom = r["oom"].strip().lower() == "true"
                measured = Measured(
                    oom=oom,
                    tokens_per_s=float(r["throughput_tokens_per_s"]) if r["throughput_tokens_per_s"] else None,
                    peak_mem_gb_reported=float(r["peak_mem_gb"]) if r["peak_mem_gb"] else None,
                )
                rows.append(Measurement(
                    dataset="zhang2023", source=f"{ZHANG}, {r['table']} ({path.name} line {n})",
                    case=case, measured=measured, notes=r["notes"],
                ))
    return rows


def load_own(folder: Path | None = None) -> tuple[list[Measurement], list[str]]:
    """Own runs (``*.jsonl``); corrupt lines are reported and skipped.

    Without ``folder``: the bundled rows, then the user's under ``ADVISOR_HOME/measurements``
    (``knowledge.paths.measurement_files``). With ``folder``: that folder's files only.
    """
    from knowledge.paths import measurement_files

    rows, problems = [], []
    files = measurement_files() if folder is None else sorted(Path(folder).glob("*.jsonl"))
    for path in files:
        for n, obj, err in read_jsonl(path):
            if err:
                problems.append(err)
                continue
            try:
                rows.append(Measurement.model_validate(obj))
            except ValidationError as e:
                problems.append(f"{path}:{n}: not a measurement ({e.errors()[0]['msg']})")
    return rows, problems


# The data set of a bundled profile's real-layer rows (the model cut to one and two layers): "probe-<profile>"
PROBE_DATASET_PREFIX = "probe-"


def load_profile_rows() -> list[Measurement]:
    """The real-layer rows of the bundled profiles (``advisor probe``'s design: the model cut to one and two
    layers under real configurations), as measurements of their machine (dataset ``probe-<profile>``)."""
    from knowledge.paths import BUNDLED_PROFILES
    from knowledge.schema import Profile

    rows = []
    for path in sorted(BUNDLED_PROFILES.glob("*.json")):
        try:
            prof = Profile.model_validate_json(path.read_text())
        except (ValidationError, OSError):
            continue
        for m in prof.macro:
            if m.source == "probes.macro.run_design":
                rows.append(m.model_copy(update={"dataset": f"{PROBE_DATASET_PREFIX}{path.stem}"}))
    return rows


@lru_cache(maxsize=1)
def all_measurements() -> tuple[Measurement, ...]:
    """Published rows, the bundled own rows, the bundled profiles' real-layer rows and the user's rows."""
    own, _ = load_own()
    return tuple(load_published() + own + load_profile_rows())


@lru_cache(maxsize=1)
def load_bundled_profiles() -> dict[str, "Profile"]:
    """The profiles `advisor probe` wrote on the lent machines, by platform id (``h100x1``...)."""
    from knowledge.paths import BUNDLED_PROFILES
    from knowledge.schema import Profile

    out = {}
    for path in sorted(BUNDLED_PROFILES.glob("*.json")):
        try:
            prof = Profile.model_validate_json(path.read_text())
        except (ValidationError, OSError):
            continue
        if prof.gpu_id and prof.gpu_count:
            out.setdefault(f"{prof.gpu_id}x{prof.gpu_count}", prof)
    return out
