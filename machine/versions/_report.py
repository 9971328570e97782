"""A gate report in words, as ``machine propose`` and a refused ``commit`` print it."""

from __future__ import annotations

from machine.runs import counted
from machine.spec import CriterionFigures, GateReport, ReasonCount, SideFigures, TrainingSummary


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
        f"data: {counted(report.cases, 'held-out case')} from {report.cases_file}, "
        f"{counted(report.trials, 'trial')} each",
    ]
    for label, side in ((f"live {report.live}", b), (f"candidate {report.candidate}", a)):
        scored = side.cases_scored
        covered = "" if scored is None else f"scored on {scored} of {counted(report.cases, 'case')}, "
        lines.append(
            f"  {label}: {counted(side.runs, 'run')} ({side.reused} reused, {side.regraded} regraded, "
            f"{side.new} new), "
            f"{side.errors} failed (each a 0), {side.unscored} with nothing scored, {side.unscored_grades} "
            f"UNSCORED grades; {covered}mean {_score(side.mean)}, pass rate {_rate(side.pass_rate)}"
        )
        lines.append(f"    ran on {_ran_on(side)}")
    lines.extend(_criteria_lines(report))
    if report.diff is not None:
        z = "-" if report.z is None else f"{report.z:.2f}"
        p = "-" if report.p_value is None else f"{report.p_value:.3g}"
        lines.append(
            f"candidate - live: {report.diff:+.3f}, standard error {_score(report.se)} over "
            f"{counted(report.paired_cases, 'case')}, z {z} (gate: z >= {report.min_z:g}); "
            f"{counted(report.up, 'case')} up, "
            f"{report.down} down, exact sign test p {p}"
        )
    if report.training is not None:
        lines.extend(_training_lines(report.training, report))
    if report.holdout is not None:
        h = report.holdout
        lines.append(
            f"held-out cases ({h.cases} from {h.cases_file}): live {_score(h.before.mean)} -> candidate "
            f"{_score(h.after.mean)}; {h.outcome}: {h.decision}"
        )
    lines.append(f"decision: {report.outcome.upper()}: {report.decision}")
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    lines.append(f"cost: ${report.cost_usd:.4f}")
    return "\n".join(lines)


def _ran_on(side: SideFigures) -> str:
    """Where a side's runs ran, as the report kept it."""
    if side.harness is None:
        return f"model {side.model}, on a harness the report does not name (written before it was kept)"
    at = f" at {side.endpoint}" if side.endpoint else ""
    return f"harness {side.harness}{at}, model {side.model}"


SPARKS = "▁▂▃▄▅▆▇█"
CHART_WIDTH = 60
"""The most points a loss chart shows: longer trainings are drawn as the means of equal runs of steps."""


def thinned(values: list[float], most: int) -> list[float]:
    """``values`` as they are when there are at most ``most``, else the means of ``most`` equal runs."""
    if len(values) <= most:
        return values
    size = len(values) / most
    parts = [values[round(i * size) : round((i + 1) * size)] for i in range(most)]
    return [sum(part) / len(part) for part in parts if part]


def sparkline(values: list[float], width: int = CHART_WIDTH) -> str:
    """``values`` as a row of block characters, lowest to highest (the means of equal runs of them when
    there are more than ``width``)."""
    if not values:
        return ""
    values = thinned(values, width)
    low, high = min(values), max(values)
    span = high - low or 1.0
    return "".join(SPARKS[min(int((v - low) / span * len(SPARKS)), len(SPARKS) - 1)] for v in values)


