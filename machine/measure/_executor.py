"""Where a suite's runs are made. By default in this process (``Workspace.run``); an ``Executor`` makes
each one elsewhere (a Ray cluster's workers, ``machine.clients.ray_executor``) and hands the finished run
back. Whatever made it, the caller does the rest here: it refuses new work once the budget is spent,
charges the one budget for what the run used, grades it, and the suite writes it. A worker never writes
the store, and the budget is never exceeded by more than the runs in flight.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from machine.runs import Model, Run
from machine.spec import Case, Machine
from machine.workspace import Workspace


class RunOrder(Model):
    """One run as an executor is asked for it: what a worker needs to make it from the machines folder it
    was given (the machine by name, its input and case), and the most it may spend."""

    machine: str
    input: str
    case: dict[str, Any] | None = None
    trial: int | None = None
    model: str | None = None
    effort: str | None = None
    budget_usd: float | None = Field(default=None, ge=0)
    """What is left of the caller's budget when the run starts (None: no cap)."""


@runtime_checkable
class Executor(Protocol):
    """Makes runs somewhere else and returns each finished, ungraded and unstored."""

    name: str

    async def run(self, order: RunOrder) -> Run: ...

    def close(self) -> None: ...


async def executed(
    workspace: Workspace,
    executor: Executor,
    machine: Machine,
    case: Case,
    trial: int,
    model: str | None,
    pass_score: float,
) -> Run:
    """One run of ``case`` made by ``executor``: refused once the budget is spent, charged what it cost
    (the worker priced it, a failed call at the most it could have cost, as here), then graded here."""
    workspace.budget.check()
    effort = None if workspace.effort is None else str(workspace.effort.value)
    order = RunOrder(
        machine=machine.name, input=case.input, case=case.data(), trial=trial, model=model or machine.model,
        effort=effort, budget_usd=workspace.budget.remaining,
    )  # fmt: skip
    run = await executor.run(order)
    run = run.model_copy(update={"revision": workspace.revision})
    workspace.budget.spend(run.cost_usd)  # priced by the worker at the same table, failed calls included
    if run.status == "ok":
        run = await workspace.grade(run, machine, pass_score=pass_score, store=False, logged=False)
    workspace.finished(run)
    return run


__all__ = ["Executor", "RunOrder", "executed"]
