"""Every command's --help at 80 columns: option names whole, every option described, no '<bool>', panels."""

from __future__ import annotations

import re

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from advisor import cli


def _commands():
    cli._register()
    return get_command(cli.app).commands


def _help(*args: str) -> str:
    r = CliRunner().invoke(cli.app, [*args, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("name", sorted(_commands()))
def test_help_fits_80_columns_with_every_option_whole_and_described(name: str) -> None:
    text = _help(name)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "<bool>" not in text and "BOOLEAN" not in text
    assert not re.search(r"--[\w-]+…", text), "an option name is cut"
    for p in _commands()[name].params:
        if getattr(p, "hidden", False):
            continue
        for opt in [*p.opts, *p.secondary_opts]:
            assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text), f"{name}: {opt} not shown whole"
        assert (p.help or "").strip(), f"{name} {p.opts[0]} has no description"


def test_recommend_help_is_grouped_into_panels() -> None:
    text = _help("recommend")
    titles = re.findall(r"╭─ (.+?) ─", text)
    assert titles[:1] == ["Options"] and {"Job", "Hardware", "Search", "Output"} <= set(titles), titles
    # the required options open the help; the serving-only ones are in their own panel
    first = text.split("╭─ ")[1]
    assert all(o in first for o in ("--hardware", "--task", "--model"))
    serving = next(part for part in text.split("╭─ ") if part.startswith("Serving"))
    assert "--max-tpot-ms" in serving and "--seq-len" not in serving


def test_a_choice_option_names_its_values() -> None:
    from advisor.commands.validate import Holdout

    text = " ".join(_help("validate").split())
    values = ", ".join(h.value for h in Holdout)
    assert re.search(rf"--holdout CHOICE .*one of: {values}", text)


def test_the_hugging_face_recipe_wraps_under_its_step_at_80_columns(tmp_path) -> None:
    args = ["deepspeed-config", "--model", "7b", "--method", "qlora", "--out", str(tmp_path / "ds.json")]
    r = CliRunner().invoke(cli.app, args, env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    recipe = r.stdout[r.stdout.index("With Hugging Face"):].splitlines()
    for line in recipe:
        assert len(line) <= 80 or len(line.split()) == 1, line  # only a path longer than the screen runs over
    steps = [i for i, line in enumerate(recipe) if re.match(r"  \d\. ", line)]
    assert len(steps) >= 4
    for i in range(len(recipe)):  # a continuation hangs under its step's text: nothing starts at column 0
        assert i == 0 or recipe[i].startswith("  "), recipe[i]
    text = " ".join(" ".join(recipe).split())
    assert "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4'," in text
