"""Asking the optimizer machine for one proposal: the brief as the input of one of its runs, stored and
graded like any run; a reply with no ``<instructions>`` block is asked again in the same conversation,
twice, before the proposal is given up with that reason."""

from __future__ import annotations

from machine.runs import Message, new_run_id
from machine.spec import Machine
from machine.workspace import Workspace

from .._replies import CLOSE, OPEN, read_reply
from ._report import Calls, Proposal

ASKS = 3
"""The first ask and two more."""
REASK = (
    f"Your reply has no non-empty {OPEN} block, so there is nothing to measure. Reply again with the "
    f"complete new instructions between {OPEN} and {CLOSE}, and what you changed before it."
)


async def ask(
    ws: Workspace, optimizer: Machine, model: str, brief: str, proposal: Proposal, calls: Calls
) -> None:
    """Fill ``proposal`` with the optimizer's reply to ``brief`` (its instructions and explanation),
    or with why there is none. BudgetExceeded is raised as it comes, before the refused call."""
    history: list[Message] = []
    conversation = new_run_id()
    for attempt in range(ASKS):
        run = await ws.run(
            optimizer,
            brief if attempt == 0 else REASK,
            history=history,
            conversation_id=conversation,
            model=model,
            grade=True,
        )
        proposal.asked += 1
        calls.optimizer += 1
        proposal.optimizer_runs.append(run.id)
        proposal.cost.optimizer += run.cost_usd + (run.scorecard.cost_usd if run.scorecard else 0.0)
        if run.status == "error":
            proposal.decision = f"the optimizer's call failed ({run.error})"
            return
        reply = read_reply(run.output)
        if reply.instructions is not None:
            proposal.instructions, proposal.explanation = reply.instructions, reply.explanation
            return
        history = [*history, *run.trajectory]
    proposal.decision = (
        f"the optimizer's reply had no {OPEN} block after {ASKS} asks, so the round has no proposal here"
    )
