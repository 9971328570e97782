"""The bounds of one optimize call, counted before it starts: every arm measured on every case of both
sides, and the optimizer asked the most times a proposal may take; and whether either set of cases is too
few for a proposal to be kept at ``min_z`` (``thin_gate``)."""

from __future__ import annotations

from typing import Any

from machine.runs import counted
from machine.versions import thin_gate
from machine.workspace import Workspace

from .._plan import Plan
from ._ask import ASKS
from ._inputs import Chosen, cases_of, holdout_of
from ._options import OptimizeOptions


def plan_optimize(ws: Workspace, name: str, options: OptimizeOptions | None = None, **fields: Any) -> Plan:
    """What ``optimize`` with these options may run at most: the live version and each proposal on the
    cases and the held-out cases (stored runs of the live version are reused, so it is often fewer), and
    up to ``ASKS`` optimizer runs a proposal."""
    chosen = OptimizeOptions.of(options, **fields)
    taught = cases_of(ws, name, chosen.cases)
    shown = taught.cases
    held = holdout_of(ws, name, chosen.holdout)
    cases = len(shown) + (len(held.cases) if held is not None else 0)
    proposals = chosen.rounds * chosen.candidates
    measured = chosen.trials * cases * (1 + proposals)
    return Plan(
        operation="optimize",
        machine=name,
        runs=measured + proposals * ASKS,
        runs_are=(
            f"{counted(chosen.trials, 'trial')} of {counted(cases, 'case')} for the live version and each "
            f"proposal, and up to {counted(ASKS, 'optimizer run')} a proposal"
        ),
        steps=proposals,
        steps_are=f"{'proposal' if proposals == 1 else 'proposals'} ({counted(chosen.rounds, 'round')} of "
        f"{chosen.candidates})",
        warnings=thin_warnings(taught, held, chosen.min_z),
    )


def thin_warnings(taught: Chosen, held: Chosen | None, min_z: float) -> list[str]:
    """A proposal is kept only past the gate on the cases and again on the held-out cases: too few of
    either, and none can be (held out, unless the live version already scores the maximum there)."""
    what = "no proposal can be kept"
    found = [thin_gate(len(taught.cases), min_z, where=taught.label, kind="", what=what)]
    if held is not None:
        found.append(
            thin_gate(
                len(held.cases),
                min_z,
                where=held.label,
                what=f"{what} unless the live version already scores the maximum on every held-out case",
            )
        )
    return [w for w in found if w]
