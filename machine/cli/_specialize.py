"""``machine specialize``: an author model writes a child machine and the cases to rehearse it on; and
``machine draft-rubric``: it drafts a rubric for a machine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from machine.learn import draft_rubric, format_rubric_draft, format_specialization, specialize

from ._options import handle_errors, print_spend, spending_options, with_workspace, workspace_from
from ._render import dump_json

F = TypeVar("F", bound=Callable[..., Any])


def author_options(what: str) -> Callable[[F], F]:
    """The options every command that asks the author machine takes: its model, how often ``what`` is
    sent back, the time limits, and --json."""

    def apply(command: F) -> F:
        for option in reversed(
            [
                click.option(
                    "--author-model",
                    default=None,
                    metavar="MODEL",
                    help="The author machine's model (default: its own, thinkingmachines/Inkling).",
                ),
                click.option(
                    "--retries",
                    type=click.IntRange(min=0),
                    default=2,
                    show_default=True,
                    help=f"Times a refused {what} is sent back.",
                ),
                click.option(
                    "--timeout",
                    "timeout_s",
                    type=click.FloatRange(min=1),
                    default=60.0,
                    show_default=True,
                    help=f"Seconds the {what} may take to load and grade the sample runs (and each case's "
                    "tests to run).",
                ),
                click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
            ]
        ):
            command = option(command)
        return command

    return apply


@click.command("specialize")
@click.argument("parent")
@click.option("--focus", required=True, help="What the child specializes in, in a phrase.")
@click.option("--slug", default=None, help="The child's name under PARENT (default: from the focus).")
@click.option("--cases", "count", type=click.IntRange(min=1), default=12, show_default=True)
@click.option(
    "--holdout-share",
    type=click.FloatRange(min=0, max=1, max_open=True),
    default=0.25,
    show_default=True,
    help="Share of the kept cases written to holdout.json.",
)
@click.option("--reuse-cases", is_flag=True, help="Rewrite only the child's files; keep its cases.")
@author_options("child")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def specialize_command(
    ctx: click.Context,
    /,
    parent: str,
    focus: str,
    slug: str | None,
    author_model: str | None,
    count: int,
    holdout_share: float,
    retries: int,
    reuse_cases: bool,
    timeout_s: float,
    as_json: bool,
    **spending: Any,
) -> None:
    """Have the author machine write PARENT/SLUG, a child of PARENT for --focus, and cases to rehearse it
    on. Nothing it writes is trusted: the child is loaded and its checks tried in a process of its own, and
    every case is checked before it is kept. --model names the child's model. Nothing is committed."""
    ws = workspace_from(ctx, **spending)
    report = ws.call(
        lambda: specialize(
            ws,
            parent,
            focus=focus,
            slug=slug,
            model=spending.get("model"),
            author_model=author_model,
            cases=count,
            holdout_share=holdout_share,
            retries=retries,
            reuse_cases=reuse_cases,
            timeout_s=timeout_s,
        )
    )
    if as_json:
        dump_json(report)
    else:
        click.echo(format_specialization(report))
    print_spend(ws.budget)


@click.command("draft-rubric")
@click.argument("name")
@author_options("draft")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def draft_rubric_command(
    ctx: click.Context,
    /,
    name: str,
    author_model: str | None,
    retries: int,
    timeout_s: float,
    as_json: bool,
    **spending: Any,
) -> None:
    """Have the author machine draft criteria and graders for NAME from its intent, files and stored runs.
    The draft is loaded and its checks tried in a process of its own, then written beside the machine as
    rubric_draft.py for you to adopt by hand; nothing NAME is graded on changes until you do."""
    ws = workspace_from(ctx, **spending)
    report = ws.call(
        lambda: draft_rubric(ws, name, author_model=author_model, retries=retries, timeout_s=timeout_s)
    )
    if as_json:
        dump_json(report)
    else:
        click.echo(format_rubric_draft(report))
    print_spend(ws.budget)
