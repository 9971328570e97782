"""The bounds of one specialize or draft-rubric call, counted before it starts: the author's runs, each
try of the child's files (or the draft) and, for a child, its topics and every batch of cases it may be
asked for. Vetting runs the author's checks on stored runs, calling no model."""

from __future__ import annotations

from typing import Any

from machine.workspace import Workspace

from .._plan import Plan
from ._cases import most_batches
from ._options import DraftRubricOptions, SpecializeOptions


def plan_specialize(
    ws: Workspace, name: str, options: SpecializeOptions | None = None, **fields: Any
) -> Plan:
    """What ``specialize`` with these options may run at most (all of them the author machine's runs)."""
    chosen = SpecializeOptions.of(options, **fields)
    ws.load(name)  # the parent must load before anything is counted
    tries = chosen.retries + 1
    batches = 0 if chosen.reuse_cases else 1 + most_batches(chosen.cases)
    kept = (
        "its cases kept as they are"
        if chosen.reuse_cases
        else f"its topics and up to {batches - 1} batches of cases"
    )
    return Plan(
        operation="specialize",
        machine=name,
        runs=tries + batches,
        runs_are=f"the author's: {tries} tries at the child's files, {kept}",
    )


def plan_draft_rubric(
    ws: Workspace, name: str, options: DraftRubricOptions | None = None, **fields: Any
) -> Plan:
    """What ``draft_rubric`` with these options may run at most: the author's tries at the draft."""
    chosen = DraftRubricOptions.of(options, **fields)
    ws.load(name)
    tries = chosen.retries + 1
    return Plan(
        operation="draft-rubric",
        machine=name,
        runs=tries,
        runs_are=f"the author's: {tries} tries at the draft",
    )
