"""User data under ADVISOR_HOME, layered over the bundled knowledge; the installed package stays unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor import cli
from knowledge import paths
from knowledge.errors import AdvisorError
from knowledge.measurements import load_own

PACKAGE = Path(__file__).resolve().parents[1] / "knowledge"


def app():
    if not cli.app.registered_commands:
        cli._register()
    return cli.app


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_home_follows_the_environment_and_is_created_lazily(home):
    assert paths.advisor_home() == home
    assert not home.exists()
    assert paths.user_measurement_files() == []  # reading creates nothing
    assert not home.exists()
    assert paths.user_measurements_dir() == home / "measurements" and (home / "measurements").is_dir()
    assert paths.user_calibration_path() == home / "calibration" / "fitted.json"
    assert paths.user_studies_dir().is_dir() and paths.user_profiles_dir().is_dir()


def test_default_home_is_the_platform_user_data_dir(monkeypatch):
    import platformdirs

    monkeypatch.delenv("ADVISOR_HOME", raising=False)
    assert paths.advisor_home() == Path(platformdirs.user_data_dir("advisor", appauthor=False))


def test_user_rows_are_layered_after_the_bundled_ones(home):
    bundled, _ = load_own()
    row = json.loads(paths.bundled_measurement_files()[0].read_text().splitlines()[0])
    row["dataset"] = "own-mine"
    (paths.user_measurements_dir() / "mine.jsonl").write_text(json.dumps(row) + "\n")
    layered, problems = load_own()
    assert problems == []
    assert len(layered) == len(bundled) + 1 and layered[-1].dataset == "own-mine"
    assert paths.measurement_files()[-1] == home / "measurements" / "mine.jsonl"


def test_calibration_file_prefers_the_users_refit(home):
    assert paths.calibration_file() == paths.BUNDLED_CALIBRATION
    paths.user_calibration_path().write_text("{}")
    assert paths.calibration_file() == home / "calibration" / "fitted.json"


def test_storage_names_resolve_under_home(home):
    assert paths.storage_url(None) is None
    assert paths.storage_url("sqlite") == f"sqlite:///{home / 'studies' / 'studies.db'}"
    assert paths.storage_url("mine.db") == f"sqlite:///{home / 'studies' / 'mine.db'}"
    assert paths.storage_url("postgresql://u@h/db") == "postgresql://u@h/db"
    with pytest.raises(AdvisorError, match="'nonsense'"):
        paths.storage_url("nonsense")


def test_recommend_with_a_study_name_keeps_the_study_under_home(home, tmp_path):
    r = CliRunner().invoke(app(), ["recommend", "--hardware", "h100x1", "--task", "finetune", "--model", "tinyllama-1.1b",
                                   "--study-name", "s1", "--json", "--out-dir", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert (home / "studies" / "studies.db").stat().st_size > 0


def test_profiles_found_by_name_user_first_then_bundled(home):
    assert paths.find_profile("h100x1").name.startswith("h100x1")
    mine = paths.user_profiles_dir() / "h100x1.json"
    mine.write_text("{}")
    assert paths.find_profile("h100x1") == mine
    with pytest.raises(AdvisorError, match="closest"):
        paths.find_profile("h100x")


def test_confirm_writes_its_row_and_refit_under_home_never_into_the_package(home, monkeypatch):
    import advisor.calibrate
    import probes.campaign as campaign

    before = _tree_hash(PACKAGE)
    refits: list[Path] = []

    def fake_run_one(case, out_file, log_file, timeout, args):
        row = {"dataset": "own-test", "source": "test", "case": {k: v for k, v in case.items() if k != "id"} | {"id": case["id"]},
               "measured": {"tokens_per_s": 1000.0, "peak_mem_gib": 10.0}}
        out_file.parent.mkdir(parents=True, exist_ok=True)
        with open(out_file, "a") as f:
            f.write(json.dumps(row) + "\n")
        return row, 1.0

    def fake_refit(**kw):
        refits.append(kw["out"])
        return {"train_mape": 0.1, "fitted_on": {"rows": 1}}

    monkeypatch.setattr(campaign, "gpu_inventory", lambda: ("NVIDIA H100 80GB HBM3", 1))
    monkeypatch.setattr(campaign, "run_one", fake_run_one)
    monkeypatch.setattr(advisor.calibrate, "fast_refit", fake_refit)  # confirm refits quickly
    r = CliRunner().invoke(app(), ["confirm", "--hardware", "h100x1", "--task", "finetune", "--model", "tinyllama-1.1b", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert Path(report["row_file"]) == home / "measurements" / "confirm.jsonl"
    assert (home / "measurements" / "confirm.jsonl").read_text().count("\n") == 1
    assert refits == [home / "calibration" / "fitted.json"]
    assert (home / "calibration" / "fitted.json").exists()  # seeded from the bundled fit before the refit
    assert _tree_hash(PACKAGE) == before


def test_predict_takes_a_bundled_profile_by_name(tmp_path):
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "a", "hardware": "h100x1", "model": "7b", "task": "finetune"}) + "\n")
    r = CliRunner().invoke(app(), ["predict", "--cases", str(cases), "--profile", "h100x1", "--json"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app(), ["predict", "--cases", str(cases), "--profile", "h100x9", "--json"])
    assert r.exit_code == 1 and "h100x1" in r.output  # the closest names


def test_confirm_dry_run_answers_without_a_gpu_in_words_and_json(home, monkeypatch):
    import probes.campaign as campaign

    monkeypatch.setattr(campaign, "gpu_inventory", lambda: (None, 0))
    r = CliRunner().invoke(app(), ["confirm", "--dry-run"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "Dry run: nothing runs." in text and "warm-up" in text and "Predicted now:" in text and "compares" in text
    assert "advisor confirm --hardware h100x1" in text and "no local GPU recognised" in r.stderr
    assert "{" not in r.stdout  # words, not the raw case
    assert len(r.stdout.splitlines()) < 20
    # 80 columns, except a path longer than that: it gets a line of its own, whole, to be copied
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in r.stdout.splitlines()), r.stdout
    assert str(home) in text  # the row file, never cut
    r = CliRunner().invoke(app(), ["confirm", "--dry-run", "--hardware", "rtx4090x8", "--model", "70b", "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["case"]["hardware"] == "rtx4090x8" and plan["command"] and plan["predicted"]["tokens_per_s"] > 0
    assert not (home / "measurements" / "confirm.jsonl").exists()  # a dry run writes nothing
    r = CliRunner().invoke(app(), ["confirm"])  # a real run still needs a GPU
    assert r.exit_code == 1 and "no local GPU" in r.stderr
