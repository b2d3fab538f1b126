"""The explorer in a real browser: `streamlit run` in a subprocess, driven by Playwright + Debian's Chromium.

Set UPDATE_SCREENSHOT=1 to refresh app/screenshot.png from this run.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
METRIC = '[data-testid="stMetric"]'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app/explorer.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--client.toolbarMode", "viewer"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _metric(page, label: str) -> str:
    return page.locator(METRIC, has_text=label).first.locator('[data-testid="stMetricValue"]').inner_text()


def _wait_change(page, label: str, old: str, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            now = _metric(page, label)
            if now != old:
                return now
        except sync_api.Error:
            pass  # the element is being replaced by the rerun
        page.wait_for_timeout(200)
    raise AssertionError(f"{label} stayed {old!r}")


def test_browser_shows_and_updates_the_prediction(server, chromium, tmp_path):
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1100})
            page.goto(server, wait_until="domcontentloaded")
            page.wait_for_selector(METRIC, timeout=60_000)
            page.locator(METRIC, has_text="GiB/GPU").first.wait_for(timeout=30_000)
            assert page.locator(METRIC, has_text="tokens/s").count() >= 1
            before = _metric(page, "GiB/GPU")
            assert float(before) > 0

            box = page.get_by_label("Micro-batch size (sequences per GPU)")
            box.fill("4")
            box.press("Enter")
            after = _wait_change(page, "GiB/GPU", before)
            assert float(after) > float(before)

            page.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=30_000)
            page.wait_for_selector('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg', timeout=30_000)
            page.locator('[data-testid="stSidebarContent"]').evaluate("e => e.scrollTo(0, 0)")
            page.wait_for_timeout(1000)  # let the charts finish drawing
            assert not page.locator('[data-testid="stException"]').count()
            shot = tmp_path / "explorer.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            if os.environ.get("UPDATE_SCREENSHOT") == "1":
                shutil.copyfile(shot, ROOT / "app" / "screenshot.png")
        finally:
            browser.close()
