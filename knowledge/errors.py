"""The one error type the advisor raises for bad input: its message is a single line fit for a user."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AdvisorError(ValueError):
    """Bad input (unknown name, impossible combination). ``str(e)`` is one line naming the bad value."""


def unknown(kind: str, value: object, valid: Iterable[str]) -> AdvisorError:
    """An error naming ``value`` and the closest valid names."""
    valid = sorted(set(valid))
    close = difflib.get_close_matches(str(value).lower(), valid, n=3, cutoff=0.5)
    hint = f"closest: {', '.join(close)}" if close else f"valid: {', '.join(valid[:12])}{' …' if len(valid) > 12 else ''}"
    return AdvisorError(f"unknown {kind} {value!r}; {hint}")
