"""Conversations: a machine and its counterpart taking turns, each turn an ordinary stored run.

The case's input is the counterpart's starting point (a simulated user's hidden scenario, say). The
counterpart speaks first; then the machine answers with the whole conversation so far as its history;
then the counterpart answers, and so on. Each side sees the conversation from its own point of view:
the other side's messages are ``user`` messages and its own are ``assistant`` messages (with its own
tool calls and results, which the other side never sees). The counterpart's history opens with the case
input it was given.

Every turn is ``Workspace.run`` with the same ``conversation_id`` and the case and trial, so both sides'
turns are found by conversation and by case. The machine's last turn, whose history holds the whole
conversation, is the conversation's result: the run that is graded and that a suite tallies.

Each turn runs in a sandbox of its own (made from the case's files when it has any): files a tool writes
during one turn are not there in the next.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from machine.errors import BadInputError, BudgetExceeded, DefinitionError, Fix, plain_spelling
from machine.runs import Harness, Message, Model, Run, is_free, new_run_id
from machine.spec import Case, Counterpart, Machine

from ._workspace import Workspace

Ending = Literal["until", "max_turns", "error", "budget"]


class Conversation(Model):
    """One conversation: every turn of both sides, which turns were graded, and why it ended."""

    conversation_id: str
    machine: str
    counterpart: str
    case_id: str | None = None
    trial: int | None = None
    ended: Ending = "max_turns"
    """Why it ended: ``until`` held, ``max_turns`` were taken, a turn failed, or the budget ran out."""
    stopped: str | None = None
    """The budget's message when it refused the next turn."""
    graded: str | None = None
    """The id of the machine's last turn (graded when asked): None when a turn failed or the budget
    stopped it."""
    counterpart_graded: str | None = None
    """The id of the counterpart's last turn, when its side was graded too."""
    turns: list[Run] = Field(default_factory=list)
    """Every turn of both sides in order; the counterpart's first. Graded turns appear graded."""

    def turn(self, run_id: str | None) -> Run | None:
        """The turn with this id (None for None)."""
        return next((t for t in self.turns if t.id == run_id), None) if run_id else None

    @property
    def graded_run(self) -> Run | None:
        """The machine's last turn, when the conversation finished."""
        return self.turn(self.graded)

    @property
    def counterpart_graded_run(self) -> Run | None:
        """The counterpart's last turn, when its side was graded."""
        return self.turn(self.counterpart_graded)

    @property
    def failed(self) -> Run | None:
        """The turn that failed, which ended the conversation."""
        return self.turns[-1] if self.ended == "error" and self.turns else None

    @property
    def result(self) -> Run | None:
        """The run that stands for the whole conversation: the failed turn, else the machine's last."""
        return self.failed or self.graded_run


def counterpart_of(machine: Machine) -> Counterpart:
    """The machine's counterpart; a machine without one cannot hold a conversation."""
    if machine.counterpart is None:
        raise BadInputError(
            f"machine {machine.name!r} has no counterpart, so it cannot hold a conversation: give its "
            "define_machine a counterpart=Counterpart(machine=OTHER, until=..., max_turns=...) "
            "(OTHER plays the side that speaks first)",
            fixes=[Fix(operation="run", machine=machine.name, purpose="runs it alone")],
        )
    return machine.counterpart


async def converse(
    workspace: Workspace,
    machine: Machine | str,
    case: Case | str,
    *,
    trial: int | None = None,
    model: str | None = None,
    harness: Harness | None = None,
    grade: bool = False,
    grade_counterpart: bool = False,
    pass_score: float = 1.0,
    on_turn: Callable[[Run], None] | None = None,
    store: bool = True,
) -> Conversation:
    """Hold one conversation between ``machine`` and its counterpart, starting from ``case``.

    ``model`` replaces the machine's model only; the counterpart always runs on its own. ``grade`` grades
    the machine's last turn once the conversation has ended; ``grade_counterpart`` also grades the
    counterpart's last turn with the counterpart's evaluator. ``on_turn`` sees each turn as it finishes.
    With ``store=False`` nothing is written: the caller stores ``turns`` (the suite writes in batches).

    BudgetExceeded is raised only when the budget refuses the first turn; a refusal later ends the
    conversation with ``ended="budget"`` and keeps the turns taken so far, ungraded.
    """
    spec = workspace.load(machine) if isinstance(machine, str) else machine
    side = counterpart_of(spec)
    other = side.machine
    start = case if isinstance(case, Case) else None
    opening = case.input if isinstance(case, Case) else case
    harness = harness or workspace.harness
    if not is_free(harness.name):  # an unknown price on either side is refused before any turn
        for priced in (model or spec.model, other.model):
            workspace.budget.probe_price(priced)
    conversation = Conversation(
        conversation_id=new_run_id(),
        machine=spec.name,
        counterpart=other.name,
        case_id=start.id if start else None,
        trial=trial,
    )
    last = await _take_turns(workspace, conversation, spec, opening, start, model, harness, on_turn, store)
    if conversation.ended in ("error", "budget") or True not in last:
        return conversation
    turns, ours, theirs = conversation.turns, last[True], last[False]
    if grade:
        turns[ours] = await workspace.grade(turns[ours], spec, pass_score=pass_score, store=store)
    if grade_counterpart:
        turns[theirs] = await workspace.grade(turns[theirs], other, pass_score=pass_score, store=store)
        conversation.counterpart_graded = turns[theirs].id
    conversation.graded = turns[ours].id
    return conversation


async def _take_turns(
    workspace: Workspace,
    conversation: Conversation,
    spec: Machine,
    opening: str,
    start: Case | None,
    model: str | None,
    harness: Harness,
    on_turn: Callable[[Run], None] | None,
    store: bool,
) -> dict[bool, int]:
    """The two sides take turns until the conversation ends; returns each side's last turn (by "is the
    machine"), with the turns and why it ended recorded on ``conversation``."""
    side = counterpart_of(spec)
    views: dict[bool, list[Message]] = {True: [], False: []}  # each side's history, keyed by "is machine"
    message, last = opening, {}
    for index in range(side.max_turns):
        mine = index % 2 == 1
        try:
            run = await workspace.run(
                spec if mine else side.machine,
                message,
                case=start,
                trial=conversation.trial,
                history=list(views[mine]),
                conversation_id=conversation.conversation_id,
                model=model if mine else None,
                harness=harness,
                store=store,
            )
        except BudgetExceeded as error:
            if not conversation.turns:
                raise
            conversation.ended, conversation.stopped = "budget", error.explain(plain_spelling)
            break
        conversation.turns.append(run)
        if on_turn is not None:
            on_turn(run)
        if run.status == "error":
            conversation.ended = "error"
            break
        views[mine].extend(run.trajectory)
        last[mine] = index
        message = run.output
        if index >= 1 and _until(side, run, spec.name):
            conversation.ended = "until"
            break
    return last


def _until(side: Counterpart, run: Run, owner: str) -> bool:
    if side.until is None:
        return False
    try:
        return bool(side.until(run))
    except Exception as error:
        raise DefinitionError(
            f"machine {owner!r}: its counterpart's until raised {type(error).__name__}: {error}"
        ) from error
