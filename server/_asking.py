"""The questions the spending and changing tools put to the person before a call: what the call will do,
drawn from its own arguments and the operation's plan. The host shows one as its form (MCP elicitation);
where the server's own policy asks (``AskingPolicy``: the machinist's terminal), the question goes to it
instead; where nobody can be asked, nothing is drawn up and the tool says what is wrong itself.

No ``from __future__ import annotations`` here: the SDK reads the tools' resolver annotations with
``typing.get_type_hints``.
"""

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, Elicit
from mcp.server.mcpserver.exceptions import ToolError

from machine.errors import MachineError
from machine.ops import AskingPolicy, SuitePlan, plan_learning
from machine.versions import CommitPlan, RevertPlan
from machine.workspace import Workspace

from ._results import Approval, NotAsked, SpendApproval
from ._server import service
from ._service import can_elicit, usd

NOBODY = NotAsked(reason="the client cannot ask the person")


def can_ask(ctx: Context) -> bool:
    """Whether a question would reach the person: the host's form, or the server's own policy."""
    return can_elicit(ctx) or isinstance(service(ctx).policy, AskingPolicy)


def asked(
    ctx: Context, question: str, plan: str = "", *, most_usd: float | None, force: bool = False
) -> Elicit[Approval] | NotAsked:
    """``question`` (with the operation's ``plan`` after it) put to the person: the host's form (a cap
    field beside the yes where the call spends), else handed to the server's own policy."""
    if can_elicit(ctx):
        return Elicit(f"{question}{plan} Allow it?", SpendApproval if most_usd is not None else Approval)
    text = f"{question}{plan}"
    return NotAsked(reason="asked by the server", question=text, most_usd=most_usd, force=force)


def question(plan: SuitePlan, amount: float, sandboxed: bool = False) -> str:
    """What the person is asked before a rehearse."""
    plural = "s" if plan.trials != 1 else ""
    untrusted = (
        " It holds code a model wrote that you have not trusted: its own code runs only in the sandbox."
        if sandboxed
        else ""
    )
    return (
        f"Rehearse machine {plan.machine!r}: run and grade {len(plan.cases)} cases from "
        f"{Path(plan.cases_file).name} x {plan.trials} trial{plural} ({plan.runs} runs) with model "
        f"{plan.run_model} on the {plan.harness} harness, spending at most {usd(amount)}.{untrusted}"
    )


def commit_question(plan: CommitPlan) -> str:
    """What the person is asked before a commit: which version goes live in place of which, on what
    model, and the gate's decision; a forced one names the refusal it overrides."""
    new, live = plan.candidate, plan.live
    what = (
        f"make {new.label} (model {new.model}) live in place of {live.label} (model {live.model}), "
        "writing its files into the machine's folder"
    )
    if plan.refusal is not None:
        return (
            f"Commit machine {plan.machine!r} by force: {what}, although it was refused: "
            f"{plan.refusal.message}. This spends nothing."
        )
    return (
        f"Commit machine {plan.machine!r}: {what}; the promotion gate passed it "
        f"({plan.report.decision}). This spends nothing."
    )


def revert_question(plan: RevertPlan) -> str:
    """What the person is asked before a revert: which version goes live again in place of which."""
    live, target = plan.live, plan.target
    if plan.withdraw is not None:
        return (
            f"Revert machine {plan.machine!r}: write {live.label}'s instructions.md and model.json back "
            f"over the pending candidate {plan.withdraw.label} written into them ({live.label} stays live, "
            f"{plan.withdraw.label} stays pending). This spends nothing."
        )
    return (
        f"Revert machine {plan.machine!r}: make {target.label} (model {target.model}) live again in place "
        f"of {live.label} (model {live.model}), writing back its instructions.md and model.json. This "
        "spends nothing."
    )


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
    if not can_ask(ctx):
        return NOBODY
    try:
        return service(ctx).spending(name, budget_usd, model, harness, (), own_model=own_model)
    except ToolError:
        return NotAsked(reason="bad input: the tool refuses it")


def spent_of(ws: Workspace) -> dict[str, float]:
    return {"budget_usd": ws.budget.usd or 0.0, "spent_usd": ws.budget.spent}
