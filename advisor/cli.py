"""The `advisor` command: one root Typer app, one module per command under advisor/commands/."""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer import _click as click
from typer.core import TyperGroup


class OneLineErrors(TyperGroup):
    """Usage errors as one ``error:`` line on stderr (exit 2), not click's usage block or Rich's box.

    Whatever escapes a command is turned into one line too: a traceback is never the interface.
    """

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        from advisor.output import one_line

        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            names = sorted(getattr(e.ctx.command, "commands", {}) or {})
            what = f"a command: {', '.join(names)}" if names else "options"
            click.echo(f"error: {e.ctx.command_path}: missing {what} (see --help)", err=True)
            code = e.exit_code
        except click.exceptions.ClickException as e:
            where = f"{e.ctx.command_path}: " if getattr(e, "ctx", None) is not None else ""
            got = _given(e, sys.argv[1:] if args is None else list(args))
            names = sorted(getattr(getattr(e, "ctx", None) and e.ctx.command, "commands", None) or {})
            if names and e.format_message().startswith(("Missing command", "No such command")):
                got += f" (one of: {', '.join(names)})"
            message = _finite(one_line(e.format_message()).replace("Value error, ", ""), got)
            if got and got[len(" (got "):-1] in message:
                got = ""  # the message quotes the value already
            click.echo(f"error: {where}{message}{got}{_did_you_mean(e.format_message())}", err=True)
            code = e.exit_code
        except typer.Abort:
            click.echo("error: aborted", err=True)
            code = 1
        except RecursionError:
            click.echo("error: input nested too deeply", err=True)
            code = 2
        except MemoryError:
            click.echo("error: out of memory (input too large)", err=True)
            code = 1
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            code = 130
        except Exception as e:  # noqa: BLE001 - a bug must still read as one line, never a traceback
            click.echo(f"error: internal error ({type(e).__name__}: {one_line(str(e))[:300]})", err=True)
            code = 1
        else:
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        if standalone_mode:
            sys.exit(code)
        return code


def _did_you_mean(message: str) -> str:
    """" (did you mean 'finetune'?)" for a value that is not one of a choice list, when one is close."""
    import difflib
    import re

    m = re.search(r"'([^']*)' is not one of (.*)", message)
    if not m:
        return ""
    choices = re.findall(r"'([^']+)'", m[2])
    given = m[1].strip().lower()
    close = [c for c in choices if given.startswith(c) or c.startswith(given)] or difflib.get_close_matches(given, choices, 1, 0.6)
    return f" (did you mean {close[0]!r}?)" if close and given else ""


def _finite(message: str, got: str) -> str:
    """A float option given NaN or infinity fails its bound check ("should be ≤ 1048576"), which says nothing of
    why: say it must be a finite number. (An integer option's "not a valid integer" already says what it takes.)"""
    import math

    try:
        value = float(got[len(" (got '"):-2]) if got else 0.0
    except ValueError:
        return message
    if math.isfinite(value) or "integer" in message or "Invalid value for " not in message:
        return message
    return message.split("': ", 1)[0] + "': must be a finite number"


def _given(e: Exception, args: list[str]) -> str:
    """`` (got '0')``: the value the user gave the option a BadParameter names, when it can be found."""
    param = getattr(e, "param", None)
    opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
    if not opts or isinstance(e, click.exceptions.MissingParameter):
        return ""
    for i, a in enumerate(args):
        for o in opts:
            if a == o and i + 1 < len(args):
                return f" (got {args[i + 1]!r})"[:200]
            if a.startswith(o + "="):
                return f" (got {a[len(o) + 1:]!r})"[:200]
    return ""


def _flag_type_hidden() -> None:
    """Help lists a flag without a type (`--json`, not `--json <bool>`): a flag takes no value."""
    from typer.core import TyperOption

    original = getattr(TyperOption, "display_type_rich", None)
    if original is None or getattr(original, "_advisor", False):
        return  # a typer without this hook (the lent GPU machines' typer: `advisor` crashed at import there)

    def display_type_rich(self, ctx):  # type: ignore[no-untyped-def]
        return None if getattr(self, "is_flag", False) else original(self, ctx)

    display_type_rich._advisor = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flag_type_hidden()


def _help_format() -> None:
    from advisor.help_format import install

    install()


_help_format()

app = typer.Typer(
    name="advisor",
    cls=OneLineErrors,
    help="Pick the fastest LLM training/serving configuration that fits your GPUs, predict it, prove it.",
    no_args_is_help=False,  # no command is a usage error: one line, not the help screen
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Pick the fastest LLM training/serving configuration that fits your GPUs, predict it, prove it."""


def _register() -> None:
    if app.registered_commands:
        return
    # Imported here so that `advisor --help` stays fast and a broken optional module names itself.
    from advisor.commands import catalog, compare, confirm, deepspeed_config, predict, probe, recommend, validate

    for module in (predict, recommend, deepspeed_config, validate, probe, confirm, compare, catalog):
        module.register(app)


def main() -> None:
    _register()
    app()


if __name__ == "__main__":
    main()
