"""Accuracy against measured runs, always on rows the correction was not fitted on.

Leave-one-group-out: for each group (a GPU, a platform, a model size, a data set) the correction is
fitted on every other group and scored on the held-out one. Memory and the fit verdict involve no
fitted parameter, so they are scored on every row.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.cases import parse_case
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import Efficiencies
from knowledge.errors import AdvisorError
from knowledge.measurements import PROBE_DATASET_PREFIX
from knowledge.schema import Measurement, ModelArch, PlatformSpec, ServeCase, TrainCase
from knowledge.traces import ArchTrace
from knowledge.units import gb_to_gib
from models.correction import EfficiencyCorrection, ServingCorrection
from models.training import predict_training

GROUPINGS = ("gpu", "platform", "server", "model", "dataset")


@dataclass(frozen=True)
class _Measured:
    """A measurement with its case resolved: what a held-out fit groups, fits on and predicts."""

    m: Measurement
    case: Any
    arch: ModelArch
    platform: PlatformSpec

    def group(self, by: str) -> str:
        if by == "regime":
            return regimes(self.case, self.platform)[0]
        if by == "model" and self.m.dataset.startswith("zhang"):
            # the paper's rows are all Llama-2-7B: holding "the model" out would drop the paper whole;
            # they are held out by server instead
            return f"{self.platform.id} (Zhang et al.)"
        model = self.arch.name.split("[:")[0]  # the probe's cut-down models belong to their model
        return {"gpu": self.platform.gpu.id, "platform": self.platform.id, "server": server_id(self.platform.id), "model": model,
                "dataset": self.m.dataset}[by]

    @property
    def sample(self):
        return (self.case, self.arch, self.platform)

    @property
    def from_probe(self) -> bool:
        """A real-layer row of a bundled profile (a model cut to one and two layers), not a run of a whole model."""
        return self.m.dataset.startswith(PROBE_DATASET_PREFIX)


# The probe's real layers (a model cut to one and two layers, a few steps each: advisor probe's design) pay per-step
# host costs that a whole model spreads over its layers. Fitted through their platform's own CPU factor they asked
# 1.4-1.9x the per-kernel cost of the whole models' runs and pulled it up for every prediction: CPU-bound runs of the
# traced families (never fitted) came out 13.6% too slow (n=35, 2026-11-27). They keep informing the GPU-side
# efficiencies, under a host factor of their own: their platform's id with this suffix.
CUT_MODEL_FACTORS = "-cut"


@dataclass(frozen=True)
class Row(_Measured):
    case: TrainCase
    trace: ArchTrace | None = None  # the model's own code traced for this case; None for the hand count

    @property
    def sample(self):
        """(case, arch, platform, trace) for the fit; a probe's cut model carries its own platform factors."""
        platform = self.platform
        if self.from_probe:
            platform = platform.model_copy(update={"id": platform.id + CUT_MODEL_FACTORS})
        return (self.case, self.arch, platform, self.trace)

    def predict(self, cal: Any) -> Any:
        """This run predicted through calibration ``cal`` (models.training.predict_training), its trace included."""
        return predict_training(self.case, self.arch, self.platform, cal, trace=self.trace)

    @property
    def has_throughput(self) -> bool:
        return not self.m.measured.oom and bool(self.m.measured.tokens_per_s)

    @property
    def failure(self) -> str | None:
        """device_oom, host_oom, or None for a run that fit (older rows mark an OOM with ``oom`` only, and
        a host kill as "crashed (exit code -9)")."""
        m = self.m.measured
        if m.failure in ("device_oom", "host_oom"):
            return m.failure
        if m.error and "exit code -9" in m.error:
            return "host_oom"
        return "device_oom" if m.oom else None

    @property
    def phases(self) -> tuple[float | None, float | None, float | None]:
        m = self.m.measured
        return m.forward_s, m.backward_s, m.optimizer_s


REGIMES = ("offload", "micro-batch 1", "recompute", "realistic", "short sequences", "other")


def server_id(platform_id: str) -> str:
    """The physical server of a platform id: its variants (``rtx3090x8-pcie``, the same box with its NVLink
    bridges off) are one machine, and a hold-out that keeps one variant in the fit while predicting the other
    has seen that machine (the RTX 3090 box: 132-152% held out by platform, 252% with the whole box out,
    tests/benchmarks/pcie_servers.out.txt)."""
    return platform_id.split("-", 1)[0]


