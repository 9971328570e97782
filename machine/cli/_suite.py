"""``machine suite``: every case, several trials, graded, with per-case means and pass^N."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from machine.errors import BadInputError, WorkFailed
from machine.measure import FamilyReport, MeasureOptions, SuiteReport, run_family
from machine.ops import SuitePlan, plan_suite, run_planned
from machine.runs import Run, counted, inert
from machine.workspace import Workspace

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
from ._progress import Bar, verdict
from ._progress import wanted as progress_wanted
from ._render import dump_json, fmt_score
from ._stop import INTERRUPTED, end, resume_command, stop_status
from ._suite_report import SHOWN, print_family, print_report


@click.command()
@machine_argument()
@click.option("--cases", "cases_file", default=None, metavar="FILE", help="Cases file (default: cases.json).")
@trials_option("Runs per case.")
@concurrency_option
@pass_score_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--all-cases",
    is_flag=True,
    help=f"List every case in the report: past {SHOWN} cases it lists only those that need attention "
    f"({SHOWN} at most) and counts the rest.",
)
@click.option("-v", "--verbose", is_flag=True, help="Print each run as it finishes.")
@click.option(
    "--resume",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[SUITE_ID]",
    help="Finish a suite that was stopped: run only its (case, trial) pairs with no finished run. "
    "Alone, the newest suite of this machine on the same cases and trials; or the suite named.",
)
@click.option(
    "--tree",
    is_flag=True,
    help="Run every machine of the family (NAME and NAME/...) on its own cases.json, then report "
    "the criteria they all inherit from NAME across all of them.",
)
@executor_options
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def suite(
    ctx: click.Context,
    /,
    name: str,
    cases_file: str | None,
    trials: int,
    concurrency: int,
    pass_score: float,
    as_json: bool,
    all_cases: bool,
    verbose: bool,
    resume: str | None,
    tree: bool,
    **spending: Any,
) -> None:
    """Run and grade every case of a machine, --trials times each."""
    if tree and (resume is not None or cases_file is not None or spending["executor"] != "local"):
        raise BadInputError(
            "--tree runs each family member here on its own cases.json: leave out --resume, --cases "
            "and --executor"
        )
    ws = workspace_from(ctx, **spending)
    shown = _Shown(as_json=as_json, all_cases=all_cases)
    options = measuring(trials, concurrency, pass_score)
    if tree:
        _family(ws, name, options, shown, verbose, spending["model"])
        return
    plan = plan_suite(ws, name, options, cases=cases_file, model=spending["model"])
    progress = _Progress(plan.runs, verbose=verbose, bar=not as_json and not verbose and progress_wanted())
    report = _run(ctx, ws, plan, progress, resume, shown)
    progress.close()
    shown.suite(report)
    print_spend(ws.budget)


def _run(
    ctx: click.Context,
    ws: Workspace,
    plan: SuitePlan,
    progress: _Progress,
    resume: str | None,
    shown: _Shown,
) -> SuiteReport:
    """The planned suite run (or resumed), what finished shown if it stops."""
    announce = resume is not None
    resumed = False if resume is None else True if resume == "latest" else resume
    try:
        return ws.call(
            lambda: run_planned(
                ws,
                plan,
                resume=resumed,
                on_run=progress.run,
                on_start=lambda r, n: progress.start(r, n, announce),
            )
        )
    except WorkFailed as error:  # what did finish is shown; the spend and the error line follow
        if isinstance(error.report, SuiteReport):
            shown.suite(error.report)
        raise
    except BaseException as error:
        progress.close()
        _stopped(ctx, ws, progress, error)
        raise


@dataclass(frozen=True)
class _Shown:
    """How the report is printed: as JSON, always whole; or as text, with every case or (past
    ``SHOWN`` cases) those that need attention."""

    as_json: bool
    all_cases: bool

    def suite(self, report: SuiteReport) -> None:
        if self.as_json:
            dump_json(report)
        else:
            print_report(report, all_cases=self.all_cases)

    def family(self, report: FamilyReport) -> None:
        if self.as_json:
            dump_json(report)
        else:
            print_family(report, all_cases=self.all_cases)


def _stopped(ctx: click.Context, ws: Workspace, progress: _Progress, error: BaseException) -> None:
    """A suite stopped by Ctrl-C or a closed pipe ends with what it kept, what it spent and the command that
    finishes it; any other error goes on up."""
    status = stop_status(error)
    if status is None or progress.suite_id is None:
        return
    why = "interrupted" if status == INTERRUPTED else "output closed"
    lines = [
        f"{why}: suite {progress.suite_id} of {progress.machine} stopped after {progress.done} of "
        f"{counted(progress.total, 'run')}; the finished runs are stored",
        ws.budget.describe(),
        "continue it with: " + resume_command(ctx, progress.machine, progress.suite_id, leave_out=["tree"]),
    ]
    end(status, ["", *lines] if progress.bar and 0 < progress.done < progress.total else lines)


class _Progress:
    """What ``machine suite`` shows while it runs: each run (``--verbose``), or a bar on a terminal; and
    which suite is running, for the note a stopped suite ends with."""

    def __init__(self, total: int, *, verbose: bool, bar: bool) -> None:
        self.total, self.done, self.verbose, self.bar = total, 0, verbose, bar
        self.suite_id: str | None = None
        self.machine = ""
        self.shown: Bar | None = None

    def start(self, report: SuiteReport, remaining: int, announce: bool) -> None:
        self.total, self.done = remaining, 0
        self.suite_id, self.machine = report.suite_id, report.machine
        if announce:
            click.echo(
                f"resuming suite {report.suite_id}: {report.resumed} pairs done, {remaining} to run", err=True
            )
        if self.bar and remaining:
            self.shown = Bar(report.machine, remaining)

    def run(self, run: Run) -> None:
        self.done += 1
        if self.verbose:
            _print_verbose(run, self.done, self.total)
        elif self.shown is not None:
            self.shown.advance(f"last: {run.case_id} {verdict(run)}")
            if self.done == self.total:
                self.close()

    def close(self) -> None:
        if self.shown is not None:
            self.shown.close()
            self.shown = None


def _family(
    ws: Workspace, name: str, options: MeasureOptions, shown: _Shown, verbose: bool, model: str | None
) -> None:
    done = 0
    member = _Progress(0, verbose=False, bar=False)  # the member running now, for the note if it stops

    def on_start(report: SuiteReport, remaining: int) -> None:
        member.start(report, remaining, announce=False)
        if not shown.as_json:
            click.echo(f"{report.machine}: {counted(remaining, 'run')}", err=True)

    def on_run(run: Run) -> None:
        nonlocal done
        done += 1
        member.done += 1
        if verbose:
            _print_verbose(run, done, 0)

    try:
        report = ws.call(lambda: run_family(ws, name, options, model=model, on_run=on_run, on_start=on_start))
    except BaseException as error:
        _stopped(click.get_current_context(), ws, member, error)
        raise
    shown.family(report)
    print_spend(ws.budget)


def _print_verbose(run: Run, done: int, total: int) -> None:
    count = f"{done}/{total}" if total else str(done)
    head = f"[{count}] case {run.case_id} trial {run.trial}:"
    if run.status == "error":
        click.secho(inert(f"{head} ERROR {run.error}"), fg="red")
        return
    card = run.scorecard
    score = None if card is None else card.score
    verdict = {True: "pass", False: "FAIL", None: "UNSCORED" if score is None else "undecided"}[
        None if card is None else card.passed
    ]
    click.echo(inert(f"{head} {fmt_score(score)} {verdict}"))
    for c in card.criteria.values() if card else ():
        if c.score is None or c.score < 1.0:  # a grader's reason: a model's, or a check's quoting the run
            click.echo(
                inert(f"    {c.criterion}: {fmt_score(c.score)}{' — ' + c.reason if c.reason else ''}")
            )
