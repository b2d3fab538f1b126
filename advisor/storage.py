"""Optuna storage for shared studies: URL resolution, cross-process locking, and binding a study to its job.

Follows ``optuna.storages.get_storage``: ``None`` is in memory, a URL an ``RDBStorage``. What Optuna
leaves to the caller is handled here, so any number of workers can share one study:

- a bad URL, a missing folder, a missing driver or a file that is not a database is one AdvisorError line;
- SQLite access is serialised by an ``flock`` on the database file (SQLite raises "database is locked"
  when writers race, and workers creating a new database race on its tables); PostgreSQL by a session
  advisory lock (concurrent ``CREATE TYPE`` / ``CREATE TABLE`` fail on a new database);
- a study records the job it belongs to (``JOB_ATTR``) and refuses another, so trials never mix.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from knowledge.errors import AdvisorError

STORAGE_SCHEMES = ("sqlite", "postgresql", "postgresql+psycopg2", "postgresql+psycopg", "mysql", "mysql+pymysql")
JOB_ATTR = "advisor_job"  # study user attribute: the job a study belongs to


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text.encode("utf-8", "backslashreplace").decode()[:300]


def _sqlite_path(url: str) -> str | None:
    """The database file of a ``sqlite:///path`` URL; None for an in-memory one."""
    rest = url.split(":", 1)[1]
    if rest in ("", "//", "///:memory:", "//:memory:"):
        return None
    if not rest.startswith("///"):
        raise AdvisorError(f"--storage {url!r}: a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db")
    return rest[3:].split("?", 1)[0]


_LOCK_FDS: dict[tuple[int, str], int] = {}  # (pid, database path) -> descriptor kept open for the process's life


@contextmanager
def storage_lock(url: str | None) -> Iterator[None]:
    """Serialise access to a SQLite study between processes (an flock on the database file).

    SQLite raises "database is locked" when writers race; several workers creating one new database
    race on its tables too. An RDB server (PostgreSQL, MySQL) has its own locking: nothing to do.

    The descriptor is never closed: closing any descriptor of a database file drops the POSIX locks
    SQLite holds on it in this process, which corrupts the database. A forked child opens its own
    (an inherited descriptor would share the parent's flock).
    """
    import fcntl
    import os

    if url and url.split(":", 1)[0].lower().startswith("postgresql"):
        with _postgres_lock(url):
            yield
        return
    path = _sqlite_path(url) if url and url.startswith("sqlite") else None
    if path is None:
        yield
        return
    key = (os.getpid(), os.path.realpath(path))
    fd = _LOCK_FDS.get(key)
    if fd is None:
        fd = _LOCK_FDS[key] = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


_PG_ENGINES: dict[tuple[int, str], Any] = {}
_PG_LOCK_KEY = 0x5AD71503  # one advisory lock for the advisor's studies in a database


@contextmanager
def _postgres_lock(url: str) -> Iterator[None]:
    """A PostgreSQL session advisory lock: workers creating the tables of a new database, or adding
    trials, take turns (concurrent CREATE TYPE / CREATE TABLE fail, and a check-then-add would duplicate)."""
    import os

    import sqlalchemy

    key = (os.getpid(), url)
    engine = _PG_ENGINES.get(key)
    if engine is None:
        connect_args = {"connect_timeout": 10}
        engine = _PG_ENGINES[key] = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool, connect_args=connect_args)
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
        try:
            yield
        finally:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY})


def _fast_sqlite(rdb) -> None:
    """Write-ahead log, synced at checkpoints: a killed worker loses nothing it committed, and a
    thousand trials commit in a fraction of the time a rollback journal with a sync per commit takes."""
    from sqlalchemy import event

    def pragmas(conn, _record) -> None:
        cur = conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    event.listen(rdb.engine, "connect", pragmas)
    rdb.engine.dispose()  # connections opened before the listener get the pragmas too


def resolve_storage(url: str | None):
    """None for in-memory, else an Optuna ``RDBStorage`` for the URL; AdvisorError (one line) when unusable."""
    if url is None:
        return None
    import os

    import optuna

    if not isinstance(url, str) or not url.isprintable() or "://" not in url and not url.startswith("sqlite:"):
        raise AdvisorError(f"--storage {url!r} is not a database URL; e.g. sqlite:///study.db or postgresql://user@host/db")
    scheme = url.split(":", 1)[0].lower()
    if scheme not in STORAGE_SCHEMES:
        raise AdvisorError(f"--storage {url!r}: unsupported scheme {scheme!r}; use sqlite:///study.db or postgresql://…")
    engine_kwargs: dict[str, Any] = {}
    if scheme == "sqlite":
        path = _sqlite_path(url)
        if path is not None:
            folder = os.path.dirname(os.path.abspath(path))
            if os.path.isdir(path):
                raise AdvisorError(f"--storage {url!r}: {path!r} is a directory, not a database file")
            if not os.path.isdir(folder):
                raise AdvisorError(f"--storage {url!r}: folder {folder!r} does not exist")
            if os.path.exists(path) and not os.path.isfile(path):
                raise AdvisorError(f"--storage {url!r}: {path!r} is not a regular file")
        engine_kwargs = {"connect_args": {"timeout": 600}}
    else:
        engine_kwargs = {"connect_args": {"connect_timeout": 10}, "pool_pre_ping": True}
    try:
        with storage_lock(url):
            rdb = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
            if scheme == "sqlite":
                _fast_sqlite(rdb)
            return rdb
    except AdvisorError:
        raise
    except ImportError as e:
        raise AdvisorError(f"--storage {url!r}: the database driver is not installed ({_one_line(e)})") from None
    except Exception as e:  # noqa: BLE001 - SQLAlchemy and drivers raise many types; each becomes one line
        raise AdvisorError(f"--storage {url!r}: cannot open the study database ({type(e).__name__}: {_one_line(e)})") from None


def open_study(storage, url: str | None, study_name: str | None, sampler, job: str):
    """Create or load the study, bound to ``job``: a study of another job is refused, never mixed."""
    import json

    import optuna

    try:
        with storage_lock(url):
            study = optuna.create_study(direction="maximize", sampler=sampler, storage=storage, study_name=study_name,
                                        load_if_exists=study_name is not None)
            owner = study.user_attrs.get(JOB_ATTR)
            if owner is None:
                if storage is not None and study.get_trials(deepcopy=False):
                    raise AdvisorError(f"study {study_name!r} holds trials of an unknown job; use another --study-name")
                study.set_user_attr(JOB_ATTR, job)
            elif owner != job:
                mine, theirs = json.loads(job), json.loads(owner)
                diff = [k for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
                what = ", ".join(f"{k}={theirs.get(k)!r}" for k in diff[:3])
                raise AdvisorError(f"study {study_name!r} belongs to another job ({what}); use another --study-name")
            return study
    except AdvisorError:
        raise
    except Exception as e:  # noqa: BLE001 - a broken or foreign database
        raise AdvisorError(f"study {study_name!r} cannot be opened ({type(e).__name__}: {_one_line(e)})") from None