def regimes(case: TrainCase, platform: PlatformSpec) -> list[str]:
    """The regimes a training case belongs to, its primary one first (the one a regime hold-out uses).

    offload: ZeRO-Offload; micro-batch 1; recompute; realistic: seq 2048-8192 with micro-batch >= 2;
    short sequences: under 1024 tokens. Then the method, the engine, the GPU and PCIe servers.
    """
    tags = []
    if case.offload != "none":
        tags.append("offload")
    elif case.micro_batch_size == 1:
        tags.append("micro-batch 1")
    elif case.recompute:
        tags.append("recompute")
    elif 2048 <= case.seq_len <= 8192:
        tags.append("realistic")
    elif case.seq_len < 1024:
        tags.append("short sequences")
    else:
        tags.append("other")
    if case.recompute and tags[0] != "recompute":
        tags.append("recompute")
    if case.seq_len < 1024 and tags[0] != "short sequences":
        tags.append("short sequences")
    tags.append("full training" if case.method == "full" else "LoRA / QLoRA")
    tags.append("DeepSpeed" if case.engine == "deepspeed" else "PyTorch")
    tags.append(f"GPU {platform.gpu.id}")
    if platform.interconnect.startswith("pcie") or platform.interconnect == "nvlink-pairs":
        tags.append("PCIe servers")
    return tags


def traced(arch) -> bool:
    """Is ``arch`` predicted from the trace of its own code (``advisor.traces``) rather than the hand count?"""
    from advisor.traces import hand_counted

    return not hand_counted(arch)


def with_omp_threads(m: Measurement) -> dict:
    """The row's case with the OpenMP threads its ranks really ran with (the run's environment records them:
    torchrun sets 1 per rank) where the case does not say."""
    threads = m.environment.omp_threads if m.environment else None
    if threads and m.case.get("omp_threads") is None:
        return {**m.case, "omp_threads": threads}
    return m.case


def training_rows(measurements: Sequence[Measurement], traced_families: bool = True) -> tuple[list[Row], list[str]]:
    """The training runs a fit learns from, each with its case, model, platform and (for a family outside the hand
    count) its trace; a failed run that says nothing (a crash, a timeout) is skipped with its reason.

    The traced families' runs are fitted since 2026-11-28: held out by family they came out closer when the fit had
    learned from the other families' runs than from the catalog's alone, ZeRO-3 most (tests/benchmarks/traced_rows.py
    and its output). ``traced_families=False``: the hand count's rows only."""
    from advisor.traces import TraceBook

    book = TraceBook()
    rows, skipped = [], []
    for m in measurements:
        if m.case.get("task") not in ("pretrain", "finetune"):
            continue
        try:
            case = parse_case(with_omp_threads(m))
            platform = resolve_platform(case.hardware, case.gpus)
            arch = resolve_model(case.model)
            trace = None
            if traced(arch):
                if not traced_families:
                    skipped.append(f"{m.source}: {arch.hf_model_type} is traced (traced_families=False)")
                    continue
                case = book.with_default_lora_targets(arch, case)
                trace = book.trace(arch, case)
        except (AdvisorError, ValueError) as e:
            skipped.append(f"{m.source}: {e}")
            continue
        killed = bool(m.measured.error and "exit code -9" in m.measured.error)
        if m.measured.error and not m.measured.oom and m.measured.failure not in ("device_oom", "host_oom") and not killed:
            skipped.append(f"{m.source}: run failed ({m.measured.error[:80]})")  # a crash or timeout says nothing
            continue
        rows.append(Row(m, case, arch, platform, trace))
    return rows, skipped


