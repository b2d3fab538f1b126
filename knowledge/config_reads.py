"""What transformers' config classes said of a config.json, kept under ``ADVISOR_HOME/config_reads/``.

Asking them imports transformers, torch and scikit-learn (6-8 s on two cores: a Falcon config.json that names its
sizes Falcon's way, a multimodal checkpoint's text config), and the answer depends on the file and the transformers
release only. A repeated ``recommend`` of such a model then needs no import (issue 21: under two seconds after the
first). An unwritable home answers all the same and keeps nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

from knowledge.causal_lm_types import installed_transformers
from knowledge.paths import advisor_home
from knowledge.store import atomic_write_json


def kept(kind: str, question: Any, answer: Callable[[], Any]) -> Any:
    """``answer()`` as JSON reads it back (a tuple a list, keys strings), or what it was before for the same ``kind``
    of ``question`` under this transformers release."""
    blob = json.dumps([kind, installed_transformers(), question], sort_keys=True, default=str)
    path = advisor_home() / "config_reads" / f"{kind}-{hashlib.sha256(blob.encode()).hexdigest()[:20]}.json"
    try:
        record = json.loads(path.read_text())
        if record.get("question") == blob:  # a hash collision or a torn file is asked again
            return record["value"]
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    # as JSON gives it back, the first time too: one answer whether asked or kept (id2label's keys become strings)
    value = json.loads(json.dumps(answer()))
    try:
        atomic_write_json(path, {"question": blob, "value": value}, indent=None)
    except OSError:
        pass
    return value
