"""``machine run``, ``runs`` and ``eval``: one run, the stored runs, grading a stored run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from machine.errors import BadInputError

from ._chat import chat
from ._options import (
    grading_options,
    handle_errors,
    print_spend,
    spending_options,
    with_workspace,
    workspace_from,
)
from ._render import dump_json, fmt_score, print_run


@click.command()
@click.argument("name")
@click.argument("input", required=False)
@click.option("--eval", "grade", is_flag=True, help="Grade the run (every exchange, when interactive).")
@click.option("--continue", "resume", is_flag=True, help="Resume the last conversation with this machine.")
@click.option("--pass-score", type=float, default=1.0, show_default=True, help="Score a run needs to pass.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as one JSON object.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def run(
    ctx: click.Context,
    /,
    name: str,
    input: str | None,
    grade: bool,
    resume: bool,
    pass_score: float,
    as_json: bool,
    **spending: Any,
) -> None:
    """Run a machine on INPUT; with no INPUT, talk to it in the terminal."""
    ws = workspace_from(ctx, **spending)
    spec = ws.load(name)
    here = Path.cwd().resolve()
    if here != ws.root and spec.tools:  # run from inside another project: work on its files
        if here in (Path.home().resolve(), Path(here.anchor)):
            raise BadInputError(
                f"machine run works on the files of the folder it is started in, and {here} is your whole "
                "home folder (or the root): cd into a project folder first, or into the workspace for a "
                "fresh sandbox per run"
            )
        ws.project = here
    if input is None:
        chat(ws, spec, grade=grade, resume=resume, pass_score=pass_score, model=spending["model"])
        return
    if resume:
        raise BadInputError("--continue resumes an interactive conversation: leave out INPUT")
    result = ws.call(lambda: ws.run(spec, input, model=spending["model"], grade=grade, pass_score=pass_score))
    if as_json:
        dump_json(result)
    else:
        print_run(result)
    print_spend(ws.budget)
    if result.status == "error":
        sys.exit(1)  # stored, and reported above; the exit status says it failed


@click.command()
@click.argument("name")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of run summaries.")
@with_workspace
@click.pass_context
@handle_errors
def runs(ctx: click.Context, /, name: str, limit: int, as_json: bool) -> None:
    """List a machine's newest runs."""
    ws = workspace_from(ctx)
    if name not in ws.names():
        ws.load(name)  # raises, listing the known machines
    found = ws.store.summaries(name, limit)  # the listed fields only: no run is validated
    if as_json:
        dump_json(found)
        return
    if not found:
        click.echo(f"no runs of {name} yet; `machine run {name} INPUT` makes one")
    for r in found:
        verdict = {True: "pass", False: "fail", None: "-"}[r.passed]
        status = "ERROR" if r.status == "error" else fmt_score(r.score) if r.graded else "ungraded"
        case = f" case {r.case_id}" if r.case_id else ""
        when = r.created_at.strftime("%Y-%m-%dT%H:%M:%S")
        click.echo(
            f"{r.id}  {when}  {status:<8} {verdict:<4} ${r.cost_usd:.4f}"
            f"  {r.model}{case}  {r.input_preview[:50]!r}"
        )


@click.command("eval")
@click.argument("name")
@click.argument("run_id")
@click.option("--pass-score", type=float, default=1.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the graded run as JSON.")
@grading_options
@with_workspace
@click.pass_context
@handle_errors
def eval_run(
    ctx: click.Context, /, name: str, run_id: str, pass_score: float, as_json: bool, **grading: Any
) -> None:
    """Grade a stored run with the machine's current rubric and evaluator."""
    ws = workspace_from(ctx, **grading)
    spec = ws.load(name)
    stored = ws.store.get(run_id)
    if stored.machine != spec.name:
        raise BadInputError(f"run {run_id} belongs to {stored.machine!r}, not {name!r}")
    graded = ws.call(lambda: ws.grade(stored, spec, pass_score=pass_score))
    if as_json:
        dump_json(graded)
    else:
        print_run(graded, verbose=False)
    print_spend(ws.budget)
