"""Which ``model_type``s transformers builds as a causal LM, without importing transformers where we can.

Importing ``transformers.models.auto.modeling_auto`` takes about 5 s on two cores, and every ``recommend`` of a
config.json outside our summary table asked it. The pinned release's answer ships in
``knowledge/data/causal_lm_types.json`` and is used while that release is the installed one; another release is asked.

    python -m knowledge.causal_lm_types   # rewrite the table from the installed transformers
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

TABLE = Path(__file__).parent / "data" / "causal_lm_types.json"


def installed_transformers() -> str | None:
    """The installed transformers release (read from its metadata: no import), None without it."""
    try:
        return version("transformers")
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def lm_model_types() -> tuple[frozenset[str], frozenset[str]]:
    """(causal-LM model types, masked-LM model types) of the installed transformers; empty sets without it."""
    installed = installed_transformers()
    if installed is None:
        return frozenset(), frozenset()
    table = json.loads(TABLE.read_text())
    if table["transformers"] == installed:
        return frozenset(table["causal_lm"]), frozenset(table["masked_lm"])
    try:
        return _asked()
    except ImportError:  # pragma: no cover - a broken install
        return frozenset(), frozenset()


def _asked() -> tuple[frozenset[str], frozenset[str]]:
    """(causal-LM, masked-LM) model types as the installed transformers maps them (imports it: ~5 s on two cores)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    return frozenset(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), frozenset(MODEL_FOR_MASKED_LM_MAPPING_NAMES)


def table_of_installed() -> dict:
    """The table as the installed transformers lists it."""
    causal, masked = _asked()
    return {
        "source": f"transformers {installed_transformers()}: the keys of transformers.models.auto.modeling_auto's "
                  "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and MODEL_FOR_MASKED_LM_MAPPING_NAMES (python -m knowledge.causal_lm_types)",
        "transformers": installed_transformers(),
        "causal_lm": sorted(causal),
        "masked_lm": sorted(masked),
    }


if __name__ == "__main__":
    from knowledge.store import atomic_write_json

    atomic_write_json(TABLE, table_of_installed())
