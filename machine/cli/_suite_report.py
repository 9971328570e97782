"""How a suite's report looks in a terminal: its cases, each criterion over the graded runs, the summary.
A person reads the cases that need attention, not 5,000 rows, and printing every row cost more than the
runs did: past ``SHOWN`` cases, the report lists the first ``SHOWN`` that need attention and counts the
rest (``--all-cases`` lists every case; ``--json`` is always whole)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import click

from machine.measure import CaseResult, CriterionResult, FamilyReport, SuiteReport
from machine.runs import counted, inert

from ._render import fmt_pass_rate, fmt_rate, fmt_score, raised_lines
from ._table import print_table

SHOWN = 20
"""A suite of at most this many cases lists every one; a larger one at most this many that need attention."""

CASE_HEADERS = ("case", "mean", "pass^N", "notes")
CRITERION_HEADERS = ("criterion", "mean", "pass", "runs", "unscored")


def print_report(report: SuiteReport, *, all_cases: bool = False) -> None:
    """The cases (every one with ``all_cases``), each criterion, the summary line, each check that raised,
    and why the suite stopped early."""
    print_cases(report.cases, all_cases=all_cases)
    if report.criteria:
        click.echo()
        print_criteria(report.criteria)
    rate = fmt_pass_rate(report.pass_rate, report.undecided)
    click.secho(
        f"{report.machine}: {counted(report.runs, 'run')}, mean {fmt_score(report.mean)}, {rate}, "
        f"{counted(report.unscored, 'unscored grade')}, {counted(report.errors, 'failed run')}, "
        f"cost ${report.cost_usd:.4f}",
        bold=True,
    )
    for line in raised_lines(report.criteria):
        click.secho(inert(line), fg="red")
    if report.stopped:
        click.secho(inert(f"stopped early: {report.stopped}"), fg="yellow")


def print_family(report: FamilyReport, *, all_cases: bool = False) -> None:
    """Each member's report, the members skipped, then the criteria all of them inherit from the root."""
    for member in report.machines:
        print_report(member, all_cases=all_cases)
        click.echo()
    for skipped in report.skipped:
        click.secho(inert(f"{skipped.machine}: skipped ({skipped.reason})"), fg="yellow")
    members = len(report.machines)
    click.secho(f"inherited from {report.root}, across {counted(members, 'machine')}:", bold=True)
    print_criteria(report.inherited)
    if report.stopped:
        click.secho(inert(f"stopped early: {report.stopped}"), fg="yellow")


def print_cases(cases: Sequence[CaseResult], *, all_cases: bool = False) -> None:
    """Every case of a small suite (or with ``all_cases``); else the first ``SHOWN`` that need attention
    and a line counting the cases left out."""
    if all_cases or len(cases) <= SHOWN:
        print_table(CASE_HEADERS, [_case_row(c) for c in cases])
        return
    flagged = [c for c in cases if needs_attention(c)]
    passed = len(cases) - len(flagged)
    if not flagged:
        click.echo(f"all {len(cases)} cases passed every trial (--all-cases lists them)")
        return
    print_table(CASE_HEADERS, [_case_row(c) for c in flagged[:SHOWN]])
    left_out = []
    if len(flagged) > SHOWN:
        more = len(flagged) - SHOWN
        left_out.append(f"{counted(more, 'more case')} that need{'s' if more == 1 else ''} attention")
    if passed:
        left_out.append(f"{counted(passed, 'case')} that passed every trial")
    click.echo(f"… and {' and '.join(left_out)}, not shown (--all-cases lists every case)")


def needs_attention(case: CaseResult) -> bool:
    """Whether a person should look at ``case``: a trial that did not pass (below the pass score, failed,
    undecided or unscored), an UNSCORED grade even in a pass, or no trial run at all."""
    return not case.trials or case.passes < case.trials or case.unscored_grades > 0


def print_criteria(criteria: Mapping[str, CriterionResult]) -> None:
    """Each criterion: its mean and pass rate where scored, the runs where it was scored, its UNSCORED
    grades."""
    rows = [
        (name, fmt_score(c.mean), fmt_rate(c.pass_rate), str(c.runs), str(c.unscored))
        for name, c in criteria.items()
    ]
    print_table(CRITERION_HEADERS, rows)


def _case_row(c: CaseResult) -> tuple[str, str, str, str]:
    notes = []
    if c.unscored_grades:
        notes.append(counted(c.unscored_grades, "unscored grade"))
    if c.undecided:
        notes.append(f"{c.undecided} undecided")
    if c.errors:
        notes.append(f"{c.errors} failed")
    if not c.trials:
        notes.append("not run")
    mean = fmt_score(c.mean) if c.trials else "-"
    return (c.case_id, mean, f"{c.passes}/{c.trials}", ", ".join(notes))
