"""An optimize report in words, as ``machine optimize`` prints it."""

from __future__ import annotations

from ._report import Cost, Measured, OptimizeReport, Proposal


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _many(count: int, thing: str) -> str:
    return f"{count} {thing}" + ("" if count == 1 else "s")


def _cost(cost: Cost) -> str:
    return (
        f"runs ${cost.runs:.4f}, judges ${cost.judges:.4f}, optimizer ${cost.optimizer:.4f} "
        f"(total ${cost.total:.4f})"
    )


def _measured(label: str, m: Measured | None) -> str:
    if m is None:
        return f"{label}: not measured"
    gain = "-" if m.diff is None else f"{m.diff:+.3f}"
    z = "-" if m.z is None else f"{m.z:.2f}"
    sign = "-" if m.p_value is None else f"{m.p_value:.3g}"
    return (
        f"{label}: mean {_score(m.mean)} (live {_score(m.live_mean)}), gain {gain}, SE {_score(m.se)}, "
        f"z {z}, sign test p {sign} over {_many(m.paired_cases, 'case')}"
    )


def _proposal(p: Proposal) -> list[str]:
    lines = [f"  {p.label}: {p.outcome.upper()}: {p.decision}"]
    if p.shown:
        lines.append(f"      shown {len(p.shown)} failing cases ({', '.join(p.shown)}); asked {p.asked}x")
    if p.cases is not None:
        lines.append("      " + _measured("cases", p.cases))
    if p.holdout is not None:
        lines.append("      " + _measured("held-out", p.holdout))
    lines.extend(f'      copies case {c.case_id!r} ({c.field}): "{c.words}"' for c in p.copied)
    lines.append(f"      cost: {_cost(p.cost)}")
    return lines


def format_optimization(report: OptimizeReport) -> str:
    """The search in words: the data, the live version, each round's proposals with their figures and
    decisions, what was kept and its diff, where it stopped, the calls made and the cost of each part."""
    held = (
        f"{report.holdout_cases} held-out cases from {report.holdout_file}"
        if report.holdout_file
        else "no held-out cases"
    )
    lines = [
        f"optimize {report.machine}: live {report.live} on {report.model}; {report.cases} cases from "
        f"{report.cases_file} and {held}, {_many(report.trials, 'trial')} each; "
        f"{_many(report.candidates, 'proposal')} a round from {report.optimizer} on "
        f"{report.optimizer_model}; keep at z >= {report.min_z:g}",
        *(f"warning: {w}" for w in report.warnings),
        f"live {report.live}: cases mean {_score(report.live_cases_mean)}, "
        f"held-out mean {_score(report.live_holdout_mean)}",
    ]
    for round_ in report.rounds:
        lines.append(f"round {round_.number} (from {round_.parent}):")
        for proposal in round_.proposals:
            lines.extend(_proposal(proposal))
    if report.kept:
        lines.append(
            f"kept: {report.kept}, written to instructions.md as pending candidate {report.candidate}"
        )
        lines.extend(["diff:", report.diff or "(no change)"])
    else:
        lines.append("kept: nothing; instructions.md is unchanged")
    lines.append(f"ended: {report.ended}")
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    c = report.calls
    lines.append(
        f"calls: {c.new} machine runs made ({c.live_new} of the live version), {c.reused} reused, "
        f"{c.regraded} graded again, {_many(c.optimizer, 'optimizer call')}"
    )
    lines.append(f"cost: {_cost(report.cost)}")
    return "\n".join(lines)
