"""The one entry point every prediction goes through: resolve names, then call the pure models.

``Predictor.predict`` raises ``AdvisorError`` for cases it cannot handle; ``predict_many`` turns those
into contract error lines so one bad case never stops the others.
"""

from __future__ import annotations

import json
from typing import Any

from pathlib import Path

from pydantic import ValidationError

from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import (
    Efficiencies, load_efficiencies, load_held_out_error, load_platform_factors, load_probe_ratios,
)
from knowledge.errors import AdvisorError
from knowledge.schema import KVGroup, ModelArch, ErrorLine, Profile, ServeCase, ServePrediction, TrainCase, TrainPrediction
from knowledge.schema import PlatformSpec
from knowledge.fabrics import network_for
from knowledge.measurements import load_bundled_profiles
from models.calibration import Calibration, check_profile, from_fit, from_profile, with_network
from models.training import predict_training

Prediction = TrainPrediction | ServePrediction


def serving_layout(arch: ModelArch, cache: dict[str, Any] | None = None, traces: Any = None) -> ModelArch:
    """``arch`` as its own code lays it out for serving: its KV cache (sliding-window layers capped at their window,
    latent attention's compressed KV, a hybrid's recurrent layers and their states: ``probes.cache_trace.cache_layout``) and,
    given a ``TraceBook``, one layer's projections from its trace (fused QKV, a plain MLP, shared experts, a dense
    first layer: ``ArchTrace.projections``) with its traced parameter count. Once per config when ``cache`` is given;
    a hand-counted architecture keeps the plain count. Every serving path that sizes or times a model (predict, the serving
    search's load, the serving fit and its scores) goes through it."""
    from advisor.traces import hand_counted
    from probes.cache_trace import cache_layout

    if hand_counted(arch) or arch.kv_groups is not None:
        return arch
    cache = {} if cache is None else cache
    key = json.dumps(arch.hf_config, sort_keys=True, default=str)
    if key not in cache:
        cache[key] = traces.kv_groups(arch) if traces is not None else cache_layout(arch.hf_config)
    groups = cache[key]
    update: dict[str, Any] = {"kv_groups": [KVGroup(**g) for g in groups]} if groups else {}
    trace = traces.forward_trace(arch) if traces is not None else None
    if trace is not None:
        update["projections"] = trace.projections(arch.num_experts_per_tok, arch.vocab_size)
        update["param_count"] = trace.params.total
    return arch.model_copy(update=update) if update else arch


def rel_error_for(task: str, platform: PlatformSpec, nodes: int = 1, by_class: dict | None = None,
                  by_task: dict | None = None, tensor_parallel: int | None = None) -> float | None:
    """The interval's relative error of a prediction: the held-out MAPE of its platform class where the
    validation measured one (knowledge.platform_class), else the task's held-out figure. A serving replica of one GPU
    (``tensor_parallel`` 1) crosses no link: its class is a single GPU's whatever the server."""
    from knowledge.efficiency import load_held_out_by_class
    from knowledge.platform_class import SERVING_MEASURED_CLASSES, class_rel_error, platform_class

    classes = by_class if by_class is not None else load_held_out_by_class()
    cls = "single GPU" if task == "serve" and tensor_parallel == 1 else platform_class(platform, nodes)
    table = classes.get("train" if task != "serve" else "serve", {})
    err = class_rel_error(table, cls) if table else None
    if err is None:
        err = (by_task if by_task is not None else held_out_error()).get(task)
    if task == "serve" and cls not in SERVING_MEASURED_CLASSES and classes.get("train"):
        train_err = class_rel_error(classes["train"], cls)
        err = max((x for x in (err, train_err) if x is not None), default=None)
    return err


def held_out_error() -> dict[str, float]:
    """Held-out MAPE per task from the last fit, for intervals."""
    return load_held_out_error()


