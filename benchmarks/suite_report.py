"""What printing a suite's report costs, against the runs it reports (a suite of 5,000 on the echo harness
takes about 1.5 s here): the default report (the first 20 cases that need attention, the rest counted,
each criterion), the report with ``--all-cases``, and the anchor, every case through rich's ``Table`` as
the report was printed before (about 1 s of that suite's 2.6 s).

The report is a ``SuiteReport`` of 5,000 cases (``--quick``: 1,000) with one trial each and three
criteria, counted as a suite counts them: most cases pass, one in 8 fails, one in 16 has an UNSCORED
grade and one in 100 failed. Each figure is the median of 5 prints to ``/dev/null`` (3 for the anchor)
after one that is not timed (it imports what printing needs). Asserts nothing.

    .venv/bin/python benchmarks/suite_report.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time
from collections.abc import Callable

import click

from machine.cli._render import fmt_pass_rate, fmt_score
from machine.cli._suite_report import print_report
from machine.measure import CaseResult, CriterionResult, SuiteReport
from machine.runs import counted, inert

TARGET_MS = 50.0
"""The default report of 5,000 cases: a small part of the suite's own 1.5 s."""

CRITERIA = ("correct", "brief", "polite")


def build(cases: int) -> SuiteReport:
    """A report counted as a suite counts one: each case's trial, each criterion's grades."""
    results, criteria = [], {name: CriterionResult() for name in CRITERIA}
    for i in range(cases):
        case = CaseResult(case_id=f"case-{i:05d}", trials=1, runs=[f"20261206-110000-{i:016x}"])
        results.append(case)
        if i % 100 == 99:
            case.errors = 1
            continue
        fails, unscored = i % 8 == 3, i % 16 == 5
        score = 0.5 if fails else 1.0
        case.scores, case.total, case.mean = [score], score, score
        case.passes = int(not fails and not unscored)
        case.undecided = int(unscored and not fails)
        case.unscored_grades = int(unscored)
        criteria["correct"].add(0.0 if fails else 1.0, not fails)
        criteria["brief"].add(1.0, True)
        if unscored:
            criteria["polite"].unscored += 1
        else:
            criteria["polite"].add(1.0, True)
    return SuiteReport.model_construct(machine="bench", cases=results, suite_id="bench", criteria=criteria)


def rich_report(report: SuiteReport) -> None:
    """The anchor: every case through rich's ``Table``, then the summary line, as the report was printed
    before this benchmark's change."""
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0), show_header=True)
    for header in ("case", "mean", "pass^N", "notes"):
        table.add_column(header, no_wrap=True)
    for c in report.cases:
        notes = [counted(c.unscored_grades, "unscored grade")] if c.unscored_grades else []
        notes += [f"{c.undecided} undecided"] if c.undecided else []
        notes += [f"{c.errors} failed"] if c.errors else []
        table.add_row(*map(inert, (c.case_id, fmt_score(c.mean), f"{c.passes}/{c.trials}", ", ".join(notes))))
    out = io.StringIO()
    console = Console(file=out, width=100_000, color_system=None, highlight=False, markup=False, emoji=False)
    console.print(table)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    click.secho(lines[0], bold=True)
    for line in lines[1:]:
        click.echo(line)
    rate = fmt_pass_rate(report.pass_rate, report.undecided)
    click.secho(
        f"{report.machine}: {counted(report.runs, 'run')}, mean {fmt_score(report.mean)}, {rate}, "
        f"{counted(report.unscored, 'unscored grade')}, {counted(report.errors, 'failed run')}, "
        f"cost ${report.cost_usd:.4f}",
        bold=True,
    )


def timed(show: Callable[[], None], times: int) -> tuple[float, int]:
    """The lines ``show`` prints, from a first print that is not timed (it imports what printing needs),
    and the median wall time in ms of ``times`` more, to /dev/null."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show()
    took = []
    with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
        for _ in range(times):
            start = time.perf_counter()
            show()
            took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took), out.getvalue().count("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 cases rather than 5,000")
    args = parser.parse_args()
    cases = 1_000 if args.quick else 5_000
    report = build(cases)
    default_ms, default_lines = timed(lambda: print_report(report), 5)
    all_ms, all_lines = timed(lambda: print_report(report, all_cases=True), 5)
    rich_ms, rich_lines = timed(lambda: rich_report(report), 3)
    print(f"suite report of {cases:,} cases, median print time:")
    verdict = f"target <= {TARGET_MS:.0f} ms  {'met' if default_ms <= TARGET_MS else 'MISSED'}"
    print(f"  default:       {default_ms:8.1f} ms ({default_lines:>5} lines)   {verdict}")
    print(
        f"  --all-cases:   {all_ms:8.1f} ms ({all_lines:>5} lines)   {rich_ms / all_ms:.0f}x faster than rich"
    )
    print(f"  rich (anchor): {rich_ms:8.1f} ms ({rich_lines:>5} lines)   {rich_ms / cases:.2f} ms a case")


if __name__ == "__main__":
    main()
