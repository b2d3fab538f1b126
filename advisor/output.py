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


def fail_input(error: Exception) -> NoReturn:
    """``fail`` for bad input (an AdvisorError): exit 2 where it says the input was malformed (its ``exit_code``: a
    platform file or config.json that is not JSON or has a field of the wrong JSON type), else 1."""
    fail(str(error), code=getattr(error, "exit_code", 1))


def check_writable(path, flag: str, *, folder: bool = False) -> None:
    """Exit 2 in one line, before any work, when ``path`` (a file, or with ``folder`` a directory to
    create files in) cannot be written: it is a directory (a file for ``folder``), an ancestor is a
    file, or the nearest existing folder is not writable. Missing folders are fine: they are created."""
    import os
    from pathlib import Path

    path = Path(path)
    if not folder and path.is_dir():
        fail(f"{flag} {str(path)!r} is a directory", code=2)
    if not folder and path.exists() and not path.is_file():  # /dev/null, a FIFO: a rename would replace it
        fail(f"{flag} {str(path)!r} is not a regular file", code=2)
    if folder and path.exists() and not path.is_dir():
        fail(f"{flag} {str(path)!r} is not a directory", code=2)
    probe = path if folder else path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        fail(f"{flag} {str(path)!r}: {str(probe)!r} is not a directory", code=2)
    if not os.access(probe, os.W_OK | os.X_OK):
        fail(f"{flag} {str(path)!r}: {str(probe)!r} is not writable", code=2)


def warn(message: str) -> None:
    err_console.print(Text.assemble(("warning: ", "yellow"), one_line(message)))


def json_line(obj: BaseModel | dict) -> str:
    """One JSON line; ids with lone surrogates are escaped (``\\ud800``), so they round-trip instead of failing."""
    import json

    data = obj.model_dump(mode="json", exclude_none=True) if isinstance(obj, BaseModel) else obj
    if isinstance(obj, BaseModel) and "id" in type(obj).model_fields and "id" not in data:
        data = {"id": None, **data}  # the contract's error line always has its id, null when the case had none
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


def print_hanging(line: str) -> None:
    """A line of prose wrapped to the console's width under its own indent ('  1. ' hangs the rest under the
    text), broken only at spaces: an id or a path is never cut, and code broken inside its parentheses
    stays valid Python when copied."""
    import re
    import textwrap

    lead = re.match(r"\s*(?:\d+\. )?", line).group(0)
    hang = " " * len(lead) + ("" if lead.strip() else "  ")
    width = max(console.width, 40)
    text = textwrap.fill(line[len(lead):], width=width, initial_indent=lead, subsequent_indent=hang,
                         break_long_words=False, break_on_hyphens=False)
    console.print(text, highlight=False, markup=False, soft_wrap=True)