def dispatch_launch_exponent(platform_factors: dict[str, dict[str, float]], profiles: dict[str, Any]) -> float | None:
    """How the per-kernel CPU cost follows a host's measured launch: the least-squares slope of log(fitted
    ``kernel_time_s`` factor) on log(the profile's ``launch_overhead_s``) over the probed hosts the fit learned,
    within [0, 1]; None with fewer than two hosts or launches within 10% of each other (nothing to learn from).

    The shipped fit (2026-12-07): the H100 host 9.9 us, factor 0.97; the one- and two-H200 hosts 6.2 and 6.3 us, 0.90 and
    0.76: 0.334 (2026-11-25 it was 0.63, from factors 1.17, 0.85 and 0.90)."""
    pts = [(math.log(p.launch_overhead_s), math.log(platform_factors[k]["kernel_time_s"])) for k, p in profiles.items()
           if p.launch_overhead_s > 0 and platform_factors.get(k, {}).get("kernel_time_s", 0) > 0]
    xs = [x for x, _ in pts]
    if len(pts) < 2 or max(xs) - min(xs) < math.log(1.1):
        return None
    mx, my = sum(xs) / len(xs), sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x in xs)
    return round(min(max(slope, 0.0), 1.0), 3)


def fit_correction(rows: Sequence[Row], prior: Efficiencies | None = None, **fit_kw) -> EfficiencyCorrection:
    usable = [r for r in rows if r.has_throughput]
    from knowledge.efficiency import load_probe_ratios

    est = EfficiencyCorrection(prior=prior, ratio_table=load_probe_ratios())
    est = est.fit([r.sample for r in usable], [r.m.measured.tokens_per_s for r in usable], [r.phases for r in usable], **fit_kw)
    # how a new host's per-kernel cost follows its probed launch, from the hosts this fit learned: every fit sets it the
    # same way, so a held-out fit's profile predictions use its own slope, not the prior (before 2026-12-07 only the
    # shipped fit did: held-out fits scaled by the prior 1 where the shipped fit said 0.33)
    from knowledge.measurements import load_bundled_profiles

    exponent = dispatch_launch_exponent(est.platform_factors_, load_bundled_profiles())
    if exponent is not None:
        est.efficiencies_ = est.efficiencies_.model_copy(update={"dispatch_launch_exponent": exponent})
    return est


def held_out_throughput(rows: Sequence[Row], by: str, progress: Callable[[str], None] | None = None) -> dict[str, list[tuple[Row, float]]]:
    """{group: [(row, predicted tokens/s)]}, each group predicted by a fit on the other groups only."""
    usable = [r for r in rows if r.has_throughput]
    groups = sorted({r.group(by) for r in usable})
    out: dict[str, list[tuple[Row, float]]] = {}
    for g in groups:
        train = [r for r in usable if r.group(by) != g]
        test = [r for r in usable if r.group(by) == g]
        if progress:
            progress(g)
        if not train:
            continue  # a single group cannot be held out: nothing left to fit on
        model = fit_correction(train)
        out[g] = list(zip(test, model.predict([r.sample for r in test])))
    return out


@dataclass(frozen=True)
class HeldOut:
    """One measured run predicted by a fit that never saw its group: without and with its machine's profile."""

    row: Row
    group: str
    predicted: float  # tokens/s, no profile
    with_profile: float | None  # tokens/s with the bundled profile of the machine it ran on (None: none exists)

    @property
    def measured(self) -> float:
        return self.row.m.measured.tokens_per_s  # type: ignore[return-value]


def held_out_report(rows: Sequence[Row], by: str, profiles: dict[str, Any], test: Callable[[Row], bool],
                    progress: Callable[[str], None] | None = None) -> list[HeldOut]:
    """Leave one ``by`` group out: fit on every other group (all data sets), predict the held-out ``test``
    rows through the calibration ``advisor predict`` builds, with and without their machine's profile."""
    from advisor.predictor import calibration_for

    usable = [r for r in rows if r.has_throughput]
    groups = sorted({r.group(by) for r in usable if test(r)})
    out: list[HeldOut] = []
    for g in groups:
        if progress:
            progress(g)
        train = [r for r in usable if r.group(by) != g]
        if not train:
            continue
        est = fit_correction(train)
        cals: dict[tuple, Any] = {}
        for r in usable:
            if r.group(by) != g or not test(r):
                continue
            key = (r.platform.id, r.platform.count)
            if key not in cals:
                prof = profiles.get(r.platform.id)
                cals[key] = (calibration_for(r.platform, None, est.efficiencies_, est.platform_factors_),
                             calibration_for(r.platform, prof, est.efficiencies_, est.platform_factors_) if prof else None)
            base, withp = cals[key]
            p0 = r.predict(base).tokens_per_s
            p1 = r.predict(withp).tokens_per_s if withp else None
            out.append(HeldOut(r, g, p0, p1))
    return out


