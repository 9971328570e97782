"""Changes to the host's project, asked about through the host's form. ``machine serve`` started inside a
project folder works on that folder: ``ask_machine``'s runs change its real files (``Workspace.project``),
each change only as ``--edits`` says: ``ask`` (the default) puts the change to the person as an MCP form
(the path and its diff, or the command, made inert) and makes it only after their yes; a client that
cannot ask (no elicitation) has every change refused, and the model told so; ``auto`` is the person's
allowance for edits, given where they start the server, so changes are made unasked; ``deny`` refuses all.

A question is never left open: one unanswered for ``ANSWER_WITHIN_S`` stops the run, and nothing more
is written. The question is drawn from the tool call by this program; nothing the model wrote answers it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
from mcp.server.mcpserver import AcceptedElicitation, Context
from mcp.shared.exceptions import MCPError
from pydantic import Field, ValidationError

from machine.runs import ApproveEdit, EditAnswer, EditMode, EditProposal, Model, inert
from machine.workspace import Workspace

log = logging.getLogger("machine.server")

ANSWER_WITHIN_S = 600.0
"""How long a question about a change waits for the person; unanswered, the run stops there."""
SHOWN_CHARS = 50_000
"""The most of a diff (or command) put in the form; the rest is counted."""
CHOICES = (
    "Answer yes to make this change, no to refuse it (the machine is told and may propose another), all "
    "to make every further change of this run unasked, or quit to stop the run."
)


class EditChoice(Model):
    """The form the person answers about one change (declining or cancelling the form is a no)."""

    answer: Literal["yes", "no", "all", "quit"] = Field(
        default="no",
        description="yes: make this change; no: refuse it; all: make this and every further change of "
        "this run unasked; quit: stop the run.",
    )


@dataclass(frozen=True)
class ProjectEdits:
    """Where ``ask_machine``'s runs work and how their changes there are made: ``project`` (None: a fresh
    sandbox per run, as in the workspace itself) under ``mode`` (``machine serve --edits``)."""

    project: Path | None = None
    mode: EditMode = "ask"


def question(machine: str, project: Path, proposal: EditProposal) -> str:
    """What the form says: which machine would change what in which folder, exactly as it would."""
    head = f"Machine {machine!r} wants to {proposal.action} in your project {inert(str(project))}:"
    shown = proposal.diff
    if len(shown) > SHOWN_CHARS:
        rest = len(shown) - SHOWN_CHARS
        shown = f"{shown[:SHOWN_CHARS]}\n… {rest:,} more characters not shown"
    return f"{head}\n\n{inert(shown)}\n\n{CHOICES}"


def elicited(ctx: Context, machine: str, project: Path) -> ApproveEdit:
    """Who is asked about each change of one ``ask_machine`` call: the person, through the host's form."""

    async def approve(proposal: EditProposal) -> EditAnswer:
        try:
            with anyio.fail_after(ANSWER_WITHIN_S):
                result = await ctx.elicit(question(machine, project, proposal), EditChoice)
        except TimeoutError:
            log.warning(
                "ask_machine %s: no answer about a change in %.0f s; the run stops", machine, ANSWER_WITHIN_S
            )
            return EditAnswer(choice="quit", by="timeout")
        except (MCPError, ValueError, ValidationError) as error:  # the host failed to ask: nobody answered
            log.warning("ask_machine %s: the host could not ask about a change: %s", machine, error)
            return EditAnswer(choice="no", by="policy")
        if isinstance(result, AcceptedElicitation) and isinstance(result.data, EditChoice):
            return EditAnswer(choice=result.data.answer, by="elicitation")
        return EditAnswer(choice="no", by="elicitation")  # declined or cancelled the form

    return approve


def working_in(ws: Workspace, edits: ProjectEdits, ctx: Context, machine: str, *, can_ask: bool) -> None:
    """Make ``ws`` (one call's copy) work in the project, if the server has one, asking through ``ctx``
    where the mode asks and the client ``can_ask``; a client that cannot has each change refused."""
    if edits.project is None:
        return
    ws.project = edits.project
    ws.edits = edits.mode
    asks = edits.mode == "ask" and can_ask
    ws.approve_edit = elicited(ctx, machine, edits.project) if asks else None


__all__ = ["ANSWER_WITHIN_S", "EditChoice", "ProjectEdits", "elicited", "question", "working_in"]