def _training_lines(t: TrainingSummary, report: GateReport) -> list[str]:
    loss = "-" if t.first_loss is None or t.last_loss is None else f"{t.first_loss:.4f} -> {t.last_loss:.4f}"
    if len(t.epoch_losses) > 1:
        means = [f"{x:.4f}" for x in t.epoch_losses]
        shown = means if len(means) <= 5 else [*means[:2], "...", *means[-2:]]
        loss = " -> ".join(shown) + " (epoch means)"
    lines = [
        f"training {t.record}: {t.trainer} on {t.base_model} ({t.renderer or 'default rendering'})",
        f"  data: {counted(t.runs, 'run')} ({t.sampled} sampled for it) -> "
        f"{counted(t.examples, 'example')} -> {t.sequences} sequences ({t.whole_run} whole runs, "
        f"{t.per_step} split per step), {t.tokens} tokens, {t.target_tokens} of them targets"
        + (f"; {t.redacted} secrets redacted" if t.redacted else ""),
        f"  {counted(t.epochs, 'epoch')}, {counted(t.steps, 'step')} at learning rate {t.learning_rate:g}; "
        f"loss {loss}; {t.seconds:.1f} s, ${t.cost_usd:.4f}"
        + ("" if t.resumed_at is None else f"; resumed at step {t.resumed_at} of {t.steps}"),
    ]
    if t.losses:
        lines.append(f"  loss per step {sparkline(t.losses)}")
    return lines + _gain_lines(t, report)


def _gain_lines(t: TrainingSummary, report: GateReport) -> list[str]:
    """The held-out gain the training bought: before and after with the standard error and z, and what
    each point of it cost (a point: 0.01 of the mean)."""
    if report.diff is None or report.before.mean is None or report.after.mean is None:
        return []
    se = "-" if report.se is None else f"{report.se:.3f}"
    z = "-" if report.z is None else f"{report.z:.2f}"
    line = (
        f"  held-out mean {report.before.mean:.3f} -> {report.after.mean:.3f} ({report.diff:+.3f}, "
        f"standard error {se}, z {z})"
    )
    spent = t.cost_usd + report.cost_usd + (report.gate.cost_usd if report.gate else 0.0)
    if report.diff > 0 and spent > 0:
        line += f"; ${spent / (report.diff * 100):.4f} per point of held-out gain"
    return [line]


def _criteria_lines(report: GateReport) -> list[str]:
    """Each criterion before and after, with the cases it was scored on each side; under one with
    UNSCORED grades, how many on each side and their commonest reasons; a criterion scored on too few
    of the cases on a side (or none) is marked NOT MEASURED."""
    if not report.criteria:
        return []
    lines = [
        "criteria (weight; mean before -> after, pass rate before -> after; cases scored before -> "
        "after; change by case, z; held: no worse allowed):"
    ]
    width = max(len(c) for c in report.criteria)
    sides = (f"live {report.live}", f"candidate {report.candidate}")
    unmeasured = report.unmeasured
    for criterion, f in report.criteria.items():
        weight = "" if f.weight is None else f"x{f.weight:g}"
        missing = unmeasured.get(criterion, [])
        flag = f"   NOT MEASURED on {' and '.join(missing)}" if missing else ""
        flag += "   WORSE" if f.worse else ""
        lines.append(
            f"  {criterion:<{width}}  {weight:>4}  {_score(f.before):>5} -> {_score(f.after):<5}   "
            f"{_rate(f.before_pass_rate):>4} -> {_rate(f.after_pass_rate):<4}   {_cases(f, report.cases)}"
            f"   {_change(f)}"
            f"{'  held' if f.held else ''}{flag}".rstrip()
        )
        lines.extend(_unscored_lines(f, sides))
    return lines


def _cases(f: CriterionFigures, cases: int) -> str:
    """On how many of the ``cases`` a criterion was scored on each side (``-``: an older report)."""
    if f.cases_before is None or f.cases_after is None:
        return "-"
    return f"{f.cases_before}/{cases} -> {f.cases_after}/{cases}"


def _change(f: CriterionFigures) -> str:
    """A criterion's paired change by case and its z, or ``-`` where none was compared."""
    if f.diff is None:
        return "-"
    return f"{f.diff:+.3f}, z {'-' if f.z is None else f'{f.z:.2f}'}"


def _unscored_lines(figures: CriterionFigures, sides: tuple[str, str]) -> list[str]:
    lines = []
    grades: tuple[tuple[str, int, list[ReasonCount]], ...] = (
        (sides[0], figures.unscored_before, figures.unscored_reasons_before),
        (sides[1], figures.unscored_after, figures.unscored_reasons_after),
    )
    for side, count, reasons in grades:
        if count:
            lines.append(f"      {count} UNSCORED on {side}" + (", most often:" if reasons else ""))
            lines.extend(f"        {r.count}x {r.reason}" for r in reasons)
    return lines
