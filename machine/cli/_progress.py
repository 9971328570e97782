"""Progress on a terminal: rich's bar on stderr, with the count, the rate, the time left and a note
(the last run's score, a step's loss). Shown only where stderr is a terminal, so a pipe or a log
stays clean; rich is imported only when a bar is shown, so start-up does not pay for it, and its
console leaves out colour under ``NO_COLOR`` by itself."""

from __future__ import annotations

import sys
from typing import Any


def wanted() -> bool:
    """Whether a bar would be seen: stderr is a terminal."""
    return sys.stderr.isatty()


class Bar:
    """One bar of ``total`` steps called ``label``; ``advance`` moves it, ``close`` leaves it as it ended."""

    def __init__(self, label: str, total: int, unit: str = "runs") -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.unit = unit
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task(label, total=max(total, 1), rate="", note="")
        self.progress.start()

    def advance(self, note: str = "") -> None:
        """One more step done; ``note`` says what it gave."""
        self.progress.update(self.task, advance=1, note=note)
        task = self.progress.tasks[0]
        if task.elapsed:
            self.progress.update(self.task, rate=f"{task.completed / task.elapsed:.1f} {self.unit}/s")

    def close(self) -> None:
        self.progress.stop()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()
