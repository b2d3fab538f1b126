"""The one entry point every prediction goes through: resolve names, then call the pure models.

``Predictor.predict`` raises ``AdvisorError`` for cases it cannot handle; ``predict_many`` turns those
into contract error lines so one bad case never stops the others.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import CALIBRATION_DIR, Efficiencies, load_efficiencies, load_platform_factors
from knowledge.errors import AdvisorError
from knowledge.schema import ErrorLine, Profile, ServeCase, ServePrediction, TrainCase, TrainPrediction
from knowledge.schema import PlatformSpec
from models.platform_factors import platform_values
from models.training import predict_training

Prediction = TrainPrediction | ServePrediction


@lru_cache(maxsize=1)
def held_out_error() -> dict[str, float]:
    """Held-out MAPE per task from the last fit (knowledge/calibration/fitted.json), for intervals."""
    path = CALIBRATION_DIR / "fitted.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    out = dict(data.get("held_out_mape", {}))
    decode = data.get("serving_held_out_by_gpu", {}).get("decode_step_s", {}).get("mape")
    if decode:
        out["serve"] = decode
    return out


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
    eff = eff or load_efficiencies()
    factors = load_platform_factors()
    if platform.id not in factors:
        return eff
    return Efficiencies(**platform_values(eff.model_dump(), platform, factors))


def local_efficiencies(platform: PlatformSpec, eff: Efficiencies, profile: Profile | None = None) -> Efficiencies:
    """What a prediction on ``platform`` uses: the fit, the platform's learned factors, then the probes."""
    from models.roofline import apply_profile

    return apply_profile(efficiencies_for(platform, eff), platform, profile)


class Predictor:
    """Predicts contract cases with the bundled (fitted) efficiencies, adjusted by a probe profile."""

    def __init__(self, profile: Profile | None = None, efficiencies: Efficiencies | None = None) -> None:
        self.profile = profile
        self.efficiencies = efficiencies or load_efficiencies()
        self.serving_efficiencies = efficiencies  # None: the bundled serving fit

    def _profile_for(self, gpu_id: str) -> Profile | None:
        # a profile measured on one GPU kind says nothing about another
        if self.profile is None or (self.profile.gpu_id and self.profile.gpu_id != gpu_id):
            return None
        return self.profile

    def predict(self, case: TrainCase | ServeCase) -> Prediction:
        platform = resolve_platform(case.hardware, getattr(case, "gpus", None))
        arch = resolve_model(case.model)
        profile = self._profile_for(platform.gpu.id)
        eff = efficiencies_for(platform, self.efficiencies)
        if isinstance(case, TrainCase):
            return predict_training(case, arch, platform, eff, profile, held_out_error().get(case.task))
        from models.serving import predict_serving

        serve_eff = self.serving_efficiencies or load_efficiencies(task="serve")
        return predict_serving(case, arch, platform, serve_eff, profile, held_out_error().get("serve"))

    def predict_or_error(self, case: TrainCase | ServeCase) -> Prediction | ErrorLine:
        try:
            return self.predict(case)
        except AdvisorError as e:
            return ErrorLine(id=case.id, error=str(e))
        except (OverflowError, ZeroDivisionError) as e:  # sizes so extreme the arithmetic breaks
            return ErrorLine(id=case.id, error=f"case too large to compute ({type(e).__name__})")
