"""`advisor hardware` and `advisor models` read like a catalog: public sources, whole words, whole hub ids."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from advisor import cli

KNOWLEDGE = Path(__file__).resolve().parents[1] / "knowledge"
# words of the environment the data was gathered in: they mean nothing to a user and cannot be looked up
ENVIRONMENT_WORDS = re.compile(r"\b(lent|workplace|device tool|device machine|KINDS\.md|session|lease)\b", re.I)


def _run(*args: str):
    cli._register()
    r = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    return r.stdout


def test_no_source_speaks_of_the_environment():
    for path in sorted((KNOWLEDGE / "data").rglob("*.json")):
        text = path.read_text()
        assert not ENVIRONMENT_WORDS.search(text), f"{path.name}: {ENVIRONMENT_WORDS.search(text).group(0)!r}"
    shown = _run("hardware") + _run("hardware", "--json")
    assert not ENVIRONMENT_WORDS.search(shown)


def test_sources_are_never_cut_mid_word():
    text = _run("hardware")
    cells = " ".join(line.split("│")[-2].strip() for line in text.splitlines() if line.count("│") >= 3)
    words = set(cells.split())
    rows = json.loads(_run("hardware", "--json"))
    for g in rows["gpus"]:
        for src in g["sources"].values():
            assert "colum " not in src + " "
    for w in ("column", "Hopper;", "datasheet"):
        assert w in words or w.rstrip(";") in cells
    assert not re.search(r"\bcolu?m?\b(?!n)", cells), cells
    assert all(len(line) <= 80 for line in text.splitlines())


def test_models_keep_hub_ids_whole_at_80_columns():
    text = _run("models")
    assert all(len(line) <= 80 for line in text.splitlines())
    for r in json.loads(_run("models", "--json")):
        hub = r["source"].split(" config.json")[0]
        assert hub in text, hub  # on one line, unbroken


def test_compare_default_grid_has_no_column_all_past_the_context():
    from advisor.commands.compare import DEFAULT_SEQ, serving_comparison

    seqs = [int(x) for x in DEFAULT_SEQ.split(",")]
    for phase in ("decode", "prefill"):
        m = serving_comparison("a100x1", "h20x1", "llama2-13b", phase, [1, 4, 16], seqs, default_seqs=True)
        for j in range(len(m["seq_lens"])):
            assert not all(row[j] for row in m["beyond"]), (phase, m["seq_lens"][j])


def test_a_case_that_does_not_fit_shows_what_it_would_need_not_a_throughput(tmp_path):
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "big", "hardware": "rtx4090x1", "model": "70b", "task": "pretrain"}) + "\n")
    cli._register()
    r = CliRunner().invoke(cli.app, ["predict", "--cases", str(cases)], env={"COLUMNS": "80"})
    cells = " ".join(line.split("│")[-2].strip() for line in r.stdout.splitlines() if line.count("│") >= 3)
    assert re.search(r"does not fit: would need [\d,]+ GiB per GPU", " ".join(cells.split())), cells
    row = next(line for line in r.stdout.splitlines() if "big" in line)
    assert row.split("│")[2].strip() == "-"  # the tokens/s cell


def test_every_source_shown_is_whole_words_and_public():
    from advisor.commands.catalog import _short_source, citation

    text = _run("hardware")
    cells = " ".join(line.split("│")[-2].strip() for line in text.splitlines() if line.count("│") >= 3)
    words = set(cells.split())
    rows = json.loads(_run("hardware", "--json"))
    shown = [_short_source(g["sources"]) for g in rows["gpus"]] + [citation(p["source"]) for p in rows["platforms"]]
    for src in shown:
        for w in src.split():
            assert w in words, f"{w!r} of {src!r} is cut in `advisor hardware`"
    for p in rows["platforms"]:  # a datasheet, a paper, or a probe run on a named GPU and date
        assert re.search(r"datasheet|arXiv|measured with `advisor probe` on .+, \d{4}-\d\d-\d\d", p["source"]), p["source"]
