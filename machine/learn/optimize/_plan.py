"""The bounds of one optimize call, counted before it starts: every arm measured on every case of both
sides, and the optimizer asked the most times a proposal may take."""

from __future__ import annotations

from typing import Any

from machine.workspace import Workspace

from .._plan import Plan
from ._ask import ASKS
from ._inputs import cases_of, holdout_of
from ._options import OptimizeOptions


def plan_optimize(ws: Workspace, name: str, options: OptimizeOptions | None = None, **fields: Any) -> Plan:
    """What ``optimize`` with these options may run at most: the live version and each proposal on the
    cases and the held-out cases (stored runs of the live version are reused, so it is often fewer), and
    up to ``ASKS`` optimizer runs a proposal."""
    chosen = OptimizeOptions.of(options, **fields)
    shown = cases_of(ws, name, chosen.cases).cases
    held = holdout_of(ws, name, chosen.holdout)
    cases = len(shown) + (len(held.cases) if held is not None else 0)
    proposals = chosen.rounds * chosen.candidates
    measured = chosen.trials * cases * (1 + proposals)
    return Plan(
        operation="optimize",
        machine=name,
        runs=measured + proposals * ASKS,
        runs_are=(
            f"{chosen.trials} trials of {cases} cases for the live version and each proposal, and up to "
            f"{ASKS} optimizer runs a proposal"
        ),
        steps=proposals,
        steps_are=f"proposals ({chosen.rounds} rounds of {chosen.candidates})",
    )
