"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.dont_write_bytecode = True  # no new __pycache__ from the tests' own imports (pytest's rewritten test modules too)

import tempfile

try:  # Hypothesis keeps its example database in memory and its caches in a temporary folder: no .hypothesis/
    from hypothesis import settings as _hypothesis_settings
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.database import InMemoryExampleDatabase

    set_hypothesis_home_dir(tempfile.mkdtemp(prefix="advisor-hypothesis-"))

    _hypothesis_settings.register_profile("advisor-tests", database=InMemoryExampleDatabase())
    _hypothesis_settings.load_profile("advisor-tests")
except ImportError:  # pragma: no cover - hypothesis is in the [test] extra
    pass

# ignored folders not walked: the virtual environment and the install's metadata are not the tests' business
_NOT_WALKED = (".venv", ".git")


def _checkout_state() -> tuple[str, frozenset] | None:
    """`git status --porcelain --ignored` of the checkout, and every file (size, mtime) under its ignored
    folders except the environment and Python's bytecode caches. None outside a git checkout."""
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if status.returncode != 0:
        return None
    lines = [ln for ln in status.stdout.splitlines() if "__pycache__" not in ln and not ln[3:].startswith(_NOT_WALKED)
             and ".egg-info" not in ln]
    files = set()
    for ln in lines:
        path = ROOT / ln[3:].strip('"')
        if path.is_file():
            st = path.stat()
            files.add((ln[3:], st.st_size, st.st_mtime_ns))
    return "\n".join(lines), frozenset(files)


@pytest.fixture(autouse=True, scope="session")
def _checkout_left_as_it_was():
    """The suite writes only to temporary folders: the checkout's git status and its ignored files are the same
    after the run as before (a test that writes a PNG or advisor-out/ into the checkout fails the run here)."""
    before = _checkout_state()
    yield
    after = _checkout_state()
    if before is None or after is None or before == after:
        return
    added = sorted(set(after[0].splitlines()) - set(before[0].splitlines()))
    touched = sorted({f[0] for f in after[1] ^ before[1]})
    pytest.fail(f"the test suite changed the checkout {ROOT}: status {added or '='}, files {touched[:10]}", pytrace=False)

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


_USER_ADVISOR_HOME = "_user_advisor_home"


def pytest_configure(config):
    """Every test runs with ADVISOR_HOME in a temporary folder: it never reads or writes the user's data. Set before
    the test modules are imported, so what they build at import (a module-level ``Predictor()``) reads the bundled
    fit too, not a user's own ``advisor calibrate`` (which had made those and a fresh Predictor disagree)."""
    setattr(config, _USER_ADVISOR_HOME, os.environ.get("ADVISOR_HOME"))
    os.environ["ADVISOR_HOME"] = tempfile.mkdtemp(prefix="advisor-home-")


def pytest_unconfigure(config):
    home = os.environ.get("ADVISOR_HOME")
    if home and Path(home).name.startswith("advisor-home-"):
        shutil.rmtree(home, ignore_errors=True)
    old = getattr(config, _USER_ADVISOR_HOME, None)
    if old is None:
        os.environ.pop("ADVISOR_HOME", None)
    else:
        os.environ["ADVISOR_HOME"] = old


@pytest.fixture(autouse=True, scope="session")
def _isolated_advisor_home():
    """The temporary ADVISOR_HOME of this session (``pytest_configure``)."""
    return Path(os.environ["ADVISOR_HOME"])


@pytest.fixture(scope="session")
def chromium() -> str:
    """A system Chromium for the browser tests. The tests install nothing: the README's test command
    (and .ci/run) installs it with apt-get; without it the browser test is skipped and says why."""
    for path in (os.environ.get("CHROMIUM", ""), *CHROMIUM_CANDIDATES, shutil.which("chromium") or ""):
        if path and os.path.exists(path):
            return path
    pytest.skip("no Chromium found (looked for $CHROMIUM, /usr/bin/chromium); install it with "
                "`apt-get install -y chromium` as the README's test command does")
