"""Reading case files (JSON lines) into contract cases, with the contract's two kinds of failure.

A *malformed* file (a line that is not a JSON object, a field of the wrong type) is rejected whole:
``MalformedFile`` names the line and the field. A well-formed case the advisor cannot handle (an
unknown value, an impossible combination) becomes a per-case error and the other cases still run.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from knowledge.errors import AdvisorError
from knowledge.schema import Case, ServeCase, TrainCase

_ADAPTER: TypeAdapter = TypeAdapter(Case)
_FIELDS = sorted(set(TrainCase.model_fields) | set(ServeCase.model_fields))
# pydantic error types that mean "the file is malformed" rather than "this value is not supported"
_MALFORMED_SUFFIXES = ("_type", "_parsing")


class MalformedFile(ValueError):
    """The file is not JSON lines of case objects; the message names line and field."""


def _field(err: dict[str, Any]) -> str:
    loc = [str(x) for x in err["loc"] if x not in ("pretrain", "finetune", "serve", "TrainCase", "ServeCase")]
    return ".".join(loc) or "case"


def validation_message(e: ValidationError) -> str:
    """One line for the first error: the field, what was wrong, the closest valid names."""
    err = e.errors()[0]
    field = _field(err)
    if err["type"] == "extra_forbidden":
        close = difflib.get_close_matches(field, _FIELDS, n=3, cutoff=0.5)
        hint = f"; closest: {', '.join(close)}" if close else ""
        return f"unknown field {field!r}{hint}"
    if err["type"] == "union_tag_invalid":
        return f"task: {err['input']!r} is not one of 'pretrain', 'finetune', 'serve'"
    if err["type"] == "union_tag_not_found":
        return "task: missing (one of 'pretrain', 'finetune', 'serve')"
    msg = err["msg"].replace("\n", " ")
    return f"{field}: {msg} (got {err.get('input')!r})"


def parse_case(obj: dict[str, Any]) -> TrainCase | ServeCase:
    """Validate one case object; raises AdvisorError (per-case) or MalformedFile (wrong types)."""
    try:
        return _ADAPTER.validate_python(obj)
    except ValidationError as e:
        err = e.errors()[0]
        if err["type"].endswith(_MALFORMED_SUFFIXES) or _wrong_literal_type(err):
            raise MalformedFile(f"field {_field(err)!r}: {err['msg']} (got {err.get('input')!r})") from None
        raise AdvisorError(validation_message(e)) from None


def _wrong_literal_type(err: dict[str, Any]) -> bool:
    """A choice field given a value of another JSON type (``"method": 5``) is malformed, not unsupported."""
    if err["type"] != "literal_error":
        return False
    expected = err.get("ctx", {}).get("expected", "")
    value = err.get("input")
    wants_str = "'" in expected
    return (isinstance(value, str) != wants_str) or isinstance(value, (bool, list, dict)) or value is None


def read_cases(text: str) -> list[tuple[int, dict[str, Any] | None, TrainCase | ServeCase | None, str | None]]:
    """Parse every line: (line number, raw object, case or None, per-case error or None).

    Raises MalformedFile for the first malformed line, naming its number.
    """
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise MalformedFile(f"line {n}: not JSON ({e.msg} at column {e.colno})") from None
        except (RecursionError, ValueError) as e:  # nesting too deep, an integer of thousands of digits
            raise MalformedFile(f"line {n}: not a usable JSON object ({type(e).__name__})") from None
        if not isinstance(obj, dict):
            raise MalformedFile(f"line {n}: expected a JSON object, got {type(obj).__name__}")
        if "id" in obj and not isinstance(obj["id"], str):
            raise MalformedFile(f"line {n}: field 'id' must be a string, got {obj['id']!r}")
        try:
            out.append((n, obj, parse_case(obj), None))
        except MalformedFile as e:
            raise MalformedFile(f"line {n}: {e}") from None
        except AdvisorError as e:
            out.append((n, obj, None, str(e)))
    return out


def case_from_arg(text: str) -> TrainCase | ServeCase:
    """One case given on the command line: inline JSON (starts with ``{``) or a path to a JSON file.

    Raises MalformedFile (unreadable, not JSON, wrong types) or AdvisorError (unsupported values).
    """
    try:
        obj = json.loads(text if text.strip().startswith("{") else Path(text).read_text())
    except (OSError, ValueError, RecursionError) as e:
        raise MalformedFile(f"neither inline JSON nor a readable JSON file ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
    if not isinstance(obj, dict):
        raise MalformedFile(f"expected a JSON object, got {type(obj).__name__}")
    return parse_case(obj)
