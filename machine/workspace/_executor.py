"""Runs made elsewhere. A workspace given an ``Executor`` (a Ray cluster's workers,
``machine.ops``'s ``RayExecutor``) hands it each run as it starts, and gets the finished run back, unstored
and ungraded. Whatever made it, the workspace does the rest as for a run made here: it refuses new work
once the budget is spent, charges the one budget for what the run used, grades and stores it. So every
command that makes runs (a suite, a comparison, an optimization, a training's gate) can make them
elsewhere, and the budget is never exceeded by more than the runs in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import Field

from machine._backends import EXECUTOR_GROUP, Backend, registry
from machine.budget import Budget
from machine.errors import BadInputError
from machine.runs import Model, Run
from machine.spec import BUILTIN_MACHINES, Machine


class RunOrder(Model):
    """One run as an executor is asked for it: the run as it starts (its machine by name, instructions,
    input, history, case, trial, model and effort), where the machine's files are, and the most it may
    spend."""

    run: Run
    folder: str | None = None
    """The machines folder the machine was loaded from, when it is not the workspace's own (an earlier
    revision's, exported for a comparison); None: the workspace's (or the library's) machines."""
    files: dict[str, str] = Field(default_factory=dict)
    """The files the run's sandbox starts with."""
    budget_usd: float | None = Field(default=None, ge=0)
    """What is left of the caller's budget when the run starts (None: no cap)."""


@runtime_checkable
class Executor(Protocol):
    """Makes runs somewhere else and returns each finished, ungraded and unstored."""

    name: str

    async def run(self, order: RunOrder) -> Run: ...

    def close(self) -> None: ...


async def made_elsewhere(
    executor: Executor, spec: Machine, run: Run, files: dict[str, str], budget: Budget, machines_dir: Path
) -> Run:
    """``run`` (a record as it starts) made by ``executor`` under what is left of ``budget``, and charged
    for what it used (priced by the worker at the same table, a failed call at the most it could cost)."""
    folder = origin_of(spec, machines_dir, executor.name)
    made = await executor.run(RunOrder(run=run, folder=folder, files=files, budget_usd=budget.remaining))
    budget.spend(made.cost_usd)
    return made


def origin_of(spec: Machine, machines_dir: Path, executor: str) -> str | None:
    """The machines folder ``spec`` was loaded from, when an executor must be sent it: None when it is
    the workspace's own or the library's (which every worker has by name)."""
    if spec.source is None:
        raise BadInputError(
            f"machine {spec.name!r} was made in code rather than loaded from a machines folder, so the "
            f"{executor} executor has no files to make its runs from: write it to machines/{spec.name}/"
            "machine.py, or make its runs here"
        )
    origin = spec.source.parents[spec.name.count("/") + 1].resolve()
    return None if origin in (machines_dir.resolve(), BUILTIN_MACHINES.resolve()) else str(origin)


@dataclass(frozen=True)
class ExecutorSetup:
    """What an executor factory is given: the workspace's root and trust file, the address of the cluster
    it runs on (when it takes one), the runs it keeps in flight, and the harness its runs use (by name,
    with its script and endpoint), for the workers to make alike."""

    root: Path
    address: str | None = None
    concurrency: int = 4
    harness: str | None = None
    script: str | None = None
    base_url: str | None = None
    trust: Path | None = None


@dataclass(frozen=True)
class ExecutorEntry(Backend):
    """How to start one executor, and what it declares: whether runs go elsewhere (None from the factory:
    runs are made in this process), and what an address names for it (``a Ray cluster``), empty when it
    takes none."""

    make: Callable[[ExecutorSetup], Executor | None]
    elsewhere: bool = True
    address: str = ""


EXECUTORS = registry(EXECUTOR_GROUP, ExecutorEntry, "executor")
"""Every executor by name, from the ``machine.executors`` entry points."""

HERE = ExecutorEntry(lambda _setup: None, elsewhere=False, default=True, makes="")
"""The embedded default: runs are made in this process, by the workspace itself."""


__all__ = [
    "EXECUTORS",
    "HERE",
    "Executor",
    "ExecutorEntry",
    "ExecutorSetup",
    "RunOrder",
    "made_elsewhere",
    "origin_of",
]