def load_profile(path: str | Path) -> Profile:
    """Read a profile written by `advisor probe`; a bad file raises AdvisorError naming it."""
    p = Path(path)
    try:
        return Profile.model_validate_json(p.read_text())
    except FileNotFoundError:
        raise AdvisorError(f"profile {str(p)!r} not found") from None
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(map(str, err["loc"])) or "file"
        raise AdvisorError(f"profile {str(p)!r} is not a valid profile ({where}: {err['msg']})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise AdvisorError(f"profile {str(p)!r} cannot be read: {e}") from None


def efficiencies_for(platform: PlatformSpec, eff: Efficiencies | None = None) -> Efficiencies:
    """The fitted efficiencies with the platform's own learned factors, when it has measurements."""
    return calibration_for(platform, fitted=eff).eff


def calibration_for(platform: PlatformSpec, profile: Profile | None = None, fitted: Efficiencies | None = None,
                    factors: dict[str, dict[str, float]] | None = None) -> Calibration:
    """The one calibration a prediction on ``platform`` uses: the fit with the platform's learned factors,
    or, with a profile of that machine, its measured ceilings (and, on a machine the fit never saw, its host's launch).

    A profile of another GPU (or of a CPU) raises AdvisorError: it would silently change nothing.
    """
    factors = load_platform_factors() if factors is None else factors
    base = from_fit(platform, fitted or load_efficiencies(), factors, load_probe_ratios())
    if profile is None:
        return base
    why = check_profile(profile, platform)
    if why:
        raise AdvisorError(f"--profile does not match: {why}")
    # its measured ceilings replace the generation's averages, and its host's per-kernel costs follow its launch against
    # that of the hosts the costs were learned on: the probed hosts' for a machine the fit never saw, the bundled
    # profile's lease for a platform it learned (models.calibration.from_profile says why)
    return from_profile(platform, base, profile, host_reference_launch_s(platform, base, factors))


def host_reference_launch_s(platform: PlatformSpec, base: Calibration, factors: dict[str, dict[str, float]]) -> float | None:
    """The launch at which ``base``'s host costs hold: the probed hosts' (``ProbeRatios.launch_s``) on a machine the
    fit never saw; on a learned platform, its bundled profile's (None where it has none: the learned host stays)."""
    if platform.id not in factors:
        return base.ratios.launch_s
    bundled = load_bundled_profiles().get(f"{platform.gpu.id}x{platform.count}")
    return bundled.launch_overhead_s if bundled is not None else None


def serving_calibration_for(platform: PlatformSpec, profile: Profile | None = None, fitted: Efficiencies | None = None,
                            factors: dict[str, dict[str, float]] | None = None) -> Calibration:
    """The calibration of a serving prediction: the same object as training's (probed ceilings, the profile's
    measurements, the platform's learned factors) over the serving fit, which adds what only serving
    exercises (weight streaming, KV reads, the CUDA-graph kernel floor, quantized and MoE kernels)."""
    return calibration_for(platform, profile, fitted or load_efficiencies(task="serve"), factors)


class Predictor:
    """Predicts contract cases with the fitted calibration, or a probe profile's.

    One Calibration per platform is built on first use and kept by this instance only (the entry point's
    object), never in a module-level cache.
    """

    def __init__(self, profile: Profile | None = None, efficiencies: Efficiencies | None = None) -> None:
        self.profile = profile
        self.efficiencies = efficiencies or load_efficiencies()
        self.serving_efficiencies = efficiencies  # None: the bundled serving fit
        self._factors = load_platform_factors()
        self._held_out = held_out_error()
        from knowledge.efficiency import load_held_out_by_class

        self._by_class = load_held_out_by_class()
        self._calibrations: dict[str, Calibration] = {}
        from advisor.traces import TraceBook

        self.traces = TraceBook()
        self._kv: dict[str, list | None] = {}

    def _kept(self, task: str, platform: PlatformSpec, build) -> Calibration:
        key = f"{task}/{platform.id}/{platform.count}/{platform.host.model_dump_json()}"  # a --host-ram-gib override is another machine
        if key not in self._calibrations:
            self._calibrations[key] = build(platform, self.profile)
        return self._calibrations[key]

    def calibration(self, platform: PlatformSpec) -> Calibration:
        return self._kept("train", platform, lambda p, prof: calibration_for(p, prof, self.efficiencies, self._factors))

    def serving_calibration(self, platform: PlatformSpec) -> Calibration:
        return self._kept("serve", platform, lambda p, prof: serving_calibration_for(p, prof, self.serving_efficiencies, self._factors))

    def predict(self, case: TrainCase | ServeCase) -> Prediction:
        if case.nodes > 1 and not isinstance(case, TrainCase):
            raise AdvisorError(f"nodes={case.nodes}: serving across nodes is not modelled (one server only); "
                               f"predict one node of {case.hardware!r} with nodes=1")
        platform = resolve_platform(case.hardware, getattr(case, "gpus", None), nodes=case.nodes)
        arch = resolve_model(case.model)
        if isinstance(case, TrainCase):
            cal = self.calibration(platform)
            network = network_for(platform, case.nodes, case.network, case.inter_node_gbps, self.profile)
            case = self.traces.with_default_lora_targets(arch, case)
            trace = self.traces.trace(arch, case)
            err = rel_error_for(case.task, platform, case.nodes, self._by_class, self._held_out)
            if network is None:
                return predict_training(case, arch, platform, cal, err, trace)
            pred = predict_training(case, arch, platform, with_network(cal, network), err, trace)
            return pred.model_copy(update={"network": network.label})
        from models.serving import predict_serving

        arch = self.serving_layout(arch)
        err = rel_error_for("serve", platform, 1, self._by_class, self._held_out, case.tensor_parallel)
        return predict_serving(case, arch, platform, self.serving_calibration(platform), err)

    def serving_layout(self, arch: ModelArch) -> ModelArch:
        """``arch`` as its own code lays it out for serving (``serving_layout``), read once per model."""
        return serving_layout(arch, self._kv, self.traces)

    def predict_or_error(self, case: TrainCase | ServeCase) -> Prediction | ErrorLine:
        try:
            return self.predict(case)
        except AdvisorError as e:
            return ErrorLine(id=case.id, error=str(e))
        except (OverflowError, ZeroDivisionError) as e:  # sizes so extreme the arithmetic breaks
            return ErrorLine(id=case.id, error=f"case too large to compute ({type(e).__name__})")
        except Exception as e:  # a library user or the app must get a line, never a traceback
            return ErrorLine(id=case.id, error=f"cannot predict this case: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
