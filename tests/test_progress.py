"""Progress bars of the long commands (advisor.progress) and where `advisor probe` puts its profile by default."""

from __future__ import annotations

import io

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from advisor import progress
from advisor.commands import probe
from knowledge.paths import find_profile


def test_timed_run_returns_the_value_and_reraises():
    assert progress.timed_run(lambda: 41 + 1, "work", 5, disable=True) == 42

    def boom():
        raise RuntimeError("broken run")

    with pytest.raises(RuntimeError, match="broken run"):
        progress.timed_run(boom, "work", 5, disable=True)


def test_campaign_progress_counts_cases_and_prints_each_result(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(progress, "_console", lambda: Console(file=buf, force_terminal=True, width=120))
    with progress.CampaignProgress(3, disable=False) as prog:
        for i, case in enumerate(("a", "b")):
            prog.start(case)
            prog.done(case, f"{1000 * (i + 1):,} tokens/s", 2.0)
        prog.skip("c")
        task = prog._bar.tasks[0]
        assert (task.completed, task.total) == (3, 3)
    text = buf.getvalue()
    assert "1,000 tokens/s" in text and "2,000 tokens/s" in text


def test_probe_writes_to_advisor_home_by_default_and_is_found_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    app = typer.Typer()
    probe.register(app)
    app.callback()(lambda: None)
    r = CliRunner().invoke(app, ["probe", "--device", "cpu", "--quick"])
    assert r.exit_code == 0, r.output
    written = list((tmp_path / "home" / "profiles").glob("*.json"))
    assert len(written) == 1 and written[0].stem.endswith("-quick")
    assert str(written[0]) in r.stdout
    assert find_profile(written[0].stem) == written[0]
