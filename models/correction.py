"""The learned correction: the model's named efficiencies fitted to measured step times.

A scikit-learn estimator. ``fit`` moves the ``FITTED`` efficiencies of ``knowledge.efficiency`` so that
the per-phase analytic model (compute, elementwise, launch/dispatch, optimizer, communication,
offload, CPU Adam) reproduces measured throughput, in log space, with a pull toward the priors so a
parameter the data does not constrain stays physical. Each parameter acts on its own phase, not as one
opaque multiplier, and every efficiency stays within (0, 1], so no prediction beats the roofline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from sklearn.base import BaseEstimator, RegressorMixin

from knowledge.efficiency import FITTED, Efficiencies
from knowledge.schema import ModelArch, PlatformSpec, ServeCase, TrainCase
from knowledge.traces import ArchTrace
from models.platform_factors import PLATFORM_PARAMS, platform_values
from models.platform_factors import bounds as _bounds
from models.calibration import default_ratios
from models.roofline import ceilings
from models.setup import derive
from models.step_time import tokens_per_step, training_step_time

# (case, arch, platform), or with the model's own trace for a family the hand count does not cover
TrainSample = tuple[TrainCase, ModelArch, PlatformSpec] | tuple[TrainCase, ModelArch, PlatformSpec, ArchTrace | None]

def _to_z(name: str, x: float) -> float:
    lo, hi = _bounds(name)
    if math.isfinite(hi):
        u = min(max((x - lo) / (hi - lo), 1e-6), 1 - 1e-6)
        return math.log(u / (1 - u))
    return math.log(max(x - lo, 1e-12))


def _from_z(name: str, z: float) -> float:
    lo, hi = _bounds(name)
    if math.isfinite(hi):
        return lo + (hi - lo) / (1 + math.exp(-z))
    return lo + math.exp(min(z, 50.0))


class EfficiencyCorrection(BaseEstimator, RegressorMixin):
    """Fit the model's efficiencies to measured training throughput.

    Parameters
    ----------
    prior : Efficiencies, default=None
        Starting point and regularisation target (the analytic v1 priors when None).
    params : tuple of str, default=FITTED
        Names of the efficiencies the fit may move.
    prior_weight : float, default=0.1
        Strength of the pull toward the prior, per parameter, in logit/log units.
    platform_weight : float, default=1.0
        Strength of the pull of each per-platform factor toward 1, in log units.

    Attributes
    ----------
    efficiencies_ : Efficiencies
        The fitted parameters.
    n_samples_ : int
    platform_factors_ : dict
        {platform id: {parameter: factor}} for the platforms the rows cover.
    train_mape_ : float
        Mean absolute percentage error of tokens/s on the fitted rows (not a validation figure).
    """

    def __init__(
        self, prior: Efficiencies | None = None, params: tuple[str, ...] = FITTED, prior_weight: float = 0.1,
        platform_weight: float = 1.0, platform_params: tuple[str, ...] = PLATFORM_PARAMS, phase_weight: float = 0.5,
        ratio_table: dict | None = None,
    ) -> None:
        self.prior = prior
        self.params = params
        self.prior_weight = prior_weight
        self.platform_weight = platform_weight
        self.platform_params = platform_params
        self.phase_weight = phase_weight
        self.ratio_table = ratio_table  # probe/datasheet ratios by GPU generation: the frame of the fit

    # Samples are prepared once: the derivation and ceilings do not depend on the fitted values,
    # except the link efficiency, which is looked up per platform inside the loop.
    def _prepare(self, X: Sequence[TrainSample]):
        return [(derive(c, a, p, *trace), p, default_ratios(p, self.ratio_table)) for c, a, p, *trace in X]

    @staticmethod
    def _step_times(prepared, eff_values: dict[str, float], overrides: dict | None = None) -> np.ndarray:
        """(tokens/s, forward s, backward s, optimizer s) per row."""
        out = np.empty((len(prepared), 4))
        for i, (s, p, r) in enumerate(prepared):
            eff = SimpleNamespace(**platform_values(eff_values, p, overrides or {}))
            t = training_step_time(s, eff, ceilings(p, eff, r))  # type: ignore[arg-type]
            out[i, 0] = tokens_per_step(s) / t.total
            out[i, 1:] = t.phases
        return out

    @classmethod
    def _predict_prepared(cls, prepared, eff_values: dict[str, float], overrides: dict | None = None) -> np.ndarray:
        return cls._step_times(prepared, eff_values, overrides)[:, 0]

    def fit(self, X: Sequence[TrainSample], y: Sequence[float], phases: Sequence[Sequence[float | None]] | None = None,
            start: tuple[Efficiencies, dict[str, dict[str, float]]] | None = None, max_nfev: int | None = None,
            progress: Callable[[int], None] | None = None, ftol: float = 1e-8) -> "EfficiencyCorrection":
        """Fit to tokens/s ``y``; ``phases`` (forward, backward, optimizer seconds per step, None where not
        measured) add a residual per measured phase, so each parameter is held by the phase it acts on.

        ``start`` (parameters, platform factors), e.g. the bundled fit, is where the solver starts: the objective
        (and its pull toward the prior) is the same, only fewer iterations are needed when a few rows were added.
        ``max_nfev`` bounds the solver's evaluations (default 40 per unknown); ``progress(n)`` is told each one."""
        prior = self.prior or Efficiencies()
        base = prior.model_dump()
        y_arr = np.asarray(y, dtype=float)
        if len(X) != len(y_arr) or len(X) == 0:
            raise ValueError(f"X and y must be non-empty and of equal length, got {len(X)} and {len(y_arr)}")
        if not np.all(np.isfinite(y_arr)) or np.any(y_arr <= 0):
            raise ValueError("y must be positive, finite tokens/s")
        prepared = self._prepare(X)
        ph = np.array([[np.nan if v is None else v for v in row] for row in phases], float) if phases is not None \
            else np.full((len(X), 3), np.nan)
        ph_mask = np.isfinite(ph) & (ph > 1e-6)
        ph_safe = np.where(ph_mask, ph, 1.0)
        wph = math.sqrt(self.phase_weight)
        platforms = sorted({p.id for _, p, _ in prepared})
        slots = [(pid, k) for pid in platforms for k in self.platform_params]
        # a host's CPU Adam may differ by several times between servers (cores, AVX-512, launcher threads):
        # its factor is pulled toward 1 gently, so slow hosts do not drag the shared per-thread rate
        slot_w = np.array([0.1 if key == "cpu_adam_thread_gparams_s" else 1.0 for _, key in slots])
        k = len(self.params)
        z0 = np.concatenate([[_to_z(n, base[n]) for n in self.params], np.zeros(len(slots))])
        w, wp = math.sqrt(self.prior_weight), math.sqrt(self.platform_weight)
        x0 = z0
        if start is not None:
            eff0, factors0 = start
            x0 = np.concatenate([[_to_z(n, getattr(eff0, n)) for n in self.params],
                                 [math.log(factors0.get(pid, {}).get(key, 1.0)) for pid, key in slots]])
        calls = [0]

        def unpack(z: np.ndarray) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
            v = dict(base)
            v.update({n: _from_z(n, zi) for n, zi in zip(self.params, z[:k])})
            over: dict[str, dict[str, float]] = {}
            for (pid, key), zi in zip(slots, z[k:]):
                over.setdefault(pid, {})[key] = math.exp(zi)
            return v, over

        def residuals(z: np.ndarray) -> np.ndarray:
            calls[0] += 1
            if progress:
                progress(calls[0])
            out = self._step_times(prepared, *unpack(z))
            phase_res = wph * (np.log(np.maximum(out[:, 1:], 1e-9)) - np.log(ph_safe))[ph_mask]
            return np.concatenate([np.log(out[:, 0]) - np.log(y_arr), phase_res, w * (z[:k] - z0[:k]), wp * slot_w * z[k:]])

        jac: Any = "2-point"
        if k == 0:  # platform factors only (the fast refit): a factor moves its platform's rows alone
            row_platform = np.concatenate([[p.id for _, p, _ in prepared],
                                           np.repeat([p.id for _, p, _ in prepared], ph_mask.sum(axis=1)), [pid for pid, _ in slots]])
            jac = _grouped_jacobian(residuals, slots, row_platform, self.platform_params, diff_step=1e-3)
        sol = least_squares(residuals, x0, jac=jac, method="trf", x_scale=1.0, max_nfev=max_nfev or 40 * len(z0),
                            diff_step=1e-3, ftol=ftol)
        values, over = unpack(sol.x)
        self.efficiencies_ = Efficiencies(**values)
        self.platform_factors_ = {pid: {key: round(f, 4) for key, f in d.items()} for pid, d in over.items()}
        pred = self._predict_prepared(prepared, self.efficiencies_.model_dump(), self.platform_factors_)
        self.n_samples_ = len(X)
        self.train_mape_ = float(np.mean(np.abs(pred - y_arr) / y_arr))
        return self

    def predict(self, X: Sequence[TrainSample]) -> np.ndarray:
        """Tokens/s for each (case, arch, platform)."""
        eff = getattr(self, "efficiencies_", None)
        if eff is None:
            raise RuntimeError("EfficiencyCorrection is not fitted; call fit first")
        return self._predict_prepared(self._prepare(X), eff.model_dump(), self.platform_factors_)


