"""Suites: every case, several trials each, graded; per-case means and pass^N.

Runs stream to the store as they finish; the suite keeps only each run's score, so memory stays
flat however many runs there are. A failed run is counted and left out of the scores; a spent
budget stops scheduling new runs while those in flight finish.

For a machine with a counterpart each (case, trial) is a whole conversation: its graded last turn (or
the turn that failed) is tallied like a single run, and every turn of both sides is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._cases import Case
from ._conversation import converse
from ._errors import BudgetExceeded
from ._harness import Harness
from ._runs import Run
from ._spec import Machine
from ._workspace import Workspace


@dataclass
class CaseResult:
    id: str
    trials: int = 0
    scores: list[float] = field(default_factory=list)
    passes: int = 0
    unscored: int = 0
    """Runs with no scored criterion at all: left out of the mean."""
    unscored_grades: int = 0
    """Criterion grades that came back UNSCORED (each left out of its run's score)."""
    errors: int = 0

    @property
    def mean(self) -> float | None:
        return sum(self.scores) / len(self.scores) if self.scores else None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "trials": self.trials,
            "mean": self.mean,
            "passes": self.passes,
            "scores": self.scores,
        }


@dataclass
class SuiteReport:
    machine: str
    cases: list[CaseResult]
    cost_usd: float = 0.0
    stopped: str | None = None
    """Why scheduling stopped early (the budget), or None."""

    @property
    def runs(self) -> int:
        return sum(c.trials for c in self.cases)

    @property
    def scored(self) -> list[float]:
        return [s for c in self.cases for s in c.scores]

    @property
    def mean(self) -> float | None:
        scores = self.scored
        return sum(scores) / len(scores) if scores else None

    @property
    def pass_rate(self) -> float | None:
        scored = len(self.scored)
        return sum(c.passes for c in self.cases) / scored if scored else None

    @property
    def unscored(self) -> int:
        return sum(c.unscored_grades for c in self.cases)

    @property
    def unscored_runs(self) -> int:
        return sum(c.unscored for c in self.cases)

    @property
    def errors(self) -> int:
        return sum(c.errors for c in self.cases)

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "cases": [c.to_json() for c in self.cases],
            "summary": {
                "runs": self.runs,
                "mean": self.mean,
                "pass_rate": self.pass_rate,
                "unscored": self.unscored,
                "unscored_runs": self.unscored_runs,
                "errors": self.errors,
                "cost_usd": self.cost_usd,
            },
            "stopped": self.stopped,
        }


WRITE_BATCH = 64
"""Finished runs are written this many at a time: one transaction instead of one per run. A crash
loses at most one batch of finished runs, never half a run."""


async def run_suite(
    workspace: Workspace,
    machine: Machine,
    cases: Sequence[Case],
    *,
    trials: int = 1,
    concurrency: int = 4,
    pass_score: float = 1.0,
    harness: Harness | None = None,
    model: str | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> SuiteReport:
    if trials < 1:
        raise ValueError("trials must be at least 1")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    results = {case.id: CaseResult(case.id) for case in cases}
    report = SuiteReport(machine=machine.name, cases=list(results.values()))
    spent_before = workspace.budget.spent
    pending: Iterator[tuple[Case, int]] = ((case, trial) for trial in range(trials) for case in cases)
    finished: list[Run] = []

    def flush() -> None:
        if finished:
            workspace.store.put_many(finished)
            finished.clear()

    async def worker() -> None:
        for case, trial in pending:
            if report.stopped:
                return
            try:
                if machine.counterpart is not None:  # a case is a whole conversation; its result is tallied
                    conversation = await converse(
                        workspace,
                        machine,
                        case,
                        trial=trial,
                        harness=harness,
                        model=model,
                        grade=True,
                        pass_score=pass_score,
                        store=False,
                    )
                    run, turns = conversation.result, conversation.turns
                    report.stopped = report.stopped or conversation.stopped
                else:
                    run = await workspace.run(
                        machine,
                        case.input,
                        case=case,
                        trial=trial,
                        harness=harness,
                        model=model,
                        grade=True,
                        pass_score=pass_score,
                        store=False,
                    )
                    turns = [run]
            except BudgetExceeded as error:
                report.stopped = str(error)
                return
            if run is not None:
                tally(results[case.id], run)
            finished.extend(turns)
            if len(finished) >= WRITE_BATCH:
                flush()
            if on_run is not None and run is not None:
                on_run(run)

    try:
        async with anyio.create_task_group() as group:
            for _ in range(min(concurrency, len(cases) * trials)):
                group.start_soon(worker)
    finally:
        flush()
    report.cost_usd = workspace.budget.spent - spent_before
    return report


def tally(result: CaseResult, run: Run) -> None:
    result.trials += 1
    if run.status == "error":
        result.errors += 1
        return
    result.unscored_grades += len(run.scorecard.unscored) if run.scorecard else 0
    score = run.score
    if score is None:
        result.unscored += 1
        return
    result.scores.append(score)
    result.passes += bool(run.passed)