def mape(pairs: Sequence[tuple[float, float]]) -> float:
    """Mean absolute percentage error of (predicted, measured) pairs."""
    return float(np.mean([abs(p - m) / m for p, m in pairs])) if pairs else math.nan


CalibrationFor = Callable[[PlatformSpec], Any]  # platform -> models.calibration.Calibration


def memory_pairs(rows: Sequence[Row], cal_for: CalibrationFor) -> dict[str, list[tuple[float, float]]]:
    """(predicted GiB, measured GiB) per data set. Published 'GB' is converted from decimal GB."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        meas = r.m.measured
        measured = meas.peak_mem_gib if meas.peak_mem_gib else (gb_to_gib(meas.peak_mem_gb_reported) if meas.peak_mem_gb_reported else None)
        if measured is None or r.failure:
            continue
        p = r.predict(cal_for(r.platform))
        out[r.m.dataset].append((p.peak_mem_gib, measured))
    return dict(out)


def host_pairs(rows: Sequence[Row], cal_for: CalibrationFor) -> list[tuple[Row, float, float]]:
    """(row, predicted host GiB, measured rise of the node's used RAM) for runs that recorded it."""
    out = []
    for r in rows:
        if r.m.measured.host_peak_gib is not None and not r.failure:
            p = r.predict(cal_for(r.platform))
            out.append((r, p.host_mem_gib or 0.0, r.m.measured.host_peak_gib))
    return out


def fit_verdicts(rows: Sequence[Row], cal_for: CalibrationFor) -> dict[str, tuple[int, int]]:
    """(right, total) of the fits verdict per data set; a host kill must be called host_oom."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        p = r.predict(cal_for(r.platform))
        right = p.fits if r.failure is None else (not p.fits and (r.failure != "host_oom" or p.failure == "host_oom"))
        out[r.m.dataset][0] += int(right)
        out[r.m.dataset][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def grid_key(r: Row) -> str:
    """Rows measured together as one grid: same data set, table/file, platform and task."""
    table = r.m.source.split(",")[2].strip().split(" (")[0] if r.m.dataset == "zhang2023" else r.m.dataset
    return f"{r.m.dataset}|{table}|{r.platform.id}|{r.case.task}|{r.arch.name}"


def regrets(pairs: Sequence[tuple[Row, float]]) -> dict[str, float]:
    """Per grid: 1 - measured(best predicted) / measured(best measured), over held-out predictions."""
    grids: dict[str, list[tuple[Row, float]]] = defaultdict(list)
    for r, p in pairs:
        grids[grid_key(r)].append((r, p))
    out = {}
    for k, items in grids.items():
        if len(items) < 3:
            continue
        best_measured = max(r.m.measured.tokens_per_s for r, _ in items)
        pick = max(items, key=lambda rp: rp[1])[0]
        out[k] = 1.0 - pick.m.measured.tokens_per_s / best_measured
    return out


# ------------------------------------------------------------------------------------------ serving


# Quantized kernels of the serving probe that are not what engines run (probes.engine_linears): torch's int8
# GEMM path measured 5x slower than bf16 in decode and 5x in prefill on an H100, the tinygemm int4 kernel 14x
# slower in prefill. Their rows are kept as measurements but neither fit nor score the engine model.
NOT_ENGINE_KERNELS = {"int8": ("prefill", "decode"), "int4": ("prefill",)}


@dataclass(frozen=True)
class ServeRow(_Measured):
    case: ServeCase

    @property
    def target(self) -> tuple[float | None, float | None, float | None]:
        """(prefill_s, decode_step_s, e2e tokens/s) that the engine model predicts; None where the run
        measured something else (eager decode, a non-engine kernel)."""
        m = self.m.measured
        graph = "CUDA graph failed" not in self.m.notes  # an eager decode is another quantity
        skip = NOT_ENGINE_KERNELS.get(self.case.weight_format or "", ())
        if "fp8_scaling=rowwise-dynamic" in self.m.notes:  # the first FP8 sweep's slow path (probes.engine_linears)
            skip = ("prefill", "decode")
        return (None if "prefill" in skip else m.prefill_s,
                m.decode_step_s if graph and "decode" not in skip else None,
                # end to end only where its prefill was graph-captured too (older runs timed it eagerly)
                m.e2e_output_tokens_per_s if not skip and m.prefill_s is not None else None)


    @property
    def peak_comparable(self) -> bool:
        """The run's peak is the case's: its prefill ran (the sweep skips prefills above 32k tokens and times
        decode over a cache it did not fill, whose peak lacks the prefill's activations)."""
        m = self.m.measured
        return (bool(m.peak_mem_gib) and not m.oom and (m.prefill_s is not None or m.prefill_eager_s is not None)
                and not self.cache_beyond_window)

    @property
    def cache_beyond_window(self) -> bool:
        """The engine emulation keeps every position of a sliding-window layer's cache (its notes say the window), where
        an engine's pool frees the blocks behind the window, as the prediction counts them: such a run's peak is not the
        case's once the sequence outgrows the window."""
        found = re.search(r"window=(\d+)", self.m.notes or "")
        return bool(found) and (self.case.kv_len_effective or 0) + 1 > int(found.group(1))


def as_measured(case: dict) -> dict:
    """A serving row's case as it ran: rows that name no engine were measured on the transformers runtime (the
    serving probes before engines became the default), so they are predicted, fitted and scored as that engine."""
    return case if "engine" in case else {**case, "engine": "transformers"}


def serving_rows(measurements: Sequence[Measurement], include_oom: bool = False) -> list[ServeRow]:
    from advisor.predictor import serving_layout
    from advisor.traces import TraceBook

    rows, layouts, traces = [], {}, TraceBook()
    for m in measurements:
        if m.case.get("task") != "serve" or (m.measured.error and not m.measured.oom) or (m.measured.oom and not include_oom):
            continue
        try:
            case = parse_case(as_measured(m.case))
            # fitted and scored with the model's own layout (KV cache, projections), as predict sizes and times it
            arch = serving_layout(resolve_model(case.model), layouts, traces)
            rows.append(ServeRow(m, case, arch, resolve_platform(case.hardware)))
        except (AdvisorError, ValueError):
            continue
    return rows


def fit_serving(rows: Sequence[ServeRow], prior: Efficiencies | None = None) -> ServingCorrection:
    from knowledge.efficiency import load_probe_ratios

    rows = [r for r in rows if any(v for v in r.target)]
    return ServingCorrection(prior=prior, ratio_table=load_probe_ratios()).fit([r.sample for r in rows], [r.target for r in rows])


def held_out_serving(rows: Sequence[ServeRow], by: str, prior: Efficiencies | None = None) -> list[tuple[ServeRow, Any]]:
    """Each group's rows predicted (ServePrediction) by a serving fit on the other groups only."""
    from knowledge.efficiency import load_probe_ratios
    from models.calibration import from_fit
    from models.serving import predict_serving

    ratios = load_probe_ratios()  # read once, not once per row
    out = []
    for g in sorted({r.group(by) for r in rows}):
        train = [r for r in rows if r.group(by) != g]
        if not any(any(v for v in r.target) for r in train):
            continue
        eff = fit_serving(train, prior).efficiencies_
        cals: dict[str, Any] = {}  # one calibration per platform of the group, as the Predictor keeps it
        for r in rows:
            if r.group(by) == g:
                key = f"{r.platform.id}/{r.platform.count}"
                if key not in cals:
                    cals[key] = from_fit(r.platform, eff, None, ratios)
                out.append((r, predict_serving(r.case, r.arch, r.platform, cals[key])))
    return out


def serving_errors(pairs: Sequence[tuple[ServeRow, Any]]) -> dict[str, dict[str, float]]:
    """MAPE and n of prefill, decode step and end-to-end throughput (engine-like runs only), peak memory."""
    out = {}
    for i, name in enumerate(("prefill_s", "decode_step_s", "e2e_output_tokens_per_s")):
        pm = [(getattr(p, name), r.target[i]) for r, p in pairs if r.target[i] and getattr(p, name)]
        out[name] = {"n": len(pm), "mape": mape(pm)}
    pm = [(p.peak_mem_gib, r.m.measured.peak_mem_gib) for r, p in pairs if r.peak_comparable]
    out["peak_mem_gib"] = {"n": len(pm), "mape": mape(pm)}
    return out
