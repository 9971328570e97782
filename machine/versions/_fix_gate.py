"""A gate fixed before a training: the held-out file pinned by its sha256, the gate's settings, and the
live version measured on those cases then (its stored graded runs reused, the missing ones made), so a
checkpoint is judged on what was decided before it existed, never on cases or settings chosen after."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from machine.errors import BudgetExceeded
from machine.measure import MeasureOptions
from machine.runs import Run
from machine.spec import Case, FixedGate, open_book, require_live, sha256_of
from machine.training import Phase
from machine.workspace import Workspace

from ._gate import tally_for
from ._propose import begun, plan_runs, run_jobs


async def fix_gate(
    ws: Workspace,
    name: str,
    cases: list[Case],
    path: Path,
    options: MeasureOptions | None = None,
    *,
    min_z: float,
    on_run: Callable[[Run], None] | None = None,
    on_begin: Callable[[Phase], None] | None = None,
    **fields: Any,
) -> FixedGate:
    """The gate ``name``'s next candidate faces on ``cases`` (the held-out file ``path``), measured with
    ``options`` (or its fields as keywords), with its baseline measured now (``on_begin`` told how many
    runs that takes)."""
    o = MeasureOptions.of(options, **fields)
    trials, pass_score = o.trials, o.pass_score
    spec = ws.load(name)
    live = require_live(open_book(ws.machines_dir / name, spec), spec, "have a gate fixed")
    sides = {live.label: tally_for(live, ws.harness)}
    jobs = plan_runs(ws, name, cases, sides, trials, pass_score, live=live.label)
    begun(on_begin, f"measuring {live.label} on {path.name}", jobs)
    spent = ws.budget.spent
    stopped = await run_jobs(ws, spec, sides, jobs, o.concurrency, pass_score, on_run)
    if stopped:
        raise BudgetExceeded(
            f"measuring {live.label} on the held-out cases before training stopped ({stopped})"
        )
    tally = sides[live.label]
    means = [sum(scores) / len(scores) for scores in tally.scores.values() if scores]
    return FixedGate(
        file=_relative(path, ws.root),
        sha256=sha256_of(path) or "",  # the cases were just read from it
        cases=len(cases),
        trials=trials,
        min_z=min_z,
        pass_score=pass_score,
        held=spec.rubric.held,
        baseline=live.label,
        baseline_mean=sum(means) / len(means) if means else None,
        baseline_runs=tally.figures.runs,
        cost_usd=ws.budget.spent - spent,
    )


def _relative(path: Path, root: Path) -> str:
    resolved = path.resolve()
    return (
        resolved.relative_to(root.resolve()).as_posix()
        if resolved.is_relative_to(root.resolve())
        else str(path)
    )
