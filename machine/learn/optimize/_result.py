"""The end of a search: the cost of each part added up, and the best proposal kept (if one was) written
to instructions.md as a pending candidate with its report, its runs recorded under that version."""

from __future__ import annotations

from dataclasses import dataclass

from machine.versions import Candidate, write_candidate

from ._report import Cost, OptimizeReport, Proposal
from ._state import SearchState


@dataclass
class Optimization:
    """What ``optimize`` found, and the candidate it wrote when a proposal was kept (commit it, or
    revert it, like any candidate)."""

    report: OptimizeReport
    candidate: Candidate | None

    @property
    def kept(self) -> bool:
        return self.candidate is not None


def _costs(search: SearchState) -> None:
    total = Cost()
    for arm in search.arms.values():
        total.runs += arm.cost.runs
        total.judges += arm.cost.judges
    for proposal in (p for r in search.report.rounds for p in r.proposals):
        measured = search.arms.get(proposal.label)
        if measured is not None:
            proposal.cost.runs, proposal.cost.judges = measured.cost.runs, measured.cost.judges
            proposal.runs = list(measured.runs)
        total.optimizer += proposal.cost.optimizer
    search.report.cost = total


def _best(search: SearchState) -> Proposal | None:
    kept = [p for r in search.report.rounds for p in r.proposals if p.outcome == "kept"]
    if not kept:
        return None

    def rank(p: Proposal) -> tuple[float, float]:
        cases = p.cases.mean if p.cases and p.cases.mean is not None else 0.0
        holdout = p.holdout.mean if p.holdout and p.holdout.mean is not None else 0.0
        return cases, holdout

    return max(kept, key=rank)


def keep(search: SearchState) -> Optimization:
    """The search's result: the best proposal kept written as a pending candidate, or none."""
    _costs(search)
    for proposal in (p for r in search.report.rounds for p in r.proposals):
        if proposal.instructions is not None and proposal.outcome == "no proposal":
            proposal.outcome = "not measured"
            proposal.decision = "the search stopped before it was measured"
    report = search.report
    best = _best(search)
    if best is None or best.instructions is None:
        return Optimization(report, None)
    arm = search.arms[best.label]
    gate = arm.gates["cases"].model_copy(
        update={
            "outcome": "passed",
            "passed": True,
            "decision": f"{best.label} was kept: {best.decision}",
            "holdout": arm.gates.get("holdout"),
            "cost_usd": report.cost.total,
        }
    )
    first = best.explanation.strip().splitlines()[0][:120] if best.explanation.strip() else ""
    note = f"optimize {best.label}" + (f": {first}" if first else "")
    version = write_candidate(
        search.ws, report.machine, instructions=best.instructions, report=gate, note=note
    )
    if arm.spec.model == search.live.model:  # its runs are the candidate's as it would run live
        store = search.ws.store
        store.put_many(store.get(i).model_copy(update={"version": version.label}) for i in arm.runs)
    report.kept, report.candidate, report.diff = best.label, version.label, best.diff
    assert version.report is not None
    report.gate = version.report
    return Optimization(report, Candidate(version=version, report=version.report))
