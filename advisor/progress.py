"""Rich progress bars for the long commands: probe, confirm, the measurement campaign.

All bars draw on stderr (stdout stays clean for ``--json``) and vanish when stderr is not a terminal
or the caller asks for quiet output; what they show never changes what is measured.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

T = TypeVar("T")


def _console() -> Console:
    return Console(stderr=True, highlight=False)


def interactive() -> bool:
    return sys.stderr.isatty()


def timed_run(work: Callable[[], T], label: str, limit_s: float, *, disable: bool = False) -> T:
    """Run ``work()`` in a thread while a bar fills towards ``limit_s`` seconds (the run's time limit).

    Returns what ``work`` returned; re-raises what it raised.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = e

    th = threading.Thread(target=target, daemon=True)
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), TextColumn("of at most {task.total:.0f} s"))
    with Progress(*columns, console=_console(), transient=True, disable=disable) as bar:
        task = bar.add_task(label, total=max(limit_s, 1.0))
        t0 = time.monotonic()
        th.start()
        while th.is_alive():
            th.join(0.25)
            bar.update(task, completed=min(time.monotonic() - t0, limit_s))
    if "error" in box:
        raise box["error"]
    return box["value"]


class CampaignProgress:
    """One bar over the cases of a measurement campaign; each finished case is printed above it.

    Usage (probes/campaign.py ``main``)::

        with CampaignProgress(len(cases), budget_s=args.budget_s) as prog:
            for c in cases:
                prog.start(c["id"])
                row, took = run_one(...)
                prog.done(c["id"], describe(row), took)
    """

    def __init__(self, total: int, budget_s: float | None = None, *, disable: bool | None = None) -> None:
        self.total = total
        self.budget_s = budget_s
        self.disable = (not interactive()) if disable is None else disable
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                             TimeElapsedColumn(), TimeRemainingColumn(), console=_console(), transient=True, disable=self.disable)
        self._task = None

    def __enter__(self) -> "CampaignProgress":
        self._bar.__enter__()
        self._task = self._bar.add_task("campaign", total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)

    def start(self, case_id: str) -> None:
        self._bar.update(self._task, description=f"running {case_id}")

    def done(self, case_id: str, result: str, took_s: float) -> None:
        self._bar.advance(self._task)
        if not self.disable:
            self._bar.console.print(f"{case_id:<44} {result}  [{took_s:.0f} s]", markup=False, highlight=False)

    def skip(self, case_id: str) -> None:
        self._bar.advance(self._task)


@contextmanager
def steps(label: str, total: float = 1.0, *, disable: bool = False) -> Iterator[Callable[[str, float], None]]:
    """A bar for a multi-step job; yields ``update(message, fraction done)`` (``fraction < 0``: ignored)."""
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=_console(), transient=True, disable=disable) as bar:
        task = bar.add_task(label, total=total)

        def update(message: str, fraction: float) -> None:
            if fraction >= 0:
                bar.update(task, description=message, completed=fraction * total)
            else:
                bar.update(task, description=message)

        yield update


@contextmanager
def steps_bar(label: str, *, disable: bool = False) -> Iterator[Callable[[str], None]]:
    """A bar for work of unknown length done step by step (validate's held-out fits): shows the step now
    running, how many are done and the time elapsed. Yields ``step(name)``."""
    columns = (TextColumn("{task.description}"), TextColumn("{task.completed} done"), TimeElapsedColumn())
    with Progress(*columns, console=_console(), transient=True, disable=disable or not interactive()) as bar:
        task = bar.add_task(label, total=None)
        first = [True]

        def step(name: str) -> None:
            bar.update(task, description=f"{label}: {name}", advance=0 if first[0] else 1)
            first[0] = False

        yield step
