"""The validation report, cached: the leave-one-group-out fits take minutes, the report they give changes
only when the data, the fitted model's code or the bundled profiles change.

A report is stored with a fingerprint of those inputs; ``cached_report`` returns it only while the
fingerprint still matches. The bundled report (``knowledge/calibration/validation-*.json``, written by
``advisor calibrate``) answers on a fresh install; a user's recomputed report goes under ADVISOR_HOME.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from knowledge.efficiency import CALIBRATION_DIR
from knowledge.store import atomic_write_json

_ROOT = Path(__file__).resolve().parents[1]
# the code whose change changes the numbers
_CODE = ("models", "advisor/evaluation.py", "advisor/calibrate.py", "advisor/validation.py", "advisor/predictor.py",
         "knowledge/efficiency.py", "knowledge/measurements.py")


def fingerprint(data: str, holdout: str) -> str:
    from advisor.calibrate import measurements
    from knowledge.paths import BUNDLED_PROFILES

    h = hashlib.sha256(f"{data}|{holdout}".encode())
    for m in measurements(data)[0]:
        h.update(m.model_dump_json().encode())
    for p in sorted(BUNDLED_PROFILES.glob("*.json")):
        h.update(p.read_bytes())
    from advisor.traces import BUNDLED_TRACES
    from knowledge.traces import TRACE_SCHEMA

    # the traced families' rows are fitted through their traces: what they hold changes with the tracer's schema (a
    # file's bytes also change with its timings, when probes.bundle_traces traces it again)
    h.update(str(TRACE_SCHEMA).encode())
    for p in sorted(BUNDLED_TRACES.glob("*.json")):
        h.update(p.name.encode())
    for rel in _CODE:
        path = _ROOT / rel
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            if f.exists():
                h.update(f.read_bytes())
    return h.hexdigest()


def _name(data: str, holdout: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in data)
    return f"validation-{safe}-{holdout}.json"


def _paths(data: str, holdout: str) -> list[Path]:
    from knowledge.paths import user_calibration_path

    return [user_calibration_path(create=False).parent / _name(data, holdout), CALIBRATION_DIR / _name(data, holdout)]


def cached_report(data: str, holdout: str) -> dict[str, Any] | None:
    """The stored report for (data, holdout) if its inputs have not changed since, else None."""
    fp = None
    for path in _paths(data, holdout):
        if not path.is_file():
            continue
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        fp = fp or fingerprint(data, holdout)
        if stored.get("fingerprint") == fp:
            return stored["report"]
    return None


def store_report(data: str, holdout: str, report: dict[str, Any], bundled: bool = False) -> Path:
    """Keep ``report`` under ADVISOR_HOME (or, for ``advisor calibrate --bundled``, in the package)."""
    path = CALIBRATION_DIR / _name(data, holdout) if bundled else _paths(data, holdout)[0]
    atomic_write_json(path, {"fingerprint": fingerprint(data, holdout), "report": report})
    return path
