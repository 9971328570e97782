"""Progress on a terminal: rich's bar on stderr, with the count, the rate, the time left and a note
(the last run's score, a step's loss). Drawn only where stderr is a terminal; a pipe or a log gets a
plain line now and then instead. rich is imported only when a bar is shown, so start-up does not pay for
it, and its console leaves out colour under ``NO_COLOR`` by itself. The label and the note (a case id, a
machine name) are made inert and read as no markup."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from machine.runs import inert

if TYPE_CHECKING:
    from machine.runs import Run
    from machine.workspace import Workspace


def wanted() -> bool:
    """Whether a bar would be seen: stderr is a terminal."""
    return sys.stderr.isatty()


class Bar:
    """One bar of ``total`` steps called ``label``; ``advance`` moves it, ``close`` leaves it as it ended."""

    def __init__(self, label: str, total: int | None, unit: str = "runs") -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.unit = unit
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}", markup=False),
            console=Console(stderr=True),
        )
        shown = None if total is None else max(total, 1)  # None: counted without a total
        self.task = self.progress.add_task(inert(label), total=shown, rate="", note="")
        self.progress.start()

    def advance(self, note: str = "") -> None:
        """One more step done; ``note`` says what it gave."""
        self.progress.update(self.task, advance=1, note=inert(note))
        task = self.progress.tasks[0]
        if task.elapsed:
            self.progress.update(self.task, rate=f"{task.completed / task.elapsed:.1f} {self.unit}/s")

    def note(self, note: str) -> None:
        self.progress.update(self.task, note=inert(note))

    def expect(self, total: int) -> None:
        """The total, once it is known."""
        self.progress.update(self.task, total=max(total, 1))

    def close(self) -> None:
        self.progress.stop()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()


def verdict(run: Run) -> str:
    """A finished run in a word: ERROR, UNSCORED or its score."""
    from ._render import fmt_score

    return "ERROR" if run.status == "error" else fmt_score(run.score)


PIPE_EVERY_S = 15.0
"""Where stderr is no terminal, a line of how far a measurement got at most this often, so a long one
in a pipe or a log is never silent and a short one prints nothing."""


@contextmanager
def watching(ws: Workspace, label: str, *, show: bool = True) -> Iterator[Bar | None]:
    """A bar of the runs ``ws`` finishes inside the block, each run's score as its note, on a terminal
    (elsewhere a plain line every ``PIPE_EVERY_S``); nothing where not ``show`` (under --json). The bar
    is yielded so a caller can give its total once it is known."""
    if not show:
        yield None
        return
    if not wanted():
        with _lines(ws, label):
            yield None
        return
    bar = Bar(label, None)

    def watch(what: str, run: Run) -> None:
        if what == "finished":
            bar.advance(f"last: {run.case_id or run.machine} {verdict(run)}")
        elif run.scorecard is not None:
            bar.note(f"last: {run.case_id or run.machine} {verdict(run)}")

    ws.watchers.append(watch)
    try:
        yield bar
    finally:
        ws.watchers.remove(watch)
        bar.close()


@contextmanager
def _lines(ws: Workspace, label: str) -> Iterator[None]:
    """The runs finished inside the block, said on stderr as a plain line at most every ``PIPE_EVERY_S``."""
    import time

    import click

    done, said = 0, time.monotonic()

    def watch(what: str, run: Run) -> None:
        nonlocal done, said
        if what != "finished":
            return
        done += 1
        if time.monotonic() - said >= PIPE_EVERY_S:
            said = time.monotonic()
            runs = f"{done} run{'' if done == 1 else 's'}"
            last = f"{run.case_id or run.machine} {verdict(run)}"
            click.echo(inert(f"{label}: {runs} finished, last: {last}"), err=True)

    ws.watchers.append(watch)
    try:
        yield
    finally:
        ws.watchers.remove(watch)


_SPINNING: list[Any] = []
"""The spinner showing now, if any (``thinking``), so a question to the person can pause it."""


@contextmanager
def thinking(label: str = "thinking…", *, show: bool = True) -> Iterator[None]:
    """A spinner on stderr while a reply is awaited, on a terminal and where ``show`` only; gone when the
    block ends (what is printed meanwhile appears above it)."""
    if not (show and wanted()):
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(label) as status:
        _SPINNING.append(status)
        try:
            yield
        finally:
            _SPINNING.remove(status)


@contextmanager
def paused() -> Iterator[None]:
    """No spinner while the block runs (a question the person answers), the spinner back after it."""
    spinning = list(_SPINNING)
    for status in spinning:
        status.stop()
    yield  # not back after a Ctrl-C: the block it paused is ending
    for status in spinning:
        status.start()
