"""Suites: every case, several trials each, graded; per-case means and pass^N.

Runs stream to the store as they finish; the suite keeps only each run's score, so memory stays
flat however many runs there are. A failed run is counted and left out of the scores; a spent
budget stops scheduling new runs while those in flight finish.

For a machine with a counterpart each (case, trial) is a whole conversation: its graded last turn (or
the turn that failed) is tallied like a single run, and every turn of both sides is written.

Every invocation is a suite with an id, recorded on each of its runs and (with its cases and trials) in
the store, so a suite that was killed can be resumed: a (case, trial) pair is finished once the store
holds its result run (failed, or graded), and resuming runs only the other pairs. A run is written
whole or not at all, so a crash loses at most the runs of the last second, and exactly those are rerun;
resuming also clears the sandboxes the killed invocation left (``_suite_sandboxes``). A store that cannot be
written stops the suite with ``WorkFailed``, which carries the report and names the runs not stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field, computed_field

from machine.errors import BadInputError, Fix, NotFoundError, WorkFailed
from machine.runs import Harness, Model, Run, SuiteRecord, counted, new_run_id
from machine.spec import Case, Machine
from machine.workspace import Workspace, converse

from ._options import MeasureOptions
from ._pool import BatchWriter, said
from ._suite_sandboxes import suite_sandboxes
from ._tally import CaseResult, CriterionResult, tally_criteria


class SuiteSummary(Model):
    """A suite's figures over all its cases."""

    runs: int
    mean: float | None
    pass_rate: float | None
    """The share of decided runs that passed (undecided ones are neither passes nor fails)."""
    undecided: int
    """Scored runs an UNSCORED criterion could still turn from pass to fail or back."""
    unscored: int
    """Criterion grades that came back UNSCORED."""
    unscored_runs: int
    """Runs with no scored criterion at all."""
    errors: int
    cost_usd: float


class SuiteReport(Model):
    """A suite's result: each case's trials, each criterion over the graded runs, and the summary."""

    machine: str
    cases: list[CaseResult]
    cost_usd: float = 0.0
    stopped: str | None = None
    """Why scheduling stopped early (the budget), or None."""
    suite_id: str | None = None
    resumed: int = 0
    """(case, trial) pairs finished by an earlier invocation of this suite (``--resume``)."""
    criteria: dict[str, CriterionResult] = Field(default_factory=dict)
    """Each criterion over the graded runs, in rubric order."""

    @property
    def runs(self) -> int:
        """Runs counted, failed ones included."""
        return sum(c.trials for c in self.cases)

    @property
    def scored(self) -> list[float]:
        """Every scored run's score."""
        return [s for c in self.cases for s in c.scores]

    @property
    def mean(self) -> float | None:
        """The mean over every scored run."""
        scores = self.scored
        return sum(scores) / len(scores) if scores else None

    @property
    def pass_rate(self) -> float | None:
        """The share of decided runs that passed; None when no run was decided."""
        decided = sum(c.decided for c in self.cases)
        return sum(c.passes for c in self.cases) / decided if decided else None

    @property
    def undecided(self) -> int:
        """Scored runs an UNSCORED criterion could still turn: neither passes nor fails."""
        return sum(c.undecided for c in self.cases)

    @property
    def unscored(self) -> int:
        """Criterion grades that came back UNSCORED."""
        return sum(c.unscored_grades for c in self.cases)

    @property
    def unscored_runs(self) -> int:
        """Runs with no scored criterion."""
        return sum(c.unscored for c in self.cases)

    @property
    def errors(self) -> int:
        """Failed runs."""
        return sum(c.errors for c in self.cases)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> SuiteSummary:
        """The figures over all cases."""
        return SuiteSummary(
            runs=self.runs,
            mean=self.mean,
            pass_rate=self.pass_rate,
            undecided=self.undecided,
            unscored=self.unscored,
            unscored_runs=self.unscored_runs,
            errors=self.errors,
            cost_usd=self.cost_usd,
        )


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
                f"suite {resume} ran machine {record.machine!r}, not {machine.name!r}: resume it as a suite "
                f"of {record.machine!r}"
            )
        return record
    latest = workspace.store.latest_suite(machine.name, suite_key(cases, trials))
    if latest is None:
        raise NotFoundError(
            f"no earlier suite of {machine.name!r} ran these {counted(len(cases), 'case')} with "
            f"{counted(trials, 'trial')} each, "
            "so there is nothing to resume",
            fixes=[Fix("resume", "SUITE_ID", "to name the suite to resume")],
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
    options: MeasureOptions | None = None,
    *,
    harness: Harness | None = None,
    model: str | None = None,
    on_run: Callable[[Run], None] | None = None,
    resume: str | bool = False,
    cases_file: str | None = None,
    on_start: Callable[[SuiteReport, int], None] | None = None,
    **fields: Any,
) -> SuiteReport:
    """Run every case ``options.trials`` times (``options``, or its fields as keywords: ``trials=3``),
    graded, and report (made wherever the workspace makes runs).

    ``resume=True`` continues the newest suite of this machine on the same cases and trials, and a
    suite id continues that suite (with its own cases and trials): only the pairs without a finished
    run are run, and the report covers the runs of both invocations. ``on_start(report, remaining)``
    is called once the plan is known (``report.resumed`` pairs are done already).
    """
    o = MeasureOptions.of(options, **fields)
    trials, concurrency, pass_score = o.trials, o.concurrency, o.pass_score
    record = _record(workspace, machine, cases, trials, model, cases_file, resume)
    if resume is not False:  # the suite resumed has cases and trials of its own
        cases, trials = [Case.model_validate(data) for data in record.cases], record.trials
    model = record.model
    results = {case.id: CaseResult(case_id=case.id) for case in cases}
    report = _empty_report(machine, record, list(results.values()))

    def count(run: Run) -> None:
        results[run.case_id or ""].add(run)
        tally_criteria(report.criteria, run)

    done = _finished(workspace, record, machine.name, set(results), pass_score, count) if resume else set()
    report.resumed = len(done)
    todo = [(case, trial) for trial in range(trials) for case in cases if (case.id, trial) not in done]
    if on_start is not None:
        on_start(report, len(todo))
    spent_before = workspace.budget.spent
    try:
        with suite_sandboxes(workspace, record.id, resuming=resume is not False) as runner:
            jobs = _Jobs(runner, machine, record.id, harness, model, pass_score, count, on_run)
            report.stopped = await jobs.writer.run(todo, jobs.one, concurrency=concurrency)
    except WorkFailed as error:  # what finished is counted and stored: the report and the way on
        report.stopped = error.message if error.cause is None else said(error.cause)
        error.report = report
        error.fixes = (Fix("resume", record.id, "to run the rest once that is put right"),)
        raise
    finally:
        report.cost_usd = workspace.budget.spent - spent_before
    return report


