"""The contract lives in the repository and ships with the package: `advisor contract`, `predict --help`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from advisor import cli
from knowledge.paths import CONTRACT
from knowledge.schema import ServeCase, ServePrediction, TrainCase, TrainPrediction

ROOT = Path(__file__).resolve().parents[1]


def _app():
    cli._register()
    return cli.app


def test_contract_prints_the_file_and_its_path():
    r = CliRunner().invoke(_app(), ["contract"])
    assert r.exit_code == 0 and r.stdout == CONTRACT.read_text(encoding="utf-8")
    r = CliRunner().invoke(_app(), ["contract", "--path"])
    assert r.exit_code == 0 and Path(r.stdout.strip()) == CONTRACT and CONTRACT.is_file()


def test_every_case_and_prediction_field_is_documented():
    text = CONTRACT.read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z_0-9]+)`", text))
    skip = {"breakdown", "interval", "capacity_gib", "host_capacity_gib", "why_not_fits", "max_batch_size", "id"}
    for model in (TrainCase, ServeCase, TrainPrediction, ServePrediction):
        missing = [f for f in model.model_fields if f not in documented and f not in skip]
        assert not missing, f"{model.__name__}: {missing} not in knowledge/CONTRACT.md"


def test_the_contract_ships_as_package_data():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "CONTRACT.md" in meta["tool"]["setuptools"]["package-data"]["knowledge"]
    assert "../shared" not in (ROOT / "README.md").read_text()


def test_predict_help_names_the_required_fields_and_the_contract():
    r = CliRunner().invoke(_app(), ["predict", "--help"], env={"COLUMNS": "80"})
    flat = " ".join(r.stdout.split())
    assert "Required fields: id, hardware, model, task" in flat and "advisor contract" in flat


def test_the_readme_links_the_contract_the_package_installs():
    # the top level is fixed (pyproject.toml, README.md, advisor/, probes/, knowledge/, models/, app/, tests/): the
    # contract lives in the package's knowledge/, where the README points a reader of the repository
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "](knowledge/CONTRACT.md)" in readme and (root / "knowledge" / "CONTRACT.md") == CONTRACT.resolve()
    assert not (root / "docs").exists()


def test_the_repository_top_level_is_the_fixed_one():
    import shutil
    import subprocess

    import pytest

    root = Path(__file__).resolve().parents[1]
    if not shutil.which("git") or not (root / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.splitlines()
    top = {path.split("/")[0] for path in tracked if not path.startswith(".")}
    assert top == {"pyproject.toml", "README.md", "advisor", "probes", "knowledge", "models", "app", "tests"}
