"""Models by Hugging Face hub id (``Qwen/Qwen2.5-7B``): the config from the local cache, else from the hub.

Only ``config.json`` is read (through ``transformers.AutoConfig``), never weights. Catalog models are
matched by the repo their config came from first (``knowledge.catalog.hub_ids``), so they need neither.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from knowledge.catalog import _HF_KEYS, arch_from_hf_config, language_model_config, validation_text
from knowledge.errors import AdvisorError
from knowledge.schema import ModelArch

HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$", re.ASCII)  # ASCII: "Ｑwen/x" is no hub id


def hub_config(repo_id: str) -> dict[str, Any]:
    """A hub model's config.json: from the local Hugging Face cache, else (when online) from the hub.

    Raises AdvisorError in one line when neither has it. Only the config is read, never weights.
    """
    import os

    cached = _in_local_cache(repo_id)
    offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or os.environ.get("TRANSFORMERS_OFFLINE", "") not in ("", "0")
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    # fail fast (well under a second) before importing transformers: not cached, and offline or unreachable
    if not cached and not offline and not _reachable(endpoint):
        raise AdvisorError(f"model {repo_id!r} is neither a catalog name nor in the local Hugging Face cache, and "
                           f"{endpoint} cannot be reached; pass a config.json path or a catalog name")
    try:
        from transformers import AutoConfig
    except Exception as e:  # noqa: BLE001 - transformers missing or broken
        raise AdvisorError(f"model {repo_id!r}: reading a hub id needs transformers ({type(e).__name__})") from None

    if cached:
        try:
            return AutoConfig.from_pretrained(repo_id, local_files_only=True).to_dict()
        except Exception:  # noqa: BLE001 - not in the local cache: try the hub below
            pass
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or os.environ.get("TRANSFORMERS_OFFLINE", "") not in ("", "0"):
        raise AdvisorError(f"model {repo_id!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; "
                           "pass its config.json path or a catalog name")
    import logging

    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    try:
        return AutoConfig.from_pretrained(repo_id).to_dict()
    except Exception as e:  # noqa: BLE001 - offline, gated, misspelt: one line either way
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise AdvisorError(f"model {repo_id!r} is neither a catalog name nor in the local Hugging Face cache, and the hub "
                           f"did not give its config ({first}); pass a config.json path or a catalog name") from None


def _in_local_cache(repo_id: str) -> bool:
    """Is ``repo_id`` in the local Hugging Face cache (``models--org--name`` under HF_HUB_CACHE / HF_HOME/hub)?
    A local directory with a config.json counts too."""
    import os
    from pathlib import Path

    if (Path(repo_id) / "config.json").is_file():
        return True
    home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
    hub = Path(os.environ.get("HF_HUB_CACHE", os.environ.get("HUGGINGFACE_HUB_CACHE", home / "hub")))
    return (hub / ("models--" + repo_id.replace("/", "--"))).is_dir()


def _reachable(url: str, timeout_s: float = 0.8) -> bool:
    """Can a TCP connection to ``url``'s host be opened within ``timeout_s``, name lookup included? (no retries,
    no noise). Run in a daemon thread so that a resolver stuck offline cannot hold the answer past the limit."""
    import socket
    import threading
    from urllib.parse import urlparse

    u = urlparse(url)
    ok = [False]

    def attempt() -> None:
        try:
            with socket.create_connection((u.hostname or "", u.port or (443 if u.scheme == "https" else 80)), timeout=timeout_s):
                ok[0] = True
        except OSError:
            pass

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(timeout_s)
    return ok[0]


@lru_cache(maxsize=64)
def hub_model(repo_id: str) -> ModelArch:
    cfg = hub_config(repo_id)
    if "text_config" in cfg and "hidden_size" not in cfg:  # a multimodal wrapper: its language model, read complete
        cfg = language_model_config(cfg) or {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", cfg.get("model_type"))}
    missing = [k for k in _HF_KEYS[:4] + ("vocab_size",) if k not in cfg]
    if missing:
        raise AdvisorError(f"model {repo_id!r}: its config lacks {', '.join(missing)} (only Llama-style decoders)")
    try:
        return arch_from_hf_config(cfg, name=repo_id)
    except ValidationError as e:
        raise AdvisorError(f"model {repo_id!r}: {validation_text(e.errors()[0])}") from None
