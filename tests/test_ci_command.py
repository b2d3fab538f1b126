"""The README's test command is what CI runs, and it installs Chromium in plain sight (the tests install nothing)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", quick, flags=re.S)


def test_quick_start_is_two_commands_and_ci_runs_the_second():
    first, second = _readme_commands()
    assert "\n" not in first and "\n" not in second
    assert "torch==2.13.0" in first and "advisor recommend --hardware rtx4090x8 --task finetune --model 70b" in first
    assert "torch==2.13.0" in second and "python -m pytest" in second and "apt-get install -y -qq chromium" in second
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert second in ci


def test_no_test_installs_anything():
    for path in (ROOT / "tests").glob("*.py"):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text()
        assert "apt-get install" not in text.replace("`apt-get install -y chromium`", ""), path.name
        assert "pip install" not in text, path.name
