"""Family suites: every machine of a family on its own cases, then the criteria the root declares
(which every member inherits) across all of their runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, computed_field

from machine.errors import Fix, plain_spelling
from machine.runs import Harness, Model, Run
from machine.workspace import Workspace

from ._options import MeasureOptions
from ._suite import SuiteReport, run_suite
from ._tally import CriterionResult


class Skipped(Model):
    """A family member left out, and why."""

    machine: str
    reason: str


class FamilyReport(Model):
    """A family suite: each member's report, the members left out and why, and the criteria the root
    declares (which every member inherits) over every member's graded runs."""

    root: str
    machines: list[SuiteReport] = Field(default_factory=list)
    inherited: dict[str, CriterionResult] = Field(default_factory=dict)
    skipped: list[Skipped] = Field(default_factory=list)
    stopped: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_usd(self) -> float:
        """What every member's suite cost together."""
        return sum(r.cost_usd for r in self.machines)


async def run_family(
    workspace: Workspace,
    name: str,
    options: MeasureOptions | None = None,
    *,
    harness: Harness | None = None,
    model: str | None = None,
    on_run: Callable[[Run], None] | None = None,
    on_start: Callable[[SuiteReport, int], None] | None = None,
    **fields: Any,
) -> FamilyReport:
    """Run every family member's own ``cases.json`` (a member without one is skipped with a note),
    one member after another, with ``options`` (or its fields as keywords), then put the root's
    criteria together across all of their runs."""
    o = MeasureOptions.of(options, **fields)
    root = workspace.load(name)
    report = FamilyReport(root=name, inherited={c: CriterionResult() for c in root.rubric})
    for member in workspace.family(name):
        if report.stopped:
            report.skipped.append(
                Skipped(machine=member, reason="not run: the budget stopped the family suite")
            )
            continue
        if member != name and workspace.trust.blocking(member):
            report.skipped.append(
                Skipped(
                    machine=member,
                    reason="not trusted: it holds code a model wrote; review it, then "
                    + plain_spelling(Fix(operation="trust", machine=member)),
                )
            )
            continue
        spec = root if member == name else workspace.load(member)
        cases_path = workspace.cases_file(member)
        if not cases_path.exists():
            report.skipped.append(Skipped(machine=member, reason=f"no cases: {cases_path} does not exist"))
            continue
        suite = await run_suite(
            workspace,
            spec,
            workspace.cases(spec),
            o,
            harness=harness,
            model=model,
            on_run=on_run,
            cases_file=str(cases_path),
            on_start=on_start,
        )
        report.machines.append(suite)
        for criterion, figures in report.inherited.items():
            if criterion in suite.criteria:
                figures.merge(suite.criteria[criterion])
        report.stopped = suite.stopped
    return report
