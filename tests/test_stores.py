"""Durable stores: atomic writes, concurrent appends, corrupt files, shared Optuna studies."""

from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge.measurements import load_own
from knowledge.schema import SCHEMA_VERSION, Measured, Measurement
from knowledge.store import append_jsonl, atomic_write_json, atomic_write_text, read_jsonl

REPO = Path(__file__).resolve().parents[1]


def _row(i: int, writer: int) -> Measurement:
    return Measurement(dataset="test", source=f"writer {writer}", case={"id": f"{writer}-{i}", "task": "pretrain"},
                       measured=Measured(tokens_per_s=float(i + 1)), notes="x" * 500)


def _writer(path: str, writer: int, n: int) -> None:
    for i in range(n):
        append_jsonl(path, [_row(i, writer)])


def test_two_processes_appending_lose_nothing(tmp_path):
    path = tmp_path / "rows.jsonl"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), w, 150)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = list(read_jsonl(path))
    assert len(rows) == 300
    assert all(err is None for _, _, err in rows)  # no interleaved, torn lines
    ids = {obj["case"]["id"] for _, obj, _ in rows}
    assert ids == {f"{w}-{i}" for w in (1, 2) for i in range(150)}


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "profile.json"
    atomic_write_json(path, {"good": 1})

    class Boom:
        def __str__(self) -> str:
            raise RuntimeError("disk full")

    with pytest.raises(TypeError):
        atomic_write_json(path, {"bad": Boom()})  # json cannot serialise it
    assert json.loads(path.read_text()) == {"good": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["profile.json"]  # no temporary file left behind


def test_atomic_write_replaces_whole_file(tmp_path):
    path = tmp_path / "a.txt"
    atomic_write_text(path, "x" * 10_000)
    atomic_write_text(path, "short")
    assert path.read_text() == "short"


def test_corrupt_and_truncated_lines_are_reported_and_skipped(tmp_path):
    good = _row(0, 1).model_dump_json()
    path = tmp_path / "own.jsonl"
    path.write_text(good + "\n" + "{not json\n" + '["a list"]\n' + '{"dataset": "x"}\n' + good[: len(good) // 2])
    rows, problems = load_own(tmp_path)
    assert len(rows) == 1 and rows[0].case["id"] == "1-0"
    assert len(problems) == 4
    assert all(str(path) in p and "\n" not in p for p in problems)


def test_measurements_carry_a_schema_version():
    assert _row(0, 0).schema_version == SCHEMA_VERSION
    rows, problems = load_own()
    assert problems == []
    assert rows and all(r.schema_version == SCHEMA_VERSION for r in rows)
    assert all(r.environment is not None and r.environment.date and r.environment.command for r in rows)


def _recommend(db: Path, out: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "advisor.cli", "recommend", "--hardware", "h100x1", "--task", "finetune",
           "--model", "tinyllama-1.1b", "--json", "--storage", f"sqlite:///{db}", "--study-name", "shared",
           "--out-dir", str(out)]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_sqlite_study_survives_two_concurrent_workers(tmp_path):
    db = tmp_path / "study.db"
    # create the study first so both workers load it instead of racing to create it
    first = _recommend(db, tmp_path / "o0")
    assert first.wait(120) == 0, first.stderr.read()
    workers = [_recommend(db, tmp_path / f"o{i}") for i in (1, 2)]
    outs = [(w.wait(180), *w.communicate()) for w in workers]
    for rc, out, err in outs:
        assert rc == 0, err
        assert json.loads(out)["recommendations"]
    picks = {json.loads(out)["recommendations"][0]["summary"] for _, out, _ in outs}
    assert len(picks) == 1  # both workers agree on the top pick
    with sqlite3.connect(db) as con:
        n = con.execute("select count(*) from trials").fetchone()[0]
    space = json.loads(outs[0][1])["search"]["space_size"]
    assert n == space  # every configuration recorded once: none lost, none duplicated


def test_confirm_without_gpus_fails_in_one_line():
    r = subprocess.run([sys.executable, "-m", "advisor.cli", "confirm", "--task", "finetune", "--model", "7b"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "GPU" in lines[0]