def _grouped_jacobian(fun: Callable[[np.ndarray], np.ndarray], slots: list[tuple[str, str]], row_platform: np.ndarray,
                      keys: tuple[str, ...], diff_step: float) -> Callable[[np.ndarray], np.ndarray]:
    """The forward-difference Jacobian scipy's '2-point' computes (the same steps, ``diff_step`` relative), in one
    evaluation per platform factor's kind instead of one per platform and kind: the factors of one kind on every
    platform move together, and each residual row (``row_platform``: the platform of its sample, or of its factor's
    prior) takes the difference of its own platform's factor. A fast refit on 11 platforms: 5 evaluations a
    Jacobian, not 55."""
    slot_platform = np.array([pid for pid, _ in slots])

    def jac(x: np.ndarray) -> np.ndarray:
        f0 = fun(x)
        out = np.zeros((len(f0), len(x)))
        for key in keys:
            cols = [j for j, (_, kk) in enumerate(slots) if kk == key]
            # scipy's step for a requested relative one: diff_step x |x|, and where that is no step (x = 0) its
            # own sqrt(machine epsilon) x max(1, |x|)
            sign = np.where(x[cols] >= 0, 1.0, -1.0)
            h = diff_step * sign * np.abs(x[cols])
            h = np.where((x[cols] + h) - x[cols] == 0, np.finfo(float).eps ** 0.5 * sign * np.maximum(1.0, np.abs(x[cols])), h)
            xh = x.copy()
            xh[cols] += h
            h = xh[cols] - x[cols]  # the step as represented
            df = fun(xh) - f0
            for j, hj in zip(cols, h):
                rows = row_platform == slot_platform[j]
                rows[len(row_platform) - len(slots):] = False
                rows[len(row_platform) - len(slots) + j] = True  # the factor's own prior row
                out[rows, j] = df[rows] / hj
        return out

    return jac


