"""``machine specialize``: an author model writes a child machine and the cases to rehearse it on; and
``machine draft-rubric``: it drafts a rubric for a machine."""

from __future__ import annotations

from typing import Any

import click

from machine.learn import SpecializeOptions, draft_rubric, specialize
from machine.learn.specialize import DraftRubricOptions, format_rubric_draft, format_specialization
from machine.runs import inert
from machine.spec import show_hidden

from ._complete import machine_argument
from ._model_options import model_options
from ._options import handle_errors, print_spend, spending_options, with_workspace, workspace_from
from ._plan import print_plan
from ._progress import watching
from ._render import dump_json

AUTHOR_FLAGS = {"timeout_s": "--timeout"}
AUTHOR_EXTRA = {"author_model": {"metavar": "MODEL"}}


@click.command("specialize")
@machine_argument("parent")
@model_options(
    SpecializeOptions,
    skip=("model",),  # the run options' --model: the child's model
    flags=AUTHOR_FLAGS,
    extra=AUTHOR_EXTRA,
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def specialize_command(
    ctx: click.Context, /, parent: str, options: SpecializeOptions, as_json: bool, **spending: Any
) -> None:
    """Have the author machine write PARENT/SLUG, a child of PARENT for --focus, and cases to rehearse it
    on. Nothing it writes is trusted: the child is loaded and its checks tried in a process of its own, and
    every case is checked before it is kept. --model names the child's model. Nothing is committed."""
    ws = workspace_from(ctx, **spending)
    chosen = SpecializeOptions.of(options, model=spending.get("model"))
    print_plan(ws, "specialize", parent, chosen)
    with watching(ws, f"{parent}: samples and rehearsal", show=not as_json):
        report = ws.call(lambda: specialize(ws, parent, chosen))
    if as_json:
        dump_json(report)
    else:
        # it quotes what the author model wrote: controls shown, then what renders blank as \uXXXX
        click.echo(show_hidden(inert(format_specialization(report))))
    print_spend(ws.budget)


@click.command("draft-rubric")
@machine_argument()
@model_options(DraftRubricOptions, flags=AUTHOR_FLAGS, extra=AUTHOR_EXTRA)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def draft_rubric_command(
    ctx: click.Context, /, name: str, options: DraftRubricOptions, as_json: bool, **spending: Any
) -> None:
    """Have the author machine draft criteria and graders for NAME from its intent, files and stored runs.
    The draft is loaded and its checks tried in a process of its own, then written beside the machine as
    rubric_draft.py for you to adopt by hand; nothing NAME is graded on changes until you do."""
    ws = workspace_from(ctx, **spending)
    print_plan(ws, "draft-rubric", name, options)
    with watching(ws, f"{name}: samples and the author", show=not as_json):
        report = ws.call(lambda: draft_rubric(ws, name, options))
    if as_json:
        dump_json(report)
    else:
        click.echo(show_hidden(inert(format_rubric_draft(report))))
    print_spend(ws.budget)
