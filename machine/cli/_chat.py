"""Talking to a machine in the terminal: a ``Session`` (the SDK's), every exchange a stored run."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from machine.measure import MeasureOptions
from machine.ops import Session, describe
from machine.runs import Approver, Run, inert
from machine.spec import Machine
from machine.workspace import Workspace

from ._chat_tags import Counts, mark, show_tagged
from ._progress import thinking
from ._render import print_run, scorecard_lines
from ._stop import INTERRUPTED, stop_status

T = TypeVar("T")

HELP = (
    "/score grade the last exchange · /good [--as TEXT] [--trace] [--reasoning] [NOTE] · /bad NOTE · "
    "/correct NOTE · /tagged · /machine · /quit"
)


def chat(
    ws: Workspace,
    spec: Machine,
    *,
    grade: bool,
    resume: bool,
    pass_score: float = MeasureOptions.default("pass_score"),
    model: str | None = None,
    approver: Approver | None = None,
) -> None:
    """Read lines from the person and answer each with a run, until /quit or the end of input; the calls
    of the machine's tools that spend or change go to ``approver``."""
    options: dict[str, Any] = {
        "auto_grade": grade,
        "pass_score": pass_score,
        "model": model,
        "approver": approver,
    }
    earlier = Session.resume(ws, spec, **options) if resume else None
    if resume and earlier is None:
        click.echo(inert(f"no earlier conversation with {spec.name}; starting a new one"))
    session = earlier or Session(ws, spec, **options)
    if earlier is not None:
        click.echo(f"resuming conversation {session.conversation_id} ({len(session.history)} messages)")
    click.secho(inert(f"{spec.name} — {spec.intent}"), bold=True)
    click.secho(HELP, dim=True)
    last: Run | None = None
    counts = Counts()
    while True:
        try:
            line = click.prompt("you", prompt_suffix="> ", default="", show_default=False).strip()
        except (EOFError, click.Abort):
            break
        if not line:
            continue
        if line.startswith("/"):
            command, _, arg = line.partition(" ")
            if command in ("/quit", "/exit"):
                break
            marked = _command(ws, spec, command, arg.strip(), last, pass_score)
            if marked is not None and marked.tags != (last.tags if last else []):
                counts.add(marked)
                click.secho(counts.footer(), dim=True)
            last = marked or last
            continue
        with thinking():
            sent = _unless_interrupted(ws, functools.partial(session.send, line, interactive=True))
        if sent is not None:
            last = sent
            print_run(last)
            click.secho(counts.footer(), dim=True)
    click.echo(ws.budget.describe(), err=True)


def send_once(
    ws: Workspace,
    spec: Machine,
    message: str,
    *,
    resume: bool,
    model: str | None,
    approver: Approver | None,
) -> None:
    """One exchange (going on from the last conversation with ``resume``), printed, then the spend."""
    options: dict[str, Any] = {"model": model, "approver": approver}
    session = (Session.resume(ws, spec, **options) if resume else None) or Session(ws, spec, **options)
    run = ws.call(lambda: session.send(message))
    print_run(run)
    click.echo(ws.budget.describe(), err=True)


def _unless_interrupted(ws: Workspace, fn: Callable[[], Awaitable[T]]) -> T | None:
    """``ws.call(fn)``, where Ctrl-C cancels only this reply (or grading) and the conversation goes on
    from before it: None when it was cancelled."""
    try:
        return ws.call(fn)
    except BaseException as error:
        if stop_status(error) != INTERRUPTED:
            raise
    click.echo("cancelled; the conversation goes on from before it", err=True)
    return None


def _command(
    ws: Workspace, spec: Machine, command: str, arg: str, last: Run | None, pass_score: float
) -> Run | None:
    """Do one slash command; the last exchange as it now is (None: unchanged)."""
    if command == "/machine":
        info = describe(ws, spec.name)
        click.echo(inert(f"{info.name} on {info.model}: {info.intent}"))
        for c in info.criteria:
            click.echo(inert(f"  {c.name} ×{c.weight:g} ({c.grader})"))
        click.echo(inert("  tools: " + (", ".join(t.name for t in info.tools) or "none")))
        click.echo("  " + ws.budget.describe())
        return None
    if command == "/tagged":
        show_tagged(ws, spec.name)
        return None
    if command not in ("/score", "/good", "/bad", "/correct"):
        click.echo(f"unknown command {command}; {HELP}")
        return None
    if last is None:
        click.echo(f"{command} applies to the last exchange, and there is none yet")
        return None
    if command != "/score":
        return mark(ws, command, arg, last)
    if last.status == "error":
        click.echo(f"run {last.id} failed, so there is nothing to grade")
        return None
    graded = _unless_interrupted(ws, lambda: ws.grade(last, spec, pass_score=pass_score))
    if graded is not None and graded.scorecard is not None:
        click.echo("\n".join(scorecard_lines(graded.scorecard)))
    return graded
