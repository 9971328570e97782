"""The decision on a proposal, from what was measured, never from what the optimizer said: on the cases
and on the held-out cases alike the promotion gate's rule (a paired gain of at least ``min_z`` standard
errors over the live version, on enough cases that changed), so a rewrite that only memorized the cases
it was shown gains nothing held out and is discarded. Where the live version already scores the maximum
on every held-out run, no gain is possible there: the proposal must then keep it. Anything unmeasured is
"not measured", and a proposal that copies the cases is refused unless copying was allowed."""

from __future__ import annotations

from machine.spec import GateOutcome, GateReport
from machine.versions import measured

from ._measured_instructions import Arm
from ._report import Measured, Proposal
from ._state import SearchState


def _figures(report: GateReport) -> Measured:
    return Measured(
        mean=report.after.mean,
        live_mean=report.before.mean,
        diff=report.diff,
        se=report.se,
        z=report.z,
        paired_cases=report.paired_cases,
        p_value=report.p_value,
        outcome=report.outcome,
        decision=report.decision,
    )


def _report(search: SearchState, arm: Arm, key: str, stopped: str | None) -> GateReport:
    live = search.live.label
    chosen = search.cases if key == "cases" else search.holdout or []
    where = search.report.cases_file if key == "cases" else search.report.holdout_file or ""
    sides = {live: search.base.sides[key], arm.label: arm.sides[key]}
    trials, min_z = search.measure.trials, search.report.min_z
    data = "" if key == "cases" else "held-out"
    report = measured(search.spec, live, arm.label, sides, chosen, where, trials, min_z, stopped, data)
    return report


def decide_cases(search: SearchState, proposal: Proposal, arm: Arm, stopped: str | None) -> None:
    """The proposal's outcome on the cases (``kept`` here stands until the held-out cases say more)."""
    report = _report(search, arm, "cases", stopped)
    arm.gates["cases"] = report
    proposal.cases = _figures(report)
    said = f"on the cases, {report.decision}"
    if report.outcome == "not measured":
        proposal.outcome, proposal.decision = "not measured", said
    elif report.outcome != "passed":
        proposal.outcome, proposal.decision = "discarded", said
    elif proposal.copied and not search.allow_overlap:
        first = proposal.copied[0]
        proposal.outcome = "discarded"
        proposal.decision = (
            f'it copies case {first.case_id!r} ({first.field}) word for word ("{first.words}"), so it may '
            "have memorized the cases rather than learned the task (allow_overlap keeps such a proposal); "
            + said
        )
    else:
        flagged = " (it copies a case, which was allowed)" if proposal.copied else ""
        proposal.outcome, proposal.decision = "kept", said + flagged


TOP = 1.0 - 1e-9
"""A mean this high is the maximum a run can score."""


def held(report: GateReport, live: str) -> tuple[GateOutcome, str]:
    """The held-out rule: the gate's own decision on the held-out cases (a gain by ``min_z`` standard
    errors, on enough cases), except where the live version already scores the maximum on every held-out
    run: then the candidate must score it too. Unmeasured or cut short, it does not hold."""
    if report.outcome == "not measured":
        return "not measured", report.decision
    if report.stopped:
        return "not passed", f"the held-out comparison stopped early ({report.stopped})"
    if report.diff is None or report.paired_cases == 0:
        return "not passed", "no held-out case has scored runs of both sides, so there is nothing to compare"
    change = f"{report.diff:+.3f} over {report.paired_cases} held-out cases"
    if report.diff < 0:
        return "not passed", (
            f"its held-out mean is lower than {live}'s ({change}): what it gained on the cases does not "
            "carry over to unseen ones"
        )
    top = report.before.mean is not None and report.before.mean >= TOP
    if top:
        return "passed", (
            f"{live} already scores the maximum on every held-out case, so no gain is possible there, and "
            f"the proposal keeps it ({change})"
        )
    if report.diff == 0:
        return "not passed", (
            f"its held-out mean is no higher than {live}'s ({change}): what it gained on the cases does "
            "not carry over to unseen ones, as a rewrite that memorized them would not"
        )
    return report.outcome, f"held out, {report.decision}"


def decide_holdout(search: SearchState, proposal: Proposal, arm: Arm, stopped: str | None) -> None:
    """The final outcome of a proposal that passed on the cases, from the held-out cases."""
    report = _report(search, arm, "holdout", stopped)
    outcome, why = held(report, search.live.label)
    arm.gates["holdout"] = report.model_copy(
        update={"outcome": outcome, "passed": outcome == "passed", "decision": why}
    )
    proposal.holdout = _figures(arm.gates["holdout"])
    proposal.decision += f"; {why}"
    if outcome == "not measured":
        proposal.outcome = "not measured"
    elif outcome != "passed":  # not passed, or not enough evidence
        proposal.outcome = "discarded"


def promising(proposal: Proposal, allow_overlap: bool) -> bool:
    """Whether a proposal may be built on: measured on the cases, not refused for copying them, and not
    refused by the held-out cases."""
    return (
        proposal.cases is not None
        and proposal.cases.outcome != "not measured"
        and (allow_overlap or not proposal.copied)
        and (proposal.holdout is None or proposal.holdout.outcome == "passed")
    )
