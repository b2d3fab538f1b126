"""Kills and concurrent workers: append-only stores, atomic files and shared Optuna studies lose nothing.

- 20 ``kill -9`` of a process appending rows to a JSON-lines store, and 20 of one rewriting a JSON
  file atomically: every acknowledged row is there exactly once, a torn last line never corrupts the
  row after it, the rewritten file is always a whole version, no temporary file is left behind.
- 16 workers on a new SQLite study (exhaustive search), 4 under TPE, and a second job refused by a
  study that belongs to another. With ``ADVISOR_TEST_POSTGRES_URL`` set, the same on PostgreSQL.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.errors import AdvisorError
from knowledge.store import append_jsonl, atomic_write_json, read_jsonl, remove_orphans

REPO = Path(__file__).resolve().parents[1]
KILLS = 20

APPENDER = r"""
import os, sys
from knowledge.store import append_jsonl
path, start = sys.argv[1], int(sys.argv[2])
i = start
while True:
    size = (1 << 20) if i % 3 == 0 else 200  # some rows span several write calls
    append_jsonl(path, [{"id": i, "pad": "x" * size}])
    sys.stdout.write(f"{i}\n"); sys.stdout.flush()  # acknowledged: append_jsonl returned after fsync
    i += 1
"""

REWRITER = r"""
import sys
from knowledge.store import atomic_write_json
path, start = sys.argv[1], int(sys.argv[2])
i = start
while True:
    atomic_write_json(path, {"version": i, "pad": "y" * (1 << 20)})
    sys.stdout.write(f"{i}\n"); sys.stdout.flush()
    i += 1
