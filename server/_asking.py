"""The consent forms the spending tools show: the question, the operation's plan after it, and whether the
person can be asked at all (else why not, and the tool says what is wrong itself).

No ``from __future__ import annotations`` here: the SDK reads the tools' resolver annotations with
``typing.get_type_hints``.
"""

from typing import Any

from mcp.server.mcpserver import Context, Elicit
from mcp.server.mcpserver.exceptions import ToolError

from machine.errors import MachineError
from machine.ops import plan_learning
from machine.workspace import Workspace

from ._results import Approval, NotAsked
from ._service import can_elicit
from ._tools import service


def asked(question: str, plan: str = "") -> Elicit[Approval]:
    return Elicit(f"{question}{plan} Allow it?", Approval)


def planned(ws: Workspace, operation: str, name: str, **fields: Any) -> str:
    """The operation's plan as the form shows it, after the question (empty when it cannot be planned:
    the tool itself then refuses the call)."""
    try:
        return f" The plan: {plan_learning(ws, operation, name, **fields).describe()}."
    except MachineError:
        return ""


def askable(
    ctx: Context,
    name: str,
    budget_usd: float,
    model: str | None,
    harness: str | None,
    *,
    own_model: bool = True,
) -> Workspace | NotAsked:
    """The call's workspace when the person can be asked and the call is one the tool would take; else
    why they are not asked (the tool then says what is wrong itself)."""
    if not can_elicit(ctx):
        return NotAsked(reason="the client cannot ask the person")
    try:
        return service(ctx).spending(name, budget_usd, model, harness, (), own_model=own_model)
    except ToolError:
        return NotAsked(reason="bad input: the tool refuses it")


def spent_of(ws: Workspace) -> dict[str, float]:
    return {"budget_usd": ws.budget.usd or 0.0, "spent_usd": ws.budget.spent}
