"""``machine trust NAME`` and ``machine trust --list``: read what a model wrote, then trust it."""

from __future__ import annotations

import sys

import click

from machine.errors import BadInputError
from machine.ops import TrustReview, pending, review, trust, untrustable
from machine.runs import inert
from machine.spec import FileTrust, show_hidden

from ._complete import machine_argument
from ._options import fail, handle_errors, with_workspace, workspace_from
from ._render import dump_json

STATES = {
    "untrusted": "untrusted",
    "changed": "CHANGED since you trusted it",
    "trusted": "trusted",
    "missing": "missing",
}


@click.command("trust")
@machine_argument(required=False)
@click.option("--list", "listing", is_flag=True, help="List the model-written files not trusted as they are.")
@click.option("--yes", "-y", is_flag=True, help="Trust them without asking (after you have read them).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the review (or the list) as JSON; trusts only with --yes."
)
@with_workspace
@click.pass_context
@handle_errors
def trust_command(ctx: click.Context, /, name: str | None, listing: bool, yes: bool, as_json: bool) -> None:
    """Show the code a model wrote for machine NAME (a child from `machine specialize`, a draft from
    `machine draft-rubric`) and trust it: until you do, nothing imports it. An edit after that makes it
    untrusted again. Files no model wrote are yours and need no trust."""
    ws = workspace_from(ctx)
    if listing or name is None:
        if name is not None:
            raise BadInputError("give a machine NAME or --list, not both")
        _list(pending(workspace=ws), as_json)
        return
    shown = review(name, workspace=ws)
    if as_json and not yes:
        dump_json(shown)
        return
    if not shown.pending:
        if as_json:
            dump_json(shown)
        else:
            click.echo(f"every file a model wrote for {name} is trusted as it is now")
        return
    if not as_json:
        _show(shown)
    refused = untrustable(shown)
    if refused is not None:
        fail(refused)
    if not yes:
        if not sys.stdin.isatty():
            fail(BadInputError(f"{name} was not trusted: read the above, then pass --yes to trust it"))
        if not click.confirm(f"Trust these {len(shown.pending)} file(s) of {name}?", default=False):
            click.echo(f"{name} was not trusted: nothing imports its model-written code")
            sys.exit(1)
    done = trust(name, workspace=ws, reviewed=shown)
    if as_json:
        dump_json(done)
    else:
        count = len(shown.pending)
        click.echo(f"trusted {count} file(s) of {name}: it loads now, as long as they are unchanged")


def _show(shown: TrustReview) -> None:
    for file in shown.files:
        said = f"{STATES[file.state]}; written by {file.by}, {file.at}"
        click.secho(show_hidden(inert(f"machines/{file.path}  ({said})")), bold=True)
        if file.state == "trusted":
            continue
        against = {"trusted": "since you trusted it", "parent": "against the parent's file"}.get(
            file.against or "", "the whole file"
        )
        if file.unreviewable:
            click.secho(inert(f"  cannot be trusted as it is: {file.unreviewable}"), fg="red", bold=True)
        click.secho(f"  {against}:", dim=True)
        # before it is split, so a lone carriage return is shown, not a line break; then what renders blank
        diff = show_hidden(inert(file.diff))
        for line in diff.removesuffix("\n").split("\n") if diff else ():
            colour = "green" if line.startswith("+") else "red" if line.startswith("-") else None
            click.secho(line, fg=colour)


def _list(files: list[FileTrust], as_json: bool) -> None:
    if as_json:
        dump_json(files)
        return
    if not files:
        click.echo("no model-written file is waiting for trust")
        return
    width = max(len(f.machine) for f in files)
    for f in files:
        click.echo(
            inert(f"{f.machine:<{width}}  machines/{f.path}  {STATES[f.state]}  (written by {f.by}, {f.at})")
        )
    click.echo("review and trust each with `machine trust NAME`", err=True)
