"""Console output shared by the commands: JSON lines on stdout, one-line errors on stderr."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

err_console = Console(stderr=True, highlight=False, soft_wrap=True)
console = Console(highlight=False)


def one_line(message: str) -> str:
    """``message`` as one printable line: newlines and control characters become spaces, lone
    surrogates (an id read from ``"\\ud800"``) their ``\\u`` escape, so printing it can never fail."""
    text = " ".join(str(message).split())
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on one line of stderr and exit with ``code``."""
    err_console.print(Text.assemble(("error: ", "bold red"), one_line(message)))
    raise typer.Exit(code)


def warn(message: str) -> None:
    err_console.print(Text.assemble(("warning: ", "yellow"), one_line(message)))


def json_line(obj: BaseModel | dict) -> str:
    """One JSON line; ids with lone surrogates are escaped (``\\ud800``), so they round-trip instead of failing."""
    import json

    data = obj.model_dump(mode="json", exclude_none=True) if isinstance(obj, BaseModel) else obj
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, ensure_ascii=True, allow_nan=False)
    return text


def print_json_line(obj: BaseModel | dict) -> None:
    text = json_line(obj) + "\n"
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:  # a terminal that is not UTF-8
        sys.stdout.write(text.encode("ascii", "backslashreplace").decode("ascii"))
    sys.stdout.flush()
