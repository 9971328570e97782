"""A gate report in words, as ``machine propose`` and a refused ``commit`` print it."""

from __future__ import annotations

from machine.spec import GateReport


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def format_report(report: GateReport) -> str:
    """The report in words: the data, each version's figures, each criterion before and after, the
    paired difference and the decision."""
    b, a = report.before, report.after
    lines = [
        f"{report.machine}: candidate {report.candidate} ({a.model}) against live {report.live} ({b.model})",
        f"data: {report.cases} held-out cases from {report.cases_file}, {report.trials} trials each",
    ]
    for label, side in ((f"live {report.live}", b), (f"candidate {report.candidate}", a)):
        lines.append(
            f"  {label}: {side.runs} runs ({side.reused} reused, {side.regraded} regraded, {side.new} new), "
            f"{side.errors} failed, {side.unscored} unscored; mean {_score(side.mean)}, "
            f"pass rate {_rate(side.pass_rate)}"
        )
    if report.criteria:
        lines.append("criteria (mean before -> after, pass rate before -> after):")
        width = max(len(c) for c in report.criteria)
        for criterion, f in report.criteria.items():
            unscored = f.unscored_before + f.unscored_after
            extra = f", {unscored} unscored" if unscored else ""
            lines.append(
                f"  {criterion:<{width}}  {_score(f.before)} -> {_score(f.after)}   "
                f"{_rate(f.before_pass_rate)} -> {_rate(f.after_pass_rate)}{extra}"
            )
    if report.diff is not None:
        z = "-" if report.z is None else f"{report.z:.2f}"
        lines.append(
            f"candidate - live: {report.diff:+.3f}, standard error {_score(report.se)} over "
            f"{report.paired_cases} cases, z {z} (gate: z >= {report.min_z:g})"
        )
    verdict = "PASSED" if report.passed else "NOT PASSED"
    lines.append(f"decision: {verdict}: {report.decision}")
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    lines.append(f"cost: ${report.cost_usd:.4f}")
    return "\n".join(lines)
