"""``machine list``, ``show`` and ``tree``: what the workspace's machines are."""

from __future__ import annotations

import sys

import click

import machine.ops as ops  # each command loads the operation it calls: `list` builds none of `show`'s models
from machine.runs import inert

from ._complete import machine_argument
from ._options import handle_errors, with_workspace, workspace_from
from ._render import dump_json


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {name, intent, model, criteria}.")
@with_workspace
@click.pass_context
@handle_errors
def list_machines_command(ctx: click.Context, /, as_json: bool) -> None:
    """List the workspace's machines."""
    ws = workspace_from(ctx)
    listed = ops.list_machines(ws)
    rows = [m for m in listed if m.error is None]
    for broken in listed:
        if broken.error is not None:
            click.echo(inert(f"error: {broken.error}"), err=True)
    if as_json:
        dump_json(rows)
    elif not listed:
        click.echo(
            f"no machines in {ws.machines_dir} (a machine is a folder machines/<name>/ with a machine.py)"
        )
    else:
        width = max((len(r.name) for r in rows), default=0)
        for r in rows:
            if r.untrusted:
                click.echo(
                    inert(
                        f"{r.name:<{width}}  {'(untrusted)':<28} model-written {', '.join(r.untrusted)} not "
                        f"trusted: review it with `machine trust {r.name}`"
                    )
                )
                continue
            click.echo(
                inert(f"{r.name:<{width}}  {r.model or '':<28} {_criteria(len(r.criteria))}  {r.intent}")
            )
    if len(rows) < len(listed):
        sys.exit(1)


def _criteria(count: int) -> str:
    return f"{count} criterion " if count == 1 else f"{count} criteria"


@click.command()
@machine_argument()
@click.option("--instructions", "with_instructions", is_flag=True, help="Print its instructions too.")
@click.option("--json", "as_json", is_flag=True, help="Print the machine as JSON.")
@with_workspace
@click.pass_context
@handle_errors
def show(ctx: click.Context, /, name: str, with_instructions: bool, as_json: bool) -> None:
    """Show a machine: intent, model, tools, and each criterion with its weight and grader."""
    info = ops.describe(workspace_from(ctx), name)
    if as_json:
        dump_json(info)
        return
    click.secho(inert(info.name), bold=True)  # what its files say, which a model may have written
    if info.builtin:
        click.echo(f"  built into the library, in {info.builtin} (copy it to machines/{name} to change it)")
    click.echo(inert(f"  intent: {info.intent}"))
    click.echo(inert(f"  model:  {info.model}   max steps: {info.max_steps}"))
    if info.parent:
        click.echo(inert(f"  parent: {info.parent}"))
    if info.counterpart:
        click.echo(inert(f"  counterpart: {info.counterpart} (speaks first; see `machine converse {name}`)"))
    click.echo("  criteria:")
    for c in info.criteria:
        inherited = f"  (from {c.origin})" if c.origin != name else ""
        required = "  required" if c.required else ""
        click.echo(inert(f"    {c.name}  ×{c.weight:g}  {c.grader}{required}{inherited}"))
        click.secho(inert(f"      {c.description}"), dim=True)
    click.echo("  tools:" + ("" if info.tools else " none"))
    for t in info.tools:
        inherited = f"  (from {t.origin})" if t.origin != name else ""
        click.echo(inert(f"    {t.name}{inherited}: {t.description.splitlines()[0]}"))
    if with_instructions:
        click.echo("  instructions:")
        click.echo("\n".join(f"    {line}".rstrip() for line in inert(info.instructions).splitlines()))


@click.command()
@machine_argument()
@with_workspace
@click.pass_context
@handle_errors
def tree(ctx: click.Context, /, name: str) -> None:
    """Show a machine family: each machine, what it inherits and what it adds."""
    ws = workspace_from(ctx)
    root = ws.load(name)
    for member in ws.family(name):
        pad = "  " * (member.count("/") - name.count("/"))
        click.secho(inert(f"{pad}{member}"), bold=True)
        if member != name and ws.trust.blocking(member):
            click.echo(f"{pad}  untrusted: it holds code a model wrote; review it: `machine trust {member}`")
            continue
        spec = ws.load(member) if member != name else root
        own = spec.own_criteria
        inherited = [c for c in spec.rubric if c not in own]
        if inherited:
            click.echo(inert(f"{pad}  inherits: {', '.join(inherited)}"))
        click.echo(inert(f"{pad}  adds:     {', '.join(own) or 'no criteria'}"))
        if spec.own_tools:
            click.echo(inert(f"{pad}  tools:    {', '.join(spec.own_tools)}"))
        if spec.parent is not None and spec.model != spec.parent.model:
            click.echo(inert(f"{pad}  model:    {spec.model}"))
