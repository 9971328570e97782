"""Suites: every case, several trials each, graded; per-case means and pass^N.

Runs stream to the store as they finish; the suite keeps only each run's score, so memory stays
flat however many runs there are. A failed run is counted and left out of the scores; a spent
budget stops scheduling new runs while those in flight finish.

For a machine with a counterpart each (case, trial) is a whole conversation: its graded last turn (or
the turn that failed) is tallied like a single run, and every turn of both sides is written.

Every invocation is a suite with an id, recorded on each of its runs and (with its cases and trials) in
the store, so a suite that was killed can be resumed: a (case, trial) pair is finished once the store
holds its result run (failed, or graded), and resuming runs only the other pairs. A run is written
whole or not at all, so a crash loses at most the batch not yet written, and exactly that is rerun.

A family suite runs every machine of a family on its own cases, then puts the criteria the root declares
(which every member inherits) together across all of them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._cases import Case
from ._conversation import converse
from ._errors import BadInputError, BudgetExceeded, NotFoundError
from ._harness import Harness
from ._runs import Run, new_run_id
from ._spec import Machine
from ._store import Store, SuiteRecord
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
class CriterionResult:
    """One criterion over a suite's graded runs: its mean where scored; UNSCORED grades counted apart."""

    total: float = 0.0
    runs: int = 0
    """Runs where the criterion was scored."""
    passes: int = 0
    """Scored runs where the criterion reached the pass score."""
    unscored: int = 0

    @property
    def mean(self) -> float | None:
        return self.total / self.runs if self.runs else None

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.runs if self.runs else None

    def add(self, other: CriterionResult) -> None:
        self.total += other.total
        self.runs += other.runs
        self.passes += other.passes
        self.unscored += other.unscored

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean, "pass_rate": self.pass_rate, "runs": self.runs, "unscored": self.unscored}


@dataclass
class SuiteReport:
    machine: str
    cases: list[CaseResult]
    cost_usd: float = 0.0
    stopped: str | None = None
    """Why scheduling stopped early (the budget), or None."""
    suite_id: str | None = None
    resumed: int = 0
    """(case, trial) pairs finished by an earlier invocation of this suite (``--resume``)."""
    criteria: dict[str, CriterionResult] = field(default_factory=dict)
    """Each criterion over the graded runs, in rubric order."""

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
            "criteria": {name: c.to_json() for name, c in self.criteria.items()},
            "stopped": self.stopped,
            "suite_id": self.suite_id,
            "resumed": self.resumed,
        }


WRITE_BATCH = 64
"""Finished runs are written this many at a time: one transaction instead of one per run. A crash
loses at most one batch of finished runs, never half a run."""


