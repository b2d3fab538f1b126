"""Durable files: atomic whole-file writes and lock-protected appends of JSON lines.

Every file the advisor writes goes through here, so a crash or a second process never leaves half a
file or loses a line that was there.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | Path, obj: Any) -> None:
    if isinstance(obj, BaseModel):
        text = obj.model_dump_json(indent=2)
    else:
        text = json.dumps(obj, indent=2, sort_keys=True)
    atomic_write_text(path, text + "\n")


def append_jsonl(path: str | Path, rows: Iterable[BaseModel | dict]) -> int:
    """Append rows under an exclusive lock; each row is one line written with a single write call."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(
        (r.model_dump_json() if isinstance(r, BaseModel) else json.dumps(r, sort_keys=True)) + "\n" for r in rows
    )
    with open(path, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    return lines.count("\n")


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line number, object or None, error or None); a corrupt or truncated line is reported, not fatal."""
    with open(path) as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                yield n, None, f"{path}:{n}: not JSON ({e.msg})"
                continue
            if not isinstance(obj, dict):
                yield n, None, f"{path}:{n}: not a JSON object"
                continue
            yield n, obj, None