@dataclass
class _Jobs:
    """How a suite does one (case, trial): run it, mark its turns with the suite, count its result and
    hand every turn to the writer."""

    workspace: Workspace
    machine: Machine
    suite_id: str
    harness: Harness | None
    model: str | None
    pass_score: float
    count: Callable[[Run], None]
    on_run: Callable[[Run], None] | None

    def __post_init__(self) -> None:
        self.writer = BatchWriter(self.workspace.store)

    async def one(self, job: tuple[Case, int]) -> str | None:
        run, turns, stopped = await _case_run(
            self.workspace, self.machine, *job, self.harness, self.model, self.pass_score
        )
        marked = {turn.id: turn.model_copy(update={"suite_id": self.suite_id}) for turn in turns}
        run = None if run is None else marked.get(run.id, run)
        if run is not None:
            self.count(run)
        self.writer.add(marked.values())  # a conversation's turns go into one batch together
        if self.on_run is not None and run is not None:
            self.on_run(run)
        return stopped


def _empty_report(machine: Machine, record: SuiteRecord, cases: list[CaseResult]) -> SuiteReport:
    """The report the suite counts into, built from its own tallies (so nothing needs checking)."""
    criteria = {name: CriterionResult() for name in machine.rubric}
    return SuiteReport.model_construct(
        machine=machine.name, cases=cases, suite_id=record.id, criteria=criteria
    )


def _record(
    workspace: Workspace,
    machine: Machine,
    cases: Sequence[Case],
    trials: int,
    model: str | None,
    cases_file: str | None,
    resume: str | bool,
) -> SuiteRecord:
    """The suite this invocation continues (``resume``), or a new one, recorded before any run starts."""
    if resume is not False:
        found = find_suite(workspace, machine, cases, trials, resume)
        return found.model_copy(update={"model": model or found.model})
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
    return record


def _finished(
    workspace: Workspace,
    record: SuiteRecord,
    machine: str,
    cases: set[str],
    pass_score: float,
    count: Callable[[Run], None],
) -> set[tuple[str, int]]:
    """The (case, trial) pairs an earlier invocation finished, each counted once."""
    done: set[tuple[str, int]] = set()
    for run in workspace.store.iter_suite_runs(record.id):
        pair = (run.case_id or "", run.trial or 0)
        if pair in done or run.case_id not in cases or not is_result(run, machine):
            continue
        if run.scorecard is not None:
            run = run.model_copy(update={"scorecard": run.scorecard.with_pass_score(pass_score)})
        done.add(pair)
        count(run)
    return done


async def _case_run(
    workspace: Workspace,
    machine: Machine,
    case: Case,
    trial: int,
    harness: Harness | None,
    model: str | None,
    pass_score: float,
) -> tuple[Run | None, list[Run], str | None]:
    """One (case, trial): its result run, every turn to store, and the budget's word if it cut a
    conversation short. For a machine with a counterpart it is a whole conversation."""
    if machine.counterpart is None:
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
        return run, [run], None
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
    return conversation.result, conversation.turns, conversation.stopped