class BatchWriter:
    """Collects finished runs and writes them ``WRITE_BATCH`` at a time; ``flush`` writes the rest.
    Runs added together (a conversation's turns) land in the same batch."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[Run] = []

    def add(self, runs: Iterable[Run]) -> None:
        self.pending.extend(runs)
        if len(self.pending) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.store.put_many(self.pending)
            self.pending.clear()


def suite_key(cases: Sequence[Case], trials: int) -> str:
    """The fingerprint of a suite's work: its cases (all their data) and the number of trials."""
    text = json.dumps({"cases": [c.data() for c in cases], "trials": trials}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def find_suite(
    workspace: Workspace, machine: Machine, cases: Sequence[Case], trials: int, resume: str | bool
) -> SuiteRecord:
    """The suite ``--resume`` continues: the one named, else the newest of ``machine`` on the same
    cases and trials."""
    if isinstance(resume, str):
        record = workspace.store.get_suite(resume)
        if record.machine != machine.name:
            raise BadInputError(
                f"suite {resume} ran machine {record.machine!r}, not {machine.name!r}: "
                f"resume it with `machine suite {record.machine} --resume {resume}`"
            )
        return record
    latest = workspace.store.latest_suite(machine.name, suite_key(cases, trials))
    if latest is None:
        raise NotFoundError(
            f"no earlier suite of {machine.name!r} ran these {len(cases)} cases with --trials {trials}, "
            "so there is nothing to resume: leave out --resume (or pass --resume SUITE_ID)"
        )
    return latest


def is_result(run: Run, machine: str) -> bool:
    """Whether ``run`` finishes its (case, trial) pair: a failed run (of either side of a
    conversation), or the machine's graded run. A conversation's other turns are not results."""
    if run.case_id is None or run.trial is None:
        return False
    return run.status == "error" or (run.machine == machine and run.scorecard is not None)


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
    resume: str | bool = False,
    cases_file: str | None = None,
    on_start: Callable[[SuiteReport, int], None] | None = None,
) -> SuiteReport:
    """Run every case ``trials`` times, graded, and report.

    ``resume=True`` continues the newest suite of this machine on the same cases and trials, and a
    suite id continues that suite (with its own cases and trials): only the pairs without a finished
    run are run, and the report covers the runs of both invocations. ``on_start(report, remaining)``
    is called once the plan is known (``report.resumed`` pairs are done already).
    """
    if trials < 1:
        raise ValueError("trials must be at least 1")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if resume is not False:
        record = find_suite(workspace, machine, cases, trials, resume)
        cases = [Case.model_validate(data) for data in record.cases]
        trials = record.trials
        model = model or record.model
    else:
        record = SuiteRecord(
            id=new_run_id(),
            machine=machine.name,
            key=suite_key(cases, trials),
            trials=trials,
            cases=[c.data() for c in cases],
            cases_file=cases_file,
            model=model,
        )
        workspace.store.put_suite(record)
    results = {case.id: CaseResult(case.id) for case in cases}
    report = SuiteReport(
        machine=machine.name,
        cases=list(results.values()),
        suite_id=record.id,
        criteria={name: CriterionResult() for name in machine.rubric},
    )
    done: set[tuple[str, int]] = set()
    if resume is not False:
        for run in workspace.store.iter_suite_runs(record.id):
            pair = (run.case_id or "", run.trial or 0)
            if pair in done or run.case_id not in results or not is_result(run, machine.name):
                continue
            if run.scorecard is not None:
                run = run.model_copy(update={"scorecard": run.scorecard.with_pass_score(pass_score)})
            done.add(pair)
            tally(results[pair[0]], run)
            tally_criteria(report, run)
        report.resumed = len(done)
    todo = [(case, trial) for trial in range(trials) for case in cases if (case.id, trial) not in done]
    if on_start is not None:
        on_start(report, len(todo))
    spent_before = workspace.budget.spent
    pending: Iterator[tuple[Case, int]] = iter(todo)
    writer = BatchWriter(workspace.store)

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
            marked = {turn.id: turn.model_copy(update={"suite_id": record.id}) for turn in turns}
            run = None if run is None else marked.get(run.id, run)
            if run is not None:
                tally(results[case.id], run)
                tally_criteria(report, run)
            writer.add(marked.values())  # a conversation's turns go into one batch together
            if on_run is not None and run is not None:
                on_run(run)

    try:
        async with anyio.create_task_group() as group:
            for _ in range(min(concurrency, len(todo))):
                group.start_soon(worker)
    finally:
        writer.flush()
    report.cost_usd = workspace.budget.spent - spent_before
    return report


def tally_criteria(report: SuiteReport, run: Run) -> None:
    """Add a graded run's criterion grades to the report's per-criterion figures."""
    if run.status == "error" or run.scorecard is None:
        return
    card = run.scorecard
    for name, grade in card.criteria.items():
        figures = report.criteria.setdefault(name, CriterionResult())
        if grade.score is None:
            figures.unscored += 1
            continue
        figures.total += grade.score
        figures.runs += 1
        figures.passes += grade.score >= card.pass_score - 1e-9


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
