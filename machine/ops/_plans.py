"""One preparation of a learning call for every face: the operation's plan (runs, steps, the price bound)
with the harness its runs use and the budget they spend from, before anything is spent. The command
prints it, the MCP server shows it in the consent form, and the SDK handle returns it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from machine.errors import BadInputError
from machine.learn import Options, Plan
from machine.learn.optimize import plan_optimize
from machine.learn.specialize import plan_draft_rubric, plan_specialize
from machine.learn.train import plan_train
from machine.workspace import Workspace, harness_name

PLANNERS: dict[str, Callable[..., Plan]] = {
    "optimize": plan_optimize,
    "train": plan_train,
    "specialize": plan_specialize,
    "draft-rubric": plan_draft_rubric,
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
    if model is None and operation in ("optimize", "train"):
        model = ws.load(name).model  # the machine's own runs
    return plan.model_copy(
        update={"harness": harness_name(ws, model), "model": model, "price_bound_usd": ws.budget.usd}
    )
