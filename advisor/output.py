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


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on one line of stderr and exit with ``code``."""
    err_console.print(Text.assemble(("error: ", "bold red"), message.replace("\n", " ")))
    raise typer.Exit(code)


def warn(message: str) -> None:
    err_console.print(Text.assemble(("warning: ", "yellow"), message))


def print_json_line(obj: BaseModel | dict) -> None:
    import json

    text = obj.model_dump_json(exclude_none=True) if isinstance(obj, BaseModel) else json.dumps(obj)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
