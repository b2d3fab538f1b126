"""`--help` that reads at 80 columns: option names whole, a short value name, ranges only where they inform.

Typer's own options panel gives the option names, a type column (``<int range> [1<=x<=1099511627776]``)
and the help the same share of the width, so at 80 columns it cuts names (``--global-batch-toke…``) and
long words of the help. Here each option is one cell ``--seq-len, -s INT`` that is never wrapped, and the
help gets the rest of the width. Panels (``rich_help_panel``) are kept as typer groups them.
"""

from __future__ import annotations

from typing import Any

# a bound this large is a guard against nonsense, not something a user needs to read
_INFORMATIVE_BOUND = 10_000


def value_name(param: Any, ctx: Any) -> str:
    """INT, FLOAT, PATH, TEXT or CHOICE for an option that takes a value; '' for a flag."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    if getattr(param, "metavar", None):
        return str(param.metavar)
    shown = str(_original_display_type(param, ctx) or "").lower()
    if "|" in shown:
        return "CHOICE"
    for word, name in (("int", "INT"), ("float", "FLOAT"), ("path", "PATH"), ("file", "PATH")):
        if word in shown:
            return name
    return "TEXT"


def choices(param: Any, ctx: Any) -> list[str]:
    """The values a choice option takes (typer shows them as '<a|b|c>')."""
    shown = str(_original_display_type(param, ctx) or "")
    return [c for c in shown.strip("<>[]{}").split("|") if c] if "|" in shown else []


def choices_hint(param: Any, ctx: Any) -> str:
    """'one of: gpu, platform, model' when the help does not already name every value."""
    values = choices(param, ctx)
    said = getattr(param, "help", None) or ""
    return "one of: " + ", ".join(values) if values and not all(v in said for v in values) else ""


def range_hint(param: Any) -> str:
    """'[1<=x<=100]' for a range a user may run into; '' for the guards of huge bounds."""
    lo, hi = getattr(param, "min", None), getattr(param, "max", None)
    if hi is None or abs(hi) > _INFORMATIVE_BOUND:
        return ""
    get = getattr(param, "_get_number_range_help_str", None)
    return f"[{get()}]" if get and get() else ""


def option_names(param: Any) -> str:
    """'--seq-len, -s INT' or '--recompute / --no-recompute'."""
    longs = [o for o in param.opts if o.startswith("--")] + [o for o in param.opts if not o.startswith("--")]
    text = ", ".join(longs)
    if getattr(param, "secondary_opts", None):
        text += " / " + ", ".join(param.secondary_opts)
    return text


def _original_display_type(param: Any, ctx: Any) -> str | None:
    try:
        return param.display_type_rich(ctx)
    except (AttributeError, TypeError):  # another typer: a type we cannot name is shown as TEXT
        return None


def _options_panel(*, name: str, params: list, ctx: Any, markup_mode: Any, console: Any) -> None:
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils as ru

    if not params:
        return
    table = Table(show_header=False, box=None, expand=True, padding=(0, 1), pad_edge=False)
    table.add_column(no_wrap=True)  # the required mark
    table.add_column(no_wrap=True)  # names and value: never cut, never wrapped
    table.add_column(ratio=1, overflow="fold")
    for p in params:
        cell = Text(option_names(p), style=ru.STYLE_OPTION)
        value = value_name(p, ctx) if getattr(p, "param_type_name", "option") == "option" else ""
        if value:
            cell.append(" " + value, style=ru.STYLE_TYPES)
        help_ = ru._get_parameter_help(param=p, ctx=ctx, markup_mode=markup_mode)
        extra = " ".join(h for h in (choices_hint(p, ctx), range_hint(p)) if h)
        if extra:
            help_ = Group(help_, Text(extra, style=ru.STYLE_OPTION_DEFAULT))
        required = Text(ru.REQUIRED_SHORT_STRING, style=ru.STYLE_REQUIRED_SHORT) if p.required else ""
        table.add_row(required, cell, help_)
    console.print(Panel(table, border_style=ru.STYLE_OPTIONS_PANEL_BORDER, title=name, title_align=ru.ALIGN_OPTIONS_PANEL))


def install() -> None:
    """Use the panel above for every command's --help (once; keeps typer's own if its internals differ)."""
    from typer import rich_utils as ru
    original = getattr(ru, "_print_options_panel", None)
    if original is None or getattr(original, "_advisor", False):
        return
    def panel(**kw: Any) -> None:
        try:
            _options_panel(**kw)
        except (AttributeError, TypeError):  # another typer's internals: its own panel, never no help
            original(**kw)

    panel._advisor = True  # type: ignore[attr-defined]
    ru._print_options_panel = panel

