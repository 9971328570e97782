"""A suite planned before anything runs, then run: what ``machine suite``, the MCP ``rehearse`` tool and
``handle.suite()`` all do, so each face checks the same things and gets the same report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from machine.errors import BadInputError
from machine.measure import MeasureOptions, SuiteReport, run_suite
from machine.runs import Model, Run, is_free
from machine.spec import Case, Machine
from machine.workspace import CASES_NAME as CASES_NAME  # a file named by a caller that may not name paths
from machine.workspace import Workspace, folder_cases_file


class SuitePlan(Model):
    """A suite checked before any run: the machine, its cases and where they came from, the trials,
    the model runs use (``model`` overrides the machine's) and the harness."""

    machine: str
    cases_file: str
    cases: list[Case]
    trials: int
    model: str | None
    run_model: str
    harness: str
    concurrency: int = MeasureOptions.field("concurrency")
    pass_score: float = MeasureOptions.field("pass_score")

    @property
    def runs(self) -> int:
        """How many runs the suite makes."""
        return len(self.cases) * self.trials

    @property
    def options(self) -> MeasureOptions:
        """How the suite measures: its trials, concurrency and pass score."""
        return MeasureOptions.taken_from(self)


def plan_suite(
    ws: Workspace,
    machine: str | Machine,
    options: MeasureOptions | None = None,
    *,
    cases: str | Path | Sequence[Case] | None = None,
    model: str | None = None,
    in_folder: bool = False,
    max_trials: int | None = None,
    **fields: Any,
) -> SuitePlan:
    """Check a suite of ``machine`` (a name, or the machine itself): its cases (``cases``, else
    cases.json; with ``in_folder`` only the name of a file in the machine's own folder), its ``options``
    (or their fields as keywords: ``trials=3``; trials at most ``max_trials``), and that the model has a
    price under the budget's cap. Raises with what is wrong."""
    trials = fields.get("trials", options.trials if options is not None else 1)
    if max_trials is not None and isinstance(trials, int) and not 1 <= trials <= max_trials:  # a face's cap
        raise BadInputError(f"trials={trials} is not allowed: give 1 to {max_trials}")
    o = MeasureOptions.of(options, **fields)
    spec = machine if isinstance(machine, Machine) else ws.load(machine)
    name = spec.name
    if cases is not None and not isinstance(cases, str | Path):
        return _plan(ws, spec, list(cases), "(given)", model, o)
    path = _cases_path(ws, name, cases, in_folder)
    try:
        chosen = ws.cases(spec, path)
    except BadInputError as error:
        if not in_folder:
            raise
        raise BadInputError(
            f"the cases file {path.name} of machine {name!r} cannot be used: {error}"
        ) from error
    except (ValueError, OSError) as error:
        raise BadInputError(
            f"the cases file {path.name} of machine {name!r} cannot be read: {error}"
        ) from error
    return _plan(ws, spec, chosen, str(path), model, o)


def _plan(
    ws: Workspace, spec: Machine, cases: list[Case], cases_file: str, model: str | None, o: MeasureOptions
) -> SuitePlan:
    run_model = model or spec.model
    if not is_free(ws.harness.name):  # under a cap, an unknown price is refused before anything runs
        ws.budget.probe_price(run_model)
    return SuitePlan.model_construct(  # from a loaded machine and loaded cases: nothing to check again
        machine=spec.name,
        cases_file=cases_file,
        cases=cases,
        trials=o.trials,
        model=model,
        run_model=run_model,
        harness=ws.harness.name,
        concurrency=o.concurrency,
        pass_score=o.pass_score,
    )


def _cases_path(ws: Workspace, name: str, cases: str | Path | None, in_folder: bool) -> Path:
    if not in_folder:
        return ws.cases_file(name, cases)
    return folder_cases_file(ws.machines_dir / name, name, cases, names_only=True)


async def run_planned(
    ws: Workspace,
    plan: SuitePlan,
    *,
    resume: str | bool = False,
    on_run: Callable[[Run], None] | None = None,
    on_start: Callable[[SuiteReport, int], None] | None = None,
    spec: Machine | None = None,
) -> SuiteReport:
    """Run a planned suite (or finish an earlier one, with ``resume``) and report; ``spec`` is the machine
    it was planned for, when it was given one rather than a name."""
    return await run_suite(
        ws,
        spec or ws.load(plan.machine),
        plan.cases,
        plan.options,
        model=plan.model,
        on_run=on_run,
        resume=resume,
        cases_file=plan.cases_file,
        on_start=on_start,
    )
