"""``machine converse``: one conversation between a machine and its counterpart, printed as it happens."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from machine.errors import NotFoundError
from machine.runs import Run, inert
from machine.spec import Case
from machine.workspace import Conversation, converse, counterpart_of

from ._complete import case_ids, machine_argument
from ._measure_options import pass_score_option
from ._options import handle_errors, print_spend, spending_options, with_workspace, workspace_from
from ._progress import thinking
from ._render import dump_json, scorecard_lines
from ._stop import INTERRUPTED, end, stop_status

TOOL_TEXT = 120
"""How much of a tool call's arguments and result a turn shows."""


@click.command("converse")
@machine_argument()
@click.argument("case_id", metavar="[CASE]", required=False, shell_complete=case_ids)
@click.option("--eval", "grade", is_flag=True, help="Grade the last turn of each side.")
@click.option("--cases", "cases_file", default=None, metavar="FILE", help="Cases file (default: cases.json).")
@pass_score_option
@click.option("--json", "as_json", is_flag=True, help="Print the conversation as JSON once it has ended.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def converse_command(
    ctx: click.Context,
    /,
    name: str,
    case_id: str | None,
    grade: bool,
    cases_file: str | None,
    pass_score: float,
    as_json: bool,
    **spending: Any,
) -> None:
    """Hold one conversation between machine NAME and its counterpart, starting from CASE (default: the
    first case). The counterpart speaks first; --model changes only NAME's model."""
    ws = workspace_from(ctx, **spending)
    spec = ws.load(name)
    side = counterpart_of(spec)
    case = _pick(ws.cases(spec, cases_file), case_id, name)
    if not as_json:
        click.secho(
            inert(f"{spec.name} ⇄ {side.machine.name} · case {case.id} · at most {side.max_turns} turns"),
            bold=True,
        )
    printer = _TurnPrinter(spec.name, show=not as_json)
    try:
        with thinking(show=not as_json):
            conversation = ws.call(
                lambda: converse(
                    ws,
                    spec,
                    case,
                    model=spending["model"],
                    grade=grade,
                    grade_counterpart=grade,
                    pass_score=pass_score,
                    on_turn=printer,
                )
            )
    except BaseException as error:
        status = stop_status(error)
        if status is not None and printer.conversation_id is not None:
            why = "interrupted" if status == INTERRUPTED else "output closed"
            turns = f"{printer.count} turn{'s' if printer.count != 1 else ''}"
            note = f"{why}: conversation {printer.conversation_id} stopped after {turns}, which are stored"
            end(status, [note, ws.budget.describe()])
        raise
    if as_json:
        dump_json(conversation)
    else:
        _print_ending(conversation, side.max_turns, grade)
    print_spend(ws.budget)


def _pick(cases: Sequence[Case], case_id: str | None, machine: str) -> Case:
    if case_id is None:
        return cases[0]
    for case in cases:
        if case.id == case_id:
            return case
    known = ", ".join(c.id for c in cases)
    raise NotFoundError(f"machine {machine!r} has no case {case_id!r}; its cases are: {known}")


class _TurnPrinter:
    """Prints each turn as soon as it finishes (with ``show``): who spoke, their tool calls in brief, what
    they said, made inert; and counts them, for the note an interrupted conversation ends with."""

    def __init__(self, machine: str, *, show: bool = True) -> None:
        self.machine, self.show = machine, show
        self.count = 0
        self.conversation_id: str | None = None

    def __call__(self, run: Run) -> None:
        self.count += 1
        self.conversation_id = run.conversation_id
        if not self.show:
            return
        colour = "green" if run.machine == self.machine else "magenta"
        click.secho(inert(f"\n[{self.count}] {run.machine}"), fg=colour, bold=True)
        for message in run.trajectory[1:]:
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments
                click.secho(inert(f"  → {call.name}({_brief(arguments or '')})"), fg="cyan")
            if message.role == "tool":
                click.secho(inert(f"  ← {_brief(message.content)}"), fg="red" if message.is_error else "blue")
        if run.status == "error":
            click.secho(inert(f"  failed: {run.error}"), fg="red")
        else:
            click.echo(inert(run.output))
        click.secho(inert(f"  (run {run.id} · {run.model} · ${run.cost_usd:.4f})"), dim=True)


def _brief(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TOOL_TEXT else text[: TOOL_TEXT - 1] + "…"


def _print_ending(conversation: Conversation, max_turns: int, grade: bool) -> None:
    why = {
        "until": "its counterpart's until held",
        "max_turns": f"it reached {max_turns} turns",
        "error": "a turn failed",
        "budget": f"the budget stopped it: {conversation.stopped}",
    }[conversation.ended]
    turns = len(conversation.turns)
    plural = "turn" if turns == 1 else "turns"
    click.secho(
        inert(f"\nconversation {conversation.conversation_id}: {turns} {plural}, ended because {why}"),
        bold=True,
    )
    if grade and conversation.graded is None:
        click.echo("nothing was graded: the conversation did not finish")
    for run in (conversation.graded_run, conversation.counterpart_graded_run):
        if run is not None and run.scorecard is not None:
            click.echo(inert(f"{run.machine}'s last turn (run {run.id}):"))
            click.echo("\n".join(scorecard_lines(run.scorecard)))
