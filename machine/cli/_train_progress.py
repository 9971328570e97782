"""What ``machine train`` shows while it works: each counted phase (sampling, measuring the live version,
the steps, measuring the checkpoint) as a bar on a terminal, and as plain lines on stderr anywhere else (a
pipe, a log, CI), so no phase runs silent however long it takes. Each step's line is printed in both
(above the bar on a terminal); a run is a line in a pipe and the bar's note on a terminal."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from machine.runs import counted, inert

from ._progress import Bar, verdict

if TYPE_CHECKING:
    from machine.runs import Run
    from machine.training import Phase, StepMetrics


class TrainProgress:
    """Told what a training does (``line``, ``begin``, ``run``, ``step``); ``bars``: draw rich's bar for
    each phase (stderr is a terminal), else print a plain line for each run; ``step_line`` words a step."""

    def __init__(self, *, bars: bool, step_line: Callable[[StepMetrics], str]) -> None:
        self.bars, self.step_line = bars, step_line
        self.bar: Bar | None = None
        self.phase: Phase | None = None
        self.done = 0

    def line(self, text: str) -> None:
        """A line of what it does; a bar still drawn is left as it ended, above it."""
        self.close()
        click.echo(inert(text), err=True)

    def begin(self, phase: Phase) -> None:
        """A counted phase begins: a bar of it, or a line saying how many runs or steps it takes."""
        self.close()
        self.phase, self.done = phase, phase.done
        if self.bars:
            self.bar = Bar(phase.what, phase.total, phase.unit)
            self.bar.progress.update(self.bar.task, completed=phase.done)
            return
        left = f", from step {phase.done + 1}" if phase.done else ""
        click.echo(inert(f"{phase.what}: {counted(phase.total, phase.unit[:-1])}{left}"), err=True)

    def run(self, run: Run) -> None:
        """A run finished: the bar moves (its score its note), or a line says it."""
        self.done += 1
        said = f"{run.case_id or run.machine} ({run.version or run.model}): {verdict(run)}"
        if self.bar is not None:
            self.bar.advance(said)
        else:
            click.echo(inert(f"  [{self._count()}] {said}"), err=True)
        self._finished()

    def step(self, metrics: StepMetrics) -> None:
        """A step finished: its line (above the bar on a terminal), and the bar moves."""
        self.done = metrics.step
        if self.bar is not None:
            self.bar.progress.console.print(self.step_line(metrics), markup=False, highlight=False)
            self.bar.advance("-" if metrics.loss is None else f"loss {metrics.loss:.4f}")
        else:
            click.echo(self.step_line(metrics), err=True)
        self._finished()

    def close(self) -> None:
        """Leave the bar drawn as it ended (a question, a line or the report comes next)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _count(self) -> str:
        return str(self.done) if self.phase is None else f"{self.done}/{self.phase.total}"

    def _finished(self) -> None:
        """The bar closed once its phase is done, before whatever asks or prints next."""
        if self.phase is not None and self.done >= self.phase.total:
            self.close()
