"""The runs training needs: the cases sampled ``samples`` times each on the live version, and stored runs
of the machine graded where they were never graded or were graded under an older rubric."""

from __future__ import annotations

from collections.abc import Callable

from machine.errors import BudgetExceeded
from machine.measure import BatchWriter
from machine.runs import Run
from machine.spec import Case, Machine
from machine.workspace import Workspace


async def sample(
    ws: Workspace,
    spec: Machine,
    cases: list[Case],
    samples: int,
    concurrency: int,
    pass_score: float,
    on_run: Callable[[Run], None] | None,
) -> int:
    """Run every case ``samples`` times, graded and stored; the number of runs made. Refused work is
    raised once the finished runs are stored."""
    writer = BatchWriter(ws.store)
    made = 0
    jobs = [(case, trial) for trial in range(samples) for case in cases]

    async def one(job: tuple[Case, int]) -> None:
        nonlocal made
        case, trial = job
        run = await ws.run(
            spec, case.input, case=case, trial=trial, grade=True, pass_score=pass_score, store=False
        )
        writer.add([run])
        made += 1
        if on_run is not None:
            on_run(run)

    stopped = await writer.run(jobs, one, concurrency=concurrency)
    if stopped:
        raise BudgetExceeded(
            f"sampling stopped after {made} of {len(jobs)} runs ({stopped}); they are stored"
        )
    return made


def pending(ws: Workspace, spec: Machine) -> list[Run]:
    """The machine's stored runs due for grading: finished, and never graded or graded under an older
    rubric."""
    fingerprint = spec.rubric.fingerprint
    return [
        run
        for run in ws.store.iter_runs(spec.name)
        if run.status == "ok" and (run.scorecard is None or run.scorecard.rubric_fingerprint != fingerprint)
    ]


async def grade_pending(ws: Workspace, spec: Machine, concurrency: int, pass_score: float) -> int:
    """Grade the machine's runs due for grading (``pending``); how many."""
    due = pending(ws, spec)
    writer = BatchWriter(ws.store)

    async def one(run: Run) -> None:
        writer.add([await ws.grade(run, spec, pass_score=pass_score, store=False)])

    stopped = await writer.run(due, one, concurrency=concurrency)
    if stopped:
        raise BudgetExceeded(f"grading the stored runs stopped ({stopped}); the graded ones are stored")
    return len(due)
