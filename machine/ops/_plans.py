"""One preparation of a learning call for every face: the operation's plan (runs, steps, the price bound,
and a warning where the gate cannot pass on the cases it has) with the harness its runs use and the
budget they spend from, before anything is spent. The command prints it, the MCP server shows it in the
consent form, and the SDK handle returns it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from machine.errors import BadInputError
from machine.learn import Options, Plan
from machine.learn.optimize import plan_optimize
from machine.learn.specialize import plan_draft_rubric, plan_specialize
from machine.learn.train import plan_train
from machine.runs import counted
from machine.spec import DEFAULT_MIN_Z, Case
from machine.versions import thin_gate
from machine.workspace import Workspace, harness_name, held_out


def plan_propose(
    ws: Workspace,
    name: str,
    _options: Options | None = None,
    *,
    model: str | None = None,
    trials: int = 3,
    cases: str | Path | Sequence[Case] | None = None,
    min_z: float = DEFAULT_MIN_Z,
    **_fields: Any,
) -> Plan:
    """What ``propose`` with these settings may run at most: ``trials`` runs of each held-out case on
    each side (stored runs of either are reused, so it is often fewer)."""
    found = held_out(ws, name, cases)
    held = [] if found is None else found.cases
    where = "holdout.json" if found is None else found.label
    return Plan(
        operation="propose",
        machine=name,
        runs=2 * trials * len(held),
        runs_are=f"{counted(trials, 'trial')} of {counted(len(held), 'held-out case')} on each side",
        warnings=[w for w in [thin_gate(len(held), min_z, where=where)] if w],
    )


PLANNERS: dict[str, Callable[..., Plan]] = {
    "optimize": plan_optimize,
    "train": plan_train,
    "specialize": plan_specialize,
    "draft-rubric": plan_draft_rubric,
    "propose": plan_propose,
}
"""Each learning operation's planner, by the operation's name."""


def plan_learning(
    ws: Workspace, operation: str, name: str, options: Options | None = None, **fields: Any
) -> Plan:
    """The plan of ``operation`` on machine ``name`` with ``options`` (or their fields), in ``ws``: its
    runs and steps at most, the harness its runs use, and its budget as the price bound."""
    planner = PLANNERS.get(operation)
    if planner is None:
        raise BadInputError(
            f"there is no learning operation {operation!r} to plan; they are: {', '.join(PLANNERS)}"
        )
    plan = planner(ws, name, options, **fields)
    model = fields.get("model") or getattr(options, "model", None)
    if model is None and operation in ("optimize", "train", "propose"):
        model = ws.load(name).model  # the machine's own runs
    return plan.model_copy(
        update={"harness": harness_name(ws, model), "model": model, "price_bound_usd": ws.budget.usd}
    )
