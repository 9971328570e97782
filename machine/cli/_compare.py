"""``machine compare``: the working tree's machine against the same machine at a git revision."""

from __future__ import annotations

from typing import Any

import click

from machine.measure import Comparison, Plan, Side, compare
from machine.runs import counted, inert

from ._complete import machine_argument
from ._measure_options import concurrency_option, measuring, pass_score_option, trials_option
from ._options import (
    executor_options,
    handle_errors,
    print_spend,
    spending_options,
    with_workspace,
    workspace_from,
)
from ._progress import watching
from ._render import dump_json, fmt_pass_rate, fmt_score


@click.command("compare")
@machine_argument()
@click.option(
    "--ref", default="HEAD", show_default=True, metavar="REV", help="The git revision to compare with."
)
@click.option("--cases", "cases_file", default=None, metavar="FILE", help="Cases file (default: cases.json).")
@trials_option("Runs per case, each.")
@concurrency_option
@pass_score_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@executor_options
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def compare_command(
    ctx: click.Context,
    /,
    name: str,
    ref: str,
    cases_file: str | None,
    trials: int,
    concurrency: int,
    pass_score: float,
    as_json: bool,
    **spending: Any,
) -> None:
    """Run the working tree's version of a machine (B) and its version at --ref (A) on the same cases,
    interleaved, both graded with the current rubric, and report the paired difference B - A."""
    options = measuring(trials, concurrency, pass_score)
    ws = workspace_from(ctx, **spending)
    turns = ws.load(name).counterpart is not None  # a conversation's turns are runs: no total known

    with watching(ws, name, show=not as_json) as bar:

        def on_start(plan: Plan) -> None:
            if not as_json:
                _print_plan(plan)
            if bar is not None and not turns:
                bar.expect(2 * plan.cases * plan.trials)

        report = ws.call(
            lambda: compare(
                ws, name, options, ref=ref, cases=cases_file, model=spending["model"], on_start=on_start
            )
        )
    if as_json:
        dump_json(report)
    else:
        _print_report(report)
    print_spend(ws.budget)


def _print_plan(plan: Plan) -> None:
    at = f"{plan.ref} ({plan.commit[:12]})"
    click.echo(
        f"comparing {plan.machine}: A = {at}, B = the working tree; "
        f"{counted(plan.cases, 'case')} x {counted(plan.trials, 'trial')} each"
    )
    if plan.unchanged:
        click.secho(
            f"note: {plan.machine} has not changed since {at} (same instructions, model, tools, max_steps "
            "and rubric); running both anyway, so any difference is trial noise",
            fg="yellow",
        )
    else:
        click.echo(f"changed since {plan.ref}: {', '.join(plan.changes)}")
    if plan.rubric_changed:
        click.secho(
            f"note: the rubric changed since {at}; both versions are graded with the current rubric",
            fg="yellow",
        )


def _side(label: str, side: Side) -> str:
    return (
        f"{label}: mean {fmt_score(side.mean)}, "
        f"{fmt_pass_rate(side.pass_rate, side.undecided)}, "
        f"{counted(side.runs, 'run')}, "
        f"{counted(side.unscored, 'unscored grade')}, {counted(side.unscored_runs, 'unscored run')}, "
        f"{side.errors} failed"
    )


def _print_report(report: Comparison) -> None:
    click.echo(_side(f"A {report.ref} ({report.commit[:12]})", report.a))
    click.echo(_side("B working tree", report.b))
    if report.paired is not None:
        z = "-" if report.z is None else f"{report.z:.2f}"
        click.secho(
            f"B - A: {report.diff:+.3f}, standard error {report.se:.3f} over "
            f"{counted(report.cases, 'case')}, z {z}",
            bold=True,
        )
    _print_criteria(report)
    click.echo(report.verdict)  # it speaks of "two standard errors" only when the result is within them
    if report.stopped:
        click.secho(inert(f"stopped early: {report.stopped}"), fg="yellow")


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _print_criteria(report: Comparison) -> None:
    """Each criterion's mean on A and B; under one with UNSCORED grades, how many on each side and their
    commonest reasons; a criterion with no scored grade on a side is marked NOT MEASURED."""
    if not report.a.criteria:
        return
    click.echo("criteria (mean A -> B):")
    width = max(len(name) for name in report.a.criteria)
    unmeasured = report.unmeasured
    for name, a in report.a.criteria.items():
        b = report.b.criteria.get(name)
        after = _mean(None if b is None else b.mean)
        flag = f"   NOT MEASURED on {' and '.join(unmeasured[name])}" if name in unmeasured else ""
        click.echo(inert(f"  {name:<{width}}  {_mean(a.mean):>4} -> {after:<4}{flag}".rstrip()))
        for label, side in (("A", report.a), ("B", report.b)):
            tally = side.criteria.get(name)
            if tally is None or not tally.unscored:
                continue
            reasons = side.unscored_reasons.get(name, [])
            click.echo(f"      {tally.unscored} UNSCORED on {label}" + (", most often:" if reasons else ""))
            for reason in reasons:
                click.echo(inert(f"        {reason.count}x {reason.reason}"))  # a grader's words