ServeSample = tuple[ServeCase, ModelArch, PlatformSpec]

# What the serving fit may move. They are applied to serving predictions only, so fitting them to
# decode steps cannot disturb the training fit. The GEMM and attention terms start from training's values.
SERVING_FITTED = (
    "weight_stream_eff", "kv_read_eff", "graph_kernel_s", "decode_graph_overhead_s", "prefill_attention_eff",
    "moe_stream_eff", "quant_gemm_eff", "int4_stream_eff", "tp_allreduce_latency_s", "gemm_eff_max",
    "gemm_half_tokens", "attention_eff", "memory_eff", "generate_token_overhead_s", "kv_expand_factor", "prefill_kernel_s",
)


class ServingCorrection(BaseEstimator, RegressorMixin):
    """Fit the serving efficiencies to measured prefill and decode-step times (log space, prior pull).

    ``y`` rows are (prefill_s, decode_step_s, e2e_output_tokens_per_s); any may be None.
    ``predict`` returns the same triple. Predictions divide by the same probed ceilings as training
    (``ratio_table``: what probed machines of each GPU generation achieved), so a profile later replaces
    the ratios without correcting anything twice.
    """

    def __init__(self, prior: Efficiencies | None = None, params: tuple[str, ...] = SERVING_FITTED, prior_weight: float = 0.1,
                 ratio_table: dict | None = None) -> None:
        self.prior = prior
        self.params = params
        self.prior_weight = prior_weight
        self.ratio_table = ratio_table

    def _pairs(self, X: Sequence[ServeSample], values: dict[str, float]) -> np.ndarray:
        from models.calibration import from_fit
        from models.serving import predict_serving

        eff = Efficiencies.model_construct(**values)
        cals: dict[str, Any] = {}
        out = np.empty((len(X), 3))
        for i, (c, a, p) in enumerate(X):
            key = f"{p.id}/{p.count}"
            if key not in cals:
                cals[key] = from_fit(p, eff, None, self.ratio_table)
            pred = predict_serving(c, a, p, cals[key])
            out[i] = (pred.prefill_s, pred.decode_step_s, pred.e2e_output_tokens_per_s or np.nan)
        return out

    def fit(self, X: Sequence[ServeSample], y: Sequence[tuple[float | None, ...]]) -> "ServingCorrection":
        prior = self.prior or Efficiencies()
        base = prior.model_dump()
        y_arr = np.array([[np.nan if v is None else v for v in row] for row in y], dtype=float)
        mask = np.isfinite(y_arr) & (y_arr > 0)
        if len(X) == 0 or not mask.any():
            raise ValueError("no serving measurements with a prefill or decode time to fit")
        z0 = np.array([_to_z(n, base[n]) for n in self.params])
        w = math.sqrt(self.prior_weight)

        def values(z: np.ndarray) -> dict[str, float]:
            v = dict(base)
            v.update({n: _from_z(n, zi) for n, zi in zip(self.params, z)})
            return v

        def residuals(z: np.ndarray) -> np.ndarray:
            pred = self._pairs(X, values(z))
            pred = np.where(mask, pred, 1.0)
            return np.concatenate([(np.log(pred) - np.log(np.where(mask, y_arr, 1.0)))[mask], w * (z - z0)])

        sol = least_squares(residuals, z0, method="trf", max_nfev=40 * len(z0), diff_step=1e-3)
        self.efficiencies_ = Efficiencies(**values(sol.x))
        pred = self._pairs(X, self.efficiencies_.model_dump())
        self.n_samples_ = len(X)
        self.train_mape_ = float(np.mean(np.abs(pred[mask] - y_arr[mask]) / y_arr[mask]))
        return self

    def predict(self, X: Sequence[ServeSample]) -> np.ndarray:
        eff = getattr(self, "efficiencies_", None)
        if eff is None:
            raise RuntimeError("ServingCorrection is not fitted; call fit first")
        return self._pairs(X, eff.model_dump())
