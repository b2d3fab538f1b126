"""Shared fixtures."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


@pytest.fixture(autouse=True, scope="session")
def _isolated_advisor_home(tmp_path_factory):
    """Every test runs with ADVISOR_HOME in a temporary folder: it never reads or writes the user's data."""
    home = tmp_path_factory.mktemp("advisor-home")
    old = os.environ.get("ADVISOR_HOME")
    os.environ["ADVISOR_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("ADVISOR_HOME", None)
    else:
        os.environ["ADVISOR_HOME"] = old


@pytest.fixture(scope="session")
def chromium() -> str:
    """A system Chromium for the browser tests. The tests install nothing: the README's test command
    (and .ci/run) installs it with apt-get; without it the browser test is skipped and says why."""
    for path in (os.environ.get("CHROMIUM", ""), *CHROMIUM_CANDIDATES, shutil.which("chromium") or ""):
        if path and os.path.exists(path):
            return path
    pytest.skip("no Chromium found (looked for $CHROMIUM, /usr/bin/chromium); install it with "
                "`apt-get install -y chromium` as the README's test command does")