"""


def _spawn(script: str, path: Path, start: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, str(path), str(start)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _kill_after_some_acks(p: subprocess.Popen, rng: random.Random) -> list[int]:
    """Let the writer acknowledge a few rows, kill -9 it at a random moment, return what it acknowledged."""
    acked = [int(p.stdout.readline())]  # it is writing now
    time.sleep(rng.uniform(0.0, 0.05))
    p.send_signal(signal.SIGKILL)
    rest, _ = p.communicate(timeout=30)
    acked += [int(x) for x in rest.split()]
    return acked


def test_append_store_survives_kill_loop(tmp_path):
    path = tmp_path / "rows.jsonl"
    rng = random.Random(7)
    acked: list[int] = []
    start = 0
    torn_seen = 0
    for _ in range(KILLS):
        got = _kill_after_some_acks(_spawn(APPENDER, path, start), rng)
        acked += got
        start = max(got) + 1000  # a fresh id range per writer: a duplicated row would show
        rows = list(read_jsonl(path))
        bad = [(n, err) for n, _, err in rows if err]
        # only the very last line may be torn (the killed writer's unacknowledged row)
        assert len(bad) <= 1 and (not bad or bad[0][0] == rows[-1][0]), bad
        torn_seen += len(bad)
    append_jsonl(path, [{"id": -1}])  # the next writer repairs the torn tail before it writes
    rows = list(read_jsonl(path))
    assert all(err is None for _, _, err in rows), [err for _, _, err in rows if err]
    ids = [obj["id"] for _, obj, _ in rows]
    assert len(ids) == len(set(ids)), "a row was written twice"
    assert set(acked) <= set(ids), f"lost acknowledged rows: {sorted(set(acked) - set(ids))[:10]}"
    assert ids[-1] == -1
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]  # nothing left beside the store
    print(f"\nappend store: {KILLS} kills, {len(acked)} acknowledged rows kept, {torn_seen} torn tails repaired")


def test_torn_last_line_never_corrupts_the_next_row(tmp_path):
    path = tmp_path / "rows.jsonl"
    append_jsonl(path, [{"id": 1}])
    with open(path, "ab") as f:  # what a writer killed mid-row leaves
        f.write(b'{"id": 2, "pad": "xxxx')
    rows = list(read_jsonl(path))
    assert rows[0][1] == {"id": 1} and rows[1][1] is None and "torn" in rows[1][2]
    append_jsonl(path, [{"id": 3}])
    rows = list(read_jsonl(path))
    assert [obj for _, obj, _ in rows] == [{"id": 1}, {"id": 3}]
    assert all(err is None for _, _, err in rows)


def test_atomic_file_survives_kill_loop(tmp_path):
    path = tmp_path / "profile.json"
    rng = random.Random(11)
    last_acked = -1
    start = 0
    leftovers = 0
    for _ in range(KILLS):
        got = _kill_after_some_acks(_spawn(REWRITER, path, start), rng)
        version = json.loads(path.read_text())["version"]  # always a whole file
        assert version >= max(got), (version, got)  # never older than what was acknowledged
        last_acked = max(got)
        start = last_acked + 1
        leftovers = max(leftovers, len([p for p in tmp_path.iterdir() if p.name != "profile.json"]))
    # a killed writer leaves no named temporary file (on Linux it writes an unnamed one, O_TMPFILE),
    # except in the microseconds between naming it and the rename; the next write removes that
    assert leftovers <= 1
    atomic_write_json(path, {"version": "final"})  # the next write removes what killed writers left
    assert json.loads(path.read_text()) == {"version": "final"}
    assert [p.name for p in tmp_path.iterdir()] == ["profile.json"], list(tmp_path.iterdir())


def test_orphans_of_live_writers_are_kept(tmp_path):
    path = tmp_path / "a.json"
    mine = tmp_path / f".a.json.{os.getppid()}.abc.tmp"  # a live process's (pytest's parent)
    dead = tmp_path / ".a.json.999999999.abc.tmp"
    mine.write_text("x")
    dead.write_text("x")
    assert remove_orphans(path) == 1
    assert mine.exists() and not dead.exists()


# ------------------------------------------------------------------------------------- shared studies

SPEC = dict(hardware="h100x1", model="tinyllama-1.1b", task="finetune")


def _worker(url: str, sampler: str, trials, seed: int, queue) -> None:
    try:
        from advisor.search import SearchSpec, run_search
        from knowledge.efficiency import load_efficiencies

        ranked, _, facts = run_search(SearchSpec(**SPEC), load_efficiencies(), storage=url, study_name="shared",
                                      sampler=sampler, n_trials=trials, seed=seed)
        queue.put(("ok", ranked[0].case.model_dump_json(exclude={"id"}), facts))
    except BaseException as e:  # noqa: BLE001 - reported to the test
        queue.put(("error", f"{type(e).__name__}: {e} <- {e.__cause__!r}"[:1500], None))


def _run_workers(url: str, n: int, sampler: str, trials=None) -> list[tuple]:
    ctx = mp.get_context("fork")  # the modules are imported once, in the parent
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, sampler, trials, seed, queue)) for seed in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return results


def test_sixteen_workers_on_a_new_sqlite_study(tmp_path):
    db = tmp_path / "study.db"
    results = _run_workers(f"sqlite:///{db}", 16, "brute")
    errors = [r[1] for r in results if r[0] != "ok"]
    assert not errors, errors
    assert len({r[1] for r in results}) == 1  # every worker has the same, exact answer
    space = results[0][2]["space_size"]
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from trials").fetchone()[0] == space  # each configuration once
        assert con.execute("select count(*) from studies").fetchone()[0] == 1
    # and again on the existing study
    results = _run_workers(f"sqlite:///{db}", 4, "brute")
    assert all(r[0] == "ok" for r in results), results
    print(f"\nsqlite: 16 + 4 workers on one study, {space} trials, none lost or duplicated")


def test_four_tpe_workers_on_a_new_sqlite_study(tmp_path):
    db = tmp_path / "tpe.db"
    results = _run_workers(f"sqlite:///{db}", 4, "tpe", trials=15)
    errors = [r[1] for r in results if r[0] != "ok"]
    assert not errors, errors
    with sqlite3.connect(db) as con:
        states = dict(con.execute("select state, count(*) from trials group by state").fetchall())
    assert set(states) <= {"COMPLETE", "PRUNED"}, states  # no trial left RUNNING or FAIL
    assert sum(states.values()) >= 4 * 15


def test_a_study_refuses_another_job(tmp_path):
    from advisor.search import SearchSpec, run_search
    from knowledge.efficiency import load_efficiencies

    url = f"sqlite:///{tmp_path / 's.db'}"
    eff = load_efficiencies()
    run_search(SearchSpec(**SPEC), eff, storage=url, study_name="job", n_trials=5)
    for other in (dict(SPEC, model="llama3.2-1b"), dict(SPEC, seq_len=1024), dict(SPEC, task="pretrain")):
        with pytest.raises(AdvisorError, match="belongs to another job"):
            run_search(SearchSpec(**other), eff, storage=url, study_name="job", n_trials=5)
    with pytest.raises(AdvisorError, match="belongs to another job"):
        run_search(SearchSpec(**SPEC), eff, storage=url, study_name="job", sampler="tpe", n_trials=5)
    # the same job loads it
    run_search(SearchSpec(**SPEC), eff, storage=url, study_name="job", n_trials=5)
    with sqlite3.connect(tmp_path / "s.db") as con:
        assert con.execute("select count(*) from trials").fetchone()[0] == 5


@pytest.mark.parametrize("url", ["foo", "redis://localhost/0", "sqlite:///no/such/folder/x.db", "sqlite:////etc/passwd",
                                 "postgresql://nobody@127.0.0.1:1/none", "sqlite://relative-without-slash.db"])
def test_bad_storage_urls_are_one_line_errors(url):
    from advisor.search import resolve_storage

    with pytest.raises(AdvisorError) as e:
        resolve_storage(url)
    assert "\n" not in str(e.value) and url in str(e.value)


@pytest.mark.skipif(not os.environ.get("ADVISOR_TEST_POSTGRES_URL"), reason="set ADVISOR_TEST_POSTGRES_URL to a PostgreSQL database")
def test_sixteen_workers_on_postgresql():
    """E.g. ADVISOR_TEST_POSTGRES_URL=postgresql+psycopg://postgres@localhost:55432/advisor_test (a new database)."""
    import sqlalchemy

    url = os.environ["ADVISOR_TEST_POSTGRES_URL"]
    results = _run_workers(url, 16, "brute")
    assert all(r[0] == "ok" for r in results), [r[1] for r in results if r[0] != "ok"]
    assert len({r[1] for r in results}) == 1
    results = _run_workers(url, 4, "brute")
    assert all(r[0] == "ok" for r in results), [r[1] for r in results if r[0] != "ok"]
    engine = sqlalchemy.create_engine(url)
    with engine.connect() as con:
        n = con.execute(sqlalchemy.text(
            "select count(*) from trials t join studies s on s.study_id = t.study_id where s.study_name = 'shared'")).scalar()
    engine.dispose()
    assert n == results[0][2]["space_size"]  # each configuration once, none lost


def test_sqlite_study_survives_kill_loop(tmp_path):
    """20 workers killed at random moments of their search; the next one finishes, nothing is corrupt."""
    db = tmp_path / "killed.db"
    url = f"sqlite:///{db}"
    rng = random.Random(5)
    ctx = mp.get_context("fork")
    for _ in range(KILLS):
        p = ctx.Process(target=_worker, args=(url, "brute", None, 0, ctx.Queue()))
        p.start()
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(p.pid, signal.SIGKILL)
        p.join(30)
    results = _run_workers(url, 2, "brute")
    assert all(r[0] == "ok" for r in results), [r[1] for r in results if r[0] != "ok"]
    with sqlite3.connect(db) as con:
        assert con.execute("pragma integrity_check").fetchone()[0] == "ok"
        knobs = [row[0] for row in con.execute("select value_json from trial_user_attributes where key = 'knobs'")]
    assert len(knobs) == len(set(knobs)) == results[0][2]["space_size"]  # each configuration once, none lost
