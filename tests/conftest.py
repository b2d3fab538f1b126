"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium for the browser tests: installed with apt-get when missing (CI runs as root).

    Playwright's own browser download is never used; when the install fails the test is skipped.
    """
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if shutil.which("apt-get") is None:
        pytest.skip(f"{CHROMIUM} is missing and apt-get is not available to install it")
    cmd = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium"
    try:
        done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"installing chromium failed: {e}")
    if done.returncode != 0 or not os.path.exists(CHROMIUM):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        pytest.skip(f"installing chromium failed (exit {done.returncode}): {tail[0]}")
    return CHROMIUM
