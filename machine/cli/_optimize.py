"""``machine optimize``: rewrites of a machine's instructions, kept only when measured better."""

from __future__ import annotations

import sys
from typing import Any

import click

from machine.learn import Optimization, OptimizeOptions, optimize
from machine.learn.optimize import format_optimization
from machine.runs import Run, inert

from ._complete import machine_argument
from ._model_options import model_options
from ._options import (
    executor_options,
    handle_errors,
    print_spend,
    spending_options,
    with_workspace,
    workspace_from,
)
from ._plan import print_plan
from ._render import dump_json


class _Progress:
    """A line per finished run of the machine, on a terminal (stderr, so --json stays clean). A run is
    the live version's when it has the live instructions; a proposal's runs match no version yet."""

    def __init__(self, show: bool, live_instructions: str) -> None:
        self.show, self.done, self.live = show, 0, live_instructions

    def run(self, run: Run) -> None:
        self.done += 1
        if self.show:
            score = "failed" if run.status == "error" else "-" if run.score is None else f"{run.score:.2f}"
            whose = "live" if run.instructions == self.live else "a proposal"
            trial = "" if run.trial is None else f" trial {run.trial + 1}"
            click.echo(inert(f"  run {self.done}: case {run.case_id}{trial} ({whose}): {score}"), err=True)


def _next_steps(name: str, result: Optimization) -> str:
    if result.candidate is None:
        return "nothing was kept; instructions.md is as it was"
    label = result.candidate.label
    return (
        f"{label} is pending and written to instructions.md (not committed to git): accept it with "
        f"`machine commit {name}` (and commit the file), or reject it with `machine revert {name}`"
    )


@click.command("optimize")
@machine_argument()
@model_options(
    OptimizeOptions,
    skip=("model",),  # the run options' --model
    extra={
        "cases": {"metavar": "FILE"},
        "holdout": {"metavar": "FILE"},
        "optimizer_model": {"metavar": "MODEL"},
    },
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@executor_options
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def optimize_command(
    ctx: click.Context, /, name: str, options: OptimizeOptions, as_json: bool, **spending: Any
) -> None:
    """Ask the optimizer machine for rewrites of NAME's instructions and keep one only if it scores higher
    on the cases and on the held-out cases too (each by --min-z standard errors, on enough cases). Both
    files are read from NAME's folder. A kept rewrite is written to instructions.md as a pending
    candidate; nothing is committed."""
    ws = workspace_from(ctx, **spending)
    show = not as_json and sys.stderr.isatty()
    progress = _Progress(show, ws.load(name).instructions if show else "")
    chosen = OptimizeOptions.of(options, model=spending.get("model"))
    print_plan(ws, "optimize", name, chosen)
    result = ws.call(lambda: optimize(ws, name, chosen, on_run=progress.run))
    if as_json:
        for warning in result.report.warnings:  # the printed report says them itself
            click.secho(inert(f"warning: {warning}"), fg="yellow", err=True)
        dump_json(result.report)
    else:
        click.echo(inert(format_optimization(result.report)))  # it quotes the optimizer's rewrites
        click.echo(_next_steps(name, result))
    print_spend(ws.budget)
