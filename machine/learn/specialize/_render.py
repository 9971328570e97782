"""Specialize and rubric-draft reports in words, as ``machine specialize`` and ``machine draft-rubric`` print
them."""

from __future__ import annotations

from ._draft import RubricDraft
from ._report import Attempt, Specialization
from .vetting import CheckResult


def _attempt(attempt: Attempt) -> list[str]:
    files = ", ".join(attempt.written) or "no files"
    took = f" (checked in {attempt.seconds:.1f} s)" if attempt.seconds else ""
    lines = [f"  attempt {attempt.number}: {attempt.outcome.upper()}: wrote {files}{took}"]
    lines += [f"      problem: {p}" for p in attempt.problems]
    lines += [f"      second look: {n}" for n in attempt.second_look]
    return lines


def _check(result: CheckResult) -> str:
    """The check's score of each sample run, the runs that pass on the machine's rubric first."""
    groups = []
    for label, verdict in (("passing runs", True), ("failing runs", False), ("ungraded runs", None)):
        scores = [s.score for s in result.samples if s.passed is verdict]
        if scores:
            groups.append(f"{label} " + " ".join("-" if s is None else f"{s:.2f}" for s in scores))
    return f"  {result.criterion} ({result.grader}): {'; '.join(groups) or 'no sample runs'}"


def format_specialization(report: Specialization) -> str:
    """The call in words: the child and its author, each attempt, the checks on the sample runs, the
    cases kept and discarded with why, what was written, the spend of each part, and what to run next."""
    model = f" on {report.model}" if report.model else ""
    lines = [
        f"specialize {report.parent} -> {report.child}{model}: {report.focus}",
        f"author machine {report.author!r} on {report.author_model}; checks tried on "
        f"{len(report.samples)} sample runs of {report.parent}",
        *(f"warning: {w}" for w in report.warnings),
        "",
        "child:",
    ]
    lines += [line for attempt in report.attempts for line in _attempt(attempt)]
    if report.checks:
        lines += ["checks on the sample runs:", *(_check(c) for c in report.checks)]
    lines += [f"  {note}" for note in report.second_look]
    if report.reused_cases:
        lines += ["", "cases: reused as they were"]
    elif report.cases or report.topics:
        kept = [c for c in report.cases if c.kept]
        lines += [
            "",
            f"topics: {'; '.join(report.topics)}",
            f"cases: {len(kept)} kept of {len(report.cases)}",
        ]
        lines += [f"  {'KEPT' if c.kept else 'DISCARDED'} {c.id}: {c.reason}" for c in report.cases]
        lines.append(
            f"  split: {report.kept_cases} in cases.json, {report.holdout_cases} in holdout.json"
            + (f", hidden tests for {report.hidden_cases}" if report.hidden_cases else "")
            + f"; {report.check_seconds:.1f} s checking them"
        )
    if report.written:
        lines += ["", "written (not committed):", *(f"  {path}" for path in report.written)]
    cost = report.cost
    lines += [
        "",
        f"cost: sample runs ${cost.samples:.4f}, child ${cost.child:.4f}, cases ${cost.cases:.4f} "
        f"(total ${cost.total:.4f}); {report.seconds:.1f} s",
    ]
    if report.stopped:
        lines.append(f"stopped: {report.stopped}")
    lines += ["next:", *(f"  {step}" for step in report.next_steps)]
    return "\n".join(lines)


def format_rubric_draft(report: RubricDraft) -> str:
    """A rubric draft in words: each attempt, the criteria and their checks on the sample runs, the file
    written, the spend and what to do next."""
    lines = [
        f"draft-rubric {report.machine}: author machine {report.author!r} on {report.author_model}; "
        f"checks tried on {len(report.samples)} sample runs",
        *(f"warning: {w}" for w in report.warnings),
        "",
    ]
    lines += [line for attempt in report.attempts for line in _attempt(attempt)]
    if report.accepted:
        judged = f" ({', '.join(report.judged)} judged)" if report.judged else ""
        lines.append(f"criteria: {', '.join(report.criteria)}{judged}")
    if report.checks:
        lines += ["checks on the sample runs:", *(_check(c) for c in report.checks)]
    lines += [f"  {note}" for note in report.second_look]
    if report.accepted:
        lines.append(
            f"written (not committed): {report.file}"
            + (" (replacing the earlier draft)" if report.replaced else "")
        )
    lines.append(f"cost: ${report.cost_usd:.4f}; {report.seconds:.1f} s")
    if report.stopped:
        lines.append(f"stopped: {report.stopped}")
    if report.next_steps:
        lines += ["next:", *(f"  {step}" for step in report.next_steps)]
    return "\n".join(lines)
