"""``machine run``, ``runs`` and ``eval``: one run, the stored runs, grading a stored run."""

from __future__ import annotations

import sys
from typing import Any

import click

from machine.errors import BadInputError
from machine.runs import EditMode, RunSummary

from ._approve import allow_option, approver
from ._chat import chat
from ._complete import machine_argument
from ._edits import edits_option, in_project
from ._measure_options import pass_score_option
from ._options import (
    grading_options,
    handle_errors,
    print_spend,
    spend_id,
    spending_options,
    with_workspace,
    workspace_from,
)
from ._render import dump_json, fmt_score, print_run
from ._run_view import fmt_time, print_whole
from ._table import print_table


@click.command()
@machine_argument()
@click.argument("input", required=False)
@click.option("--eval", "grade", is_flag=True, help="Grade the run (every exchange, when interactive).")
@click.option("--continue", "resume", is_flag=True, help="Resume the last conversation with this machine.")
@pass_score_option
@click.option("--json", "as_json", is_flag=True, help="Print the run as one JSON object.")
@allow_option
@edits_option
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
    allow: float | None,
    edits: EditMode | None,
    **spending: Any,
) -> None:
    """Run a machine on INPUT; with no INPUT, talk to it in the terminal.

    Started inside a project folder, its tools work on that project's files: each change is shown to
    you and made only after your yes (--edits). A call of its tools that spends or changes (the
    machinist's tools, say) goes only after you answer the program's own question at the terminal, or
    within --allow USD."""
    ws = workspace_from(ctx, **spending)
    spec = ws.load(name)
    if input is not None and resume:
        raise BadInputError("--continue resumes an interactive conversation: leave out INPUT")
    in_project(ws, spec, edits)
    who = approver(allow, command=f"machine run {name}", ask=True, within=spend_id(ctx))
    if input is None:
        chat(
            ws,
            spec,
            grade=grade,
            resume=resume,
            pass_score=pass_score,
            model=spending["model"],
            approver=who,
        )
        return
    result = ws.call(
        lambda: ws.run(spec, input, model=spending["model"], grade=grade, pass_score=pass_score, approver=who)
    )
    if as_json:
        dump_json(result)
    else:
        print_run(result)
    print_spend(ws.budget)
    if result.status == "error":
        sys.exit(1)  # stored, and reported above; the exit status says it failed


@click.command()
@machine_argument()
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many runs, newest first."
)
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
        return
    headers = ("id", "started", "score", "", "cost", "model", "case", "tags", "input, or why it failed")
    print_table(headers, [_row(r) for r in found])
    click.echo("`machine show-run ID` shows one whole: every step, each grader's reason, the tags", err=True)


def _row(r: RunSummary) -> tuple[str, ...]:
    """One listed run: its columns, the last the input, or why it failed when it did."""
    verdict = {True: "pass", False: "fail", None: "" if r.score is None else "undecided"}[r.passed]
    score = "ERROR" if r.status == "error" else fmt_score(r.score) if r.graded else "ungraded"
    why = repr(r.input_preview[:50])
    if r.status == "error":
        why = f"error: {(r.error or '')[:80]}"
    elif r.passed is False:
        why = f"below full marks: {', '.join(r.failing)}"
    return (
        r.id,
        fmt_time(r.created_at),
        score,
        verdict,
        f"${r.cost_usd:.4f}",
        r.model,
        r.case_id or "-",
        ",".join(r.tags) or "-",
        why,
    )


@click.command("eval")
@machine_argument()
@click.argument("run_id")
@pass_score_option
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


@click.command("show-run")
@click.argument("run_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the stored run as JSON, as `run --json` does.")
@with_workspace
@click.pass_context
@handle_errors
def show_run(ctx: click.Context, /, run_id: str, as_json: bool) -> None:
    """Show a stored run whole: where it came from, every step (reasoning, tool calls and results), its
    output, its scorecard with each grader's reason, its error and its tags. Reads the store only: nothing
    is run or graded again. The ids are in `machine runs NAME`.
    """
    ws = workspace_from(ctx)
    found = ws.store.get(run_id)
    if as_json:
        dump_json(found)
    else:
        print_whole(found)
