"""``machine optimize``: rewrites of a machine's instructions, kept only when measured better."""

from __future__ import annotations

import sys
from typing import Any

import click

from machine.learn import Optimization, format_optimization, optimize
from machine.runs import Run
from machine.spec import DEFAULT_MIN_Z

from ._options import handle_errors, print_spend, spending_options, with_workspace, workspace_from
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
            click.echo(f"  run {self.done}: case {run.case_id}{trial} ({whose}): {score}", err=True)


def _next_steps(name: str, result: Optimization) -> str:
    if result.candidate is None:
        return "nothing was kept; instructions.md is as it was"
    label = result.candidate.label
    return (
        f"{label} is pending and written to instructions.md (not committed to git): accept it with "
        f"`machine commit {name}` (and commit the file), or reject it with `machine revert {name}`"
    )


@click.command("optimize")
@click.argument("name")
@click.option("--trials", type=click.IntRange(min=1), default=3, show_default=True, help="Runs per case.")
@click.option(
    "--rounds", type=click.IntRange(min=1), default=2, show_default=True, help="Rounds of proposals."
)
@click.option(
    "--candidates", type=click.IntRange(min=1), default=2, show_default=True, help="Proposals per round."
)
@click.option(
    "--min-z",
    type=click.FloatRange(min=0),
    default=DEFAULT_MIN_Z,
    show_default=True,
    help="Standard errors a proposal's paired gain on the cases must reach to be kept.",
)
@click.option(
    "--cases",
    "cases_file",
    default=None,
    metavar="FILE",
    help="Cases, in NAME's folder (default: cases.json).",
)
@click.option(
    "--holdout",
    default=None,
    metavar="FILE",
    help="Held-out cases, in NAME's folder, never shown (default: holdout.json).",
)
@click.option(
    "--optimizer-model",
    default=None,
    metavar="MODEL",
    help="The optimizer machine's model (default: its own, thinkingmachines/Inkling).",
)
@click.option("--allow-overlap", is_flag=True, help="Keep a proposal that copies case text word for word.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--pass-score", type=float, default=1.0, show_default=True, help="Score a run needs to pass.")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seeds which failures each proposal sees."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def optimize_command(
    ctx: click.Context,
    /,
    name: str,
    trials: int,
    rounds: int,
    candidates: int,
    min_z: float,
    cases_file: str | None,
    holdout: str | None,
    optimizer_model: str | None,
    allow_overlap: bool,
    concurrency: int,
    pass_score: float,
    seed: int,
    as_json: bool,
    **spending: Any,
) -> None:
    """Ask the optimizer machine for rewrites of NAME's instructions and keep one only if it scores higher
    on the cases and on the held-out cases too (each by --min-z standard errors, on enough cases). Both
    files are read from NAME's folder. A kept rewrite is written to instructions.md as a pending
    candidate; nothing is committed."""
    ws = workspace_from(ctx, **spending)
    show = not as_json and sys.stderr.isatty()
    progress = _Progress(show, ws.load(name).instructions if show else "")
    result = ws.call(
        lambda: optimize(
            ws,
            name,
            trials=trials,
            rounds=rounds,
            candidates=candidates,
            min_z=min_z,
            cases=cases_file,
            holdout=holdout,
            optimizer_model=optimizer_model,
            model=spending.get("model"),
            concurrency=concurrency,
            pass_score=pass_score,
            allow_overlap=allow_overlap,
            seed=seed,
            on_run=progress.run,
        )
    )
    if as_json:
        for warning in result.report.warnings:  # the printed report says them itself
            click.secho(f"warning: {warning}", fg="yellow", err=True)
        dump_json(result.report)
    else:
        click.echo(format_optimization(result.report))
        click.echo(_next_steps(name, result))
    print_spend(ws.budget)
