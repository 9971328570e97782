"""Talking to a machine in the terminal. Every exchange is a stored run in one conversation."""

from __future__ import annotations

import functools
import uuid

import click

from .._runs import Run, now
from .._spec import Machine
from .._store import ChatSession
from .._workspace import Workspace
from ._render import print_run, scorecard_lines

HELP = "/score grade the last exchange · /good /bad mark it · /correct NOTE · /machine · /quit"


def chat(
    ws: Workspace, spec: Machine, *, grade: bool, resume: bool, pass_score: float, model: str | None = None
) -> None:
    session = ws.store.latest_session(spec.name) if resume else None
    if resume and session is None:
        click.echo(f"no earlier conversation with {spec.name}; starting a new one")
    if session is None:
        cid = uuid.uuid4().hex[:12]
        session = ChatSession(name=cid, machine=spec.name, conversation_id=cid)
    else:
        click.echo(f"resuming conversation {session.conversation_id} ({len(session.history)} messages)")
    click.secho(f"{spec.name} — {spec.intent}", bold=True)
    click.secho(HELP, dim=True)
    last: Run | None = None
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
            last = _command(ws, spec, command, arg.strip(), last, pass_score)
            continue
        exchange = functools.partial(
            ws.run,
            spec,
            line,
            history=session.history,
            conversation_id=session.conversation_id,
            grade=grade,
            pass_score=pass_score,
            interactive=True,
            model=model,
        )
        last = ws.call(exchange)
        print_run(last)
        if last.status == "ok":
            session = session.model_copy(
                update={"history": [*session.history, *last.trajectory], "updated_at": now()}
            )
            ws.store.put_session(session)
    click.echo(ws.budget.describe(), err=True)


def _command(
    ws: Workspace, spec: Machine, command: str, arg: str, last: Run | None, pass_score: float
) -> Run | None:
    if command == "/machine":
        info = ws.describe(spec.name)
        click.echo(f"{info['name']} on {info['model']}: {info['intent']}")
        for c in info["criteria"]:
            click.echo(f"  {c['name']} ×{c['weight']:g} ({c['grader']})")
        click.echo("  tools: " + (", ".join(t["name"] for t in info["tools"]) or "none"))
        click.echo("  " + ws.budget.describe())
        return last
    if command not in ("/score", "/good", "/bad", "/correct"):
        click.echo(f"unknown command {command}; {HELP}")
        return last
    if last is None:
        click.echo(f"{command} applies to the last exchange, and there is none yet")
        return last
    if command == "/score" and last.status == "error":
        click.echo(f"run {last.id} failed, so there is nothing to grade")
        return last
    if command == "/score":
        graded = ws.call(lambda: ws.grade(last, spec, pass_score=pass_score))
        if graded.scorecard is not None:
            click.echo("\n".join(scorecard_lines(graded.scorecard)))
        return graded
    if command == "/correct" and not arg:
        click.echo("/correct needs a note saying what should change, e.g. /correct answer in one line")
        return last
    kind = command[1:].replace("correct", "correction")
    tagged = ws.tag(last, kind, arg or None)
    click.echo(f"marked run {tagged.id} {kind}" + (f": {arg}" if arg else ""))
    return tagged
