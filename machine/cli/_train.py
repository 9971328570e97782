"""``machine train``: fine-tune the machine's model on its good runs, as a pending candidate."""

from __future__ import annotations

import sys
from typing import Any

import click

from machine.errors import BadInputError
from machine.learn import ALL_SOURCES, ChooseSource, TrainingCheck, TrainOptions, check_training, train
from machine.learn.rl import RLOptions
from machine.ops import plan_learning
from machine.runs import inert
from machine.training import StepMetrics
from machine.versions import Candidate, format_report

from ._complete import machine_argument
from ._model_options import model_options
from ._options import (
    executor_options,
    fail,
    handle_errors,
    print_spend,
    spending_options,
    with_workspace,
    workspace_from,
)
from ._plan import print_plan
from ._render import dump_json
from ._stop import stop_on_sigterm
from ._train_progress import TrainProgress


def _step_echo(metrics: StepMetrics) -> None:
    click.echo(_step_line(metrics), err=True)


def _step_line(metrics: StepMetrics) -> str:
    loss = "-" if metrics.loss is None else f"{metrics.loss:.4f}"
    drift = "" if metrics.chosen_drift is None else f", chosen drift {metrics.chosen_drift:+.3f}"
    return (
        f"  step {metrics.step} (epoch {metrics.epoch}): loss {loss}{drift}, {metrics.tokens} tokens, "
        f"{metrics.seconds:.1f} s, ${metrics.cost_usd:.4f}"
    )


@click.command("train")
@machine_argument()
@model_options(
    TrainOptions,
    skip=("effort", "rl"),  # the run options' --effort; RL's own flags below
    extra={"target_modules": {"metavar": "NAMES"}, "resume": {"metavar": "ID"}},
)
@model_options(RLOptions, into="rl_options")
@click.option(
    "--trainer",
    default=None,
    help="Who trains: local for a local: model, tinker otherwise (the default).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Render every example, count and price them and print the plan; spend and write nothing.",
)
@click.option(
    "--smoke",
    is_flag=True,
    help="Train two steps end to end (save a state, load it, sample the checkpoint once) and discard it all.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the candidate (or the check) as JSON.")
@executor_options
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def train_command(
    ctx: click.Context,
    /,
    name: str,
    options: TrainOptions,
    rl_options: RLOptions,
    trainer: str | None,
    dry_run: bool,
    smoke: bool,
    as_json: bool,
    **spending: Any,
) -> None:
    """Fine-tune NAME's model on its good runs (sampling --samples more of each case first), or with
    --method rl on its own runs of the cases rewarded by its evaluator, then measure the checkpoint against
    the live version on holdout.json: a pending candidate, committed only if it passed."""
    if rl_options.model_fields_set or options.method == "rl":
        try:
            options = TrainOptions.of(options, rl=rl_options)
        except BadInputError as error:
            fail(error)
    if options.method == "rl" and (dry_run or smoke):
        _rl_dry_run(ctx, name, options, smoke=smoke, as_json=as_json)
        return
    if dry_run or smoke:
        _check(ctx, name, options, trainer, smoke=smoke, as_json=as_json, spending=spending)
        return
    stop_on_sigterm()  # a training stopped by SIGTERM is recorded as one stopped by Ctrl-C is
    ws = workspace_from(ctx, **spending)
    print_plan(ws, "train", name, options)
    loud = not as_json
    shown = TrainProgress(bars=sys.stderr.isatty(), step_line=_step_line)  # a bar closes before a question
    try:
        candidate = ws.call(
            lambda: train(
                ws,
                name,
                options,
                trainer=trainer,
                on_run=shown.run if loud else None,
                on_step=shown.step if loud else None,
                choose_source=_chooser(as_json),
                on_phase=shown.line if loud else None,
                on_begin=shown.begin if loud else None,
            )
        )
    finally:
        shown.close()
    if as_json:
        dump_json(candidate.version)
    else:
        _render(name, candidate)
    print_spend(ws.budget)


def _check(
    ctx: click.Context,
    name: str,
    options: TrainOptions,
    trainer: str | None,
    *,
    smoke: bool,
    as_json: bool,
    spending: dict[str, Any],
) -> None:
    """``--dry-run`` (no budget, no harness: nothing runs) or ``--smoke`` (two steps and one sample, under
    the budget)."""
    ws = workspace_from(ctx, **spending) if smoke else workspace_from(ctx)
    check: TrainingCheck = ws.call(
        lambda: check_training(
            ws,
            name,
            options,
            smoke=smoke,
            trainer=trainer,
            on_step=_step_echo if smoke and not as_json else None,
            choose_source=_chooser(as_json),
        )
    )
    if as_json:
        dump_json(check)
    else:
        click.echo(inert("\n".join(check.lines())))
    if smoke:
        print_spend(ws.budget)


def _rl_dry_run(ctx: click.Context, name: str, options: TrainOptions, *, smoke: bool, as_json: bool) -> None:
    """RL's plan, counted and priced, with nothing run; ``--smoke`` is SFT's and DPO's check of rendering
    and saving, which RL has no examples for."""
    if smoke:
        fail(
            BadInputError(
                "--smoke checks the examples SFT and DPO render; for rl, train one step: --rl-steps 1"
            )
        )
    ws = workspace_from(ctx)
    plan = plan_learning(ws, "train", name, options)
    if as_json:
        dump_json(plan)
        return
    click.echo(inert(f"plan: {plan.describe(warnings=False)}"))
    for warning in plan.warnings:
        click.echo(inert(f"warning: {warning}"))


def _chooser(as_json: bool) -> ChooseSource | None:
    """Ask which source to learn from where a person at a terminal can answer; a script (or ``--json``)
    is refused instead, with the sources named."""
    return None if as_json or not (sys.stdin.isatty() and sys.stderr.isatty()) else _ask_source


def _ask_source(found: dict[str, int]) -> str | None:
    """Which of the sources the selected runs come from to learn from, asked at the terminal: a number,
    ``a`` for all of them, or nothing to stop with the error that names them."""
    click.echo(f"the runs selected come from {len(found)} sources:", err=True)
    sources = list(found)
    for number, source in enumerate(sources, 1):
        click.echo(inert(f"  {number}. {found[source]} runs of {source}"), err=True)  # a host's name
    click.echo("  a. all of them", err=True)
    answer = click.prompt("learn from", default="", show_default=False, err=True).strip().lower()
    if answer == "a":
        return ALL_SOURCES
    if answer.isdigit() and 1 <= int(answer) <= len(sources):
        return sources[int(answer) - 1]
    return None


def _render(name: str, candidate: Candidate) -> None:
    click.echo(inert(format_report(candidate.report)))
    if candidate.passed:
        click.echo(f"{candidate.label} is pending: make it live with `machine commit {name}`")
    else:
        click.echo(
            f"{candidate.label} is pending but did not pass the gate: `machine commit {name}` refuses "
            "it (--force overrides)"
        )
