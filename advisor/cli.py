"""The `advisor` command: one root Typer app, one module per command under advisor/commands/."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="advisor",
    help="Pick the fastest LLM training/serving configuration that fits your GPUs, predict it, prove it.",
    no_args_is_help=True,
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
