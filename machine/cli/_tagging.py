"""``machine tagged``, ``observed``, ``observe``, ``fork`` and ``correction``: a person's marks, the runs
outside hosts made, and runs made again with a correction."""

from __future__ import annotations

import sys
from typing import Any

import click

from machine import ops
from machine.runs import counted
from machine.workspace import observing, set_observing

from ._chat_tags import print_marked
from ._complete import machine_argument
from ._measure_options import pass_score_option
from ._options import handle_errors, print_spend, spending_options, with_workspace, workspace_from
from ._render import dump_json, print_run

LIMIT = click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many runs, newest first."
)
JSON = click.option("--json", "as_json", is_flag=True, help="Print a JSON list of the runs.")


@click.command("tagged")
@machine_argument(required=False)
@LIMIT
@JSON
@with_workspace
@click.pass_context
@handle_errors
def tagged_command(ctx: click.Context, /, name: str | None, limit: int, as_json: bool) -> None:
    """List the runs a person marked good, bad or corrected.

    Of NAME, or of every machine, newest first, each with its last mark: /good, /bad and /correct in
    `machine run NAME` make them."""
    rows = ops.tagged(workspace_from(ctx), name, limit)
    if as_json:
        dump_json(rows)
    elif not rows:
        of = f" of {name}" if name else ""
        click.echo(f"no run{of} is marked yet: /good, /bad or /correct in `machine run NAME` marks one")
    else:
        print_marked(rows, machine=name is None)


@click.command("observed")
@machine_argument(required=False)
@LIMIT
@JSON
@with_workspace
@click.pass_context
@handle_errors
def observed_command(ctx: click.Context, /, name: str | None, limit: int, as_json: bool) -> None:
    """List the runs outside hosts made through serve.

    Kept only while observing is on (`machine observe on`), unlabeled, newest first."""
    ws = workspace_from(ctx)
    rows = ops.observed(ws, name, limit)
    if as_json:
        dump_json(rows)
        return
    if not rows:
        state = "on" if observing(ws.data_dir) else "off (`machine observe on` turns it on)"
        click.echo(f"no observed runs yet; observing is {state}")
        return
    print_marked(rows, machine=name is None)
    click.echo("`machine fork NOTE` runs the newest again with your correction", err=True)


@click.command("observe")
@click.argument("state", required=False, type=click.Choice(["on", "off"]))
@with_workspace
@click.pass_context
@handle_errors
def observe_command(ctx: click.Context, /, state: str | None) -> None:
    """Keep or stop keeping the runs outside hosts make.

    STATE on keeps the runs `machine serve` makes for an agent host; off stops it; none says which. Off
    until turned on, for each workspace. Observed runs are stored unlabeled: finishing is no sign a run
    was good, and only a person's /good makes a training example of one. They hold what the hosts sent
    and what came back, in the workspace's store (readable only by you)."""
    ws = workspace_from(ctx)
    if state is not None:
        set_observing(ws.data_dir, state == "on")
    on = observing(ws.data_dir)
    click.echo(f"observing is {'on' if on else 'off'} for {ws.root}")
    if on and state is not None:
        click.echo("`machine observed` lists what is kept; `machine observe off` stops it", err=True)


def _fork(ctx: click.Context, note: tuple[str, ...], run_id: str | None, spending: dict[str, Any]) -> None:
    pass_score, as_json = spending.pop("pass_score"), spending.pop("as_json")
    grade = spending.pop("grade")
    ws = workspace_from(ctx, **spending)
    made = ws.call(
        lambda: ops.fork(
            ws, " ".join(note), run_id, grade=grade, pass_score=pass_score, model=spending["model"]
        )
    )
    if as_json:
        dump_json(made)
    else:
        print_run(made)
        click.echo(f"run {made.id} corrects run {made.forked_from}: `machine export NAME --pairs` pairs them")
    print_spend(ws.budget)
    if made.status == "error":
        sys.exit(1)


def _fork_options(fn: Any) -> Any:
    for option in reversed(
        (
            click.option("--eval", "grade", is_flag=True, help="Grade the new run."),
            pass_score_option,
            click.option("--json", "as_json", is_flag=True, help="Print the new run as one JSON object."),
            spending_options,
            with_workspace,
        )
    ):
        fn = option(fn)
    return fn


@click.command("fork")
@click.argument("note", nargs=-1, required=True)
@_fork_options
@click.pass_context
@handle_errors
def fork_command(ctx: click.Context, /, note: tuple[str, ...], **spending: Any) -> None:
    """Run the newest observed run again with a correction.

    NOTE, the correction, is added to the run's input with the answer it got. The new run is linked to
    the old one, and the two make a preference pair (the corrected answer over the original) for
    `machine export NAME --pairs`."""
    _fork(ctx, note, None, spending)


@click.command("correction")
@click.option("--id", "run_id", required=True, metavar="ID", help="The stored run to correct.")
@click.argument("note", nargs=-1, required=True)
@_fork_options
@click.pass_context
@handle_errors
def correction_command(ctx: click.Context, /, run_id: str, note: tuple[str, ...], **spending: Any) -> None:
    """Run a stored run again with a correction.

    As fork does, for the stored run ID: NOTE is added to its input with the answer it got, and the new
    run is linked to it."""
    _fork(ctx, note, run_id, spending)


@click.command("data")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as one JSON object.")
@with_workspace
@click.pass_context
@handle_errors
def data_command(ctx: click.Context, /, as_json: bool) -> None:
    """Show where the runs are kept and how many are marked.

    The store's file (readable only by you), its runs, the runs marked good or bad, the corrections, the
    runs made again with one, the observed runs, and whether the workspace observes."""
    found = ops.data(workspace_from(ctx))
    if as_json:
        dump_json(found)
        return
    click.echo(f"workspace {found.workspace}")
    click.echo(f"store {found.store} (readable only by you): {counted(found.runs, 'run')}")
    click.echo(
        f"marked {found.good} good · {found.bad} bad · {counted(found.corrections, 'correction')}; "
        f"{found.corrected} corrected by a new run; {found.observed} observed"
    )
    click.echo(f"observing is {'on' if found.observing else 'off'}")
