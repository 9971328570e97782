"""Optimize: a search over rewrites of a machine's own instructions. Each round asks the optimizer
machine for proposals from the best instructions so far, each shown a different sample of the failures;
every proposal is measured on the cases, and one is kept only when the measurement says so: the
promotion gate's paired gain over the live version (``min_z`` standard errors, on enough cases that
changed) on the cases and again on the held-out cases (never shown to the optimizer; where the live
version already scores the maximum there, the proposal must keep it), nothing unmeasured, and no case
copied into it. The best one kept is written to instructions.md as a pending candidate, left for the
person to accept."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from machine.errors import BudgetExceeded, plain_spelling
from machine.runs import Run
from machine.workspace import Workspace

from .._helper_model import INSTRUCTIONS_FORM, check_helper_model
from ._ask import ask
from ._brief import brief
from ._decide import decide_cases, decide_holdout, promising
from ._inputs import Chosen, cases_of, checked_cases, checked_machine, holdout_of, no_holdout
from ._measured_instructions import Arm, Measure, with_instructions
from ._options import OptimizeOptions
from ._overlap import overlaps
from ._plan import thin_warnings
from ._report import Calls, Copied, OptimizeReport, Proposal, Round
from ._result import Optimization, keep
from ._shown_cases import examples, samples
from ._state import SearchState

OPTIMIZER = "optimizer"
SHOWN = 4
"""Failures each proposal is shown."""
PASSES_SHOWN = 2
"""Passing runs each proposal is shown beside its failures."""


class Search(SearchState):
    """One optimize call: its rounds, over the state its decisions and its result read."""

    async def run(self, rounds: int) -> None:
        self.arms[self.live.label] = Arm(self.live.label, self.spec)
        if await self._stop_at("measuring the live version on the cases", self.base, "cases"):
            return
        self.report.live_cases_mean = _mean(self.base, "cases")
        parent = self.base
        for number in range(1, rounds + 1):
            ended = await self._round(number, parent)
            if ended:
                self.report.ended = ended
                return
            parent = self._next_parent(parent)
        self.report.ended = "the round was done" if rounds == 1 else f"all {rounds} rounds were done"

    async def _stop_at(self, where: str, arm: Arm, key: str) -> bool:
        """Measure ``arm`` on ``key``; True (with where and why kept) when refused work stopped it."""
        cases = self.cases if key == "cases" else self.holdout or []
        stopped = await self.measure([arm], key, cases)
        if stopped:
            self.report.stopped = f"{where}: {stopped}"
            self.report.ended = "stopped early"
        return stopped is not None

    async def _round(self, number: int, parent: Arm) -> str | None:
        """One round; why the search ends here, if it does."""
        failing, passing = examples(parent.graded, self.cases, self.measure.pass_score)
        if not failing and not passing:
            reasons = parent.sides["cases"].criteria_reasons
            said = next((f" (criterion {c!r}: {r[0]})" for c, r in reasons.items() if r), "")
            return (
                f"no run of {parent.label} on the cases was scored, so there is nothing to learn from{said}"
            )
        if not failing:
            return f"{parent.label} passed every trial of every case: nothing left to learn from"
        round_ = Round(number=number, parent=parent.label)
        self.report.rounds.append(round_)
        dealt = samples(
            failing,
            passing,
            self.candidates,
            shown=self.shown,
            passes_shown=self.passes_shown,
            seed=f"{self.seed}:{number}",
        )
        for index, (sample, good) in enumerate(dealt, start=1):
            proposal = Proposal(label=f"r{number}.p{index}", round=number, parent=parent.label)
            proposal.shown = [e.case.id for e in sample]
            round_.proposals.append(proposal)
            try:
                await ask(
                    self.ws,
                    self.optimizer,
                    self.optimizer_model,
                    brief(self.spec, parent.own, sample, good),
                    proposal,
                    self.report.calls,
                )
            except BudgetExceeded as refused:
                proposal.decision = "the budget refused the optimizer's call"
                return self._refused(f"round {number}, asking for {proposal.label}", refused)
        return await self._measure_round(round_)

    def _refused(self, where: str, refused: BudgetExceeded) -> str:
        self.report.stopped = f"{where}: {refused.explain(plain_spelling)}"
        return "stopped early"

    async def _measure_round(self, round_: Round) -> str | None:
        asked = round_.proposals
        fresh = [p for p in asked if p.instructions is not None and self._fresh(p, asked)]
        if not round_.proposals or all(p.instructions is None for p in round_.proposals):
            return f"round {round_.number} has no proposal: {round_.proposals[-1].decision}"
        for p in fresh:
            assert p.instructions is not None
            p.diff = _diff(self.live.label, p.label, self.spec.own_instructions, p.instructions)
            known = [self.spec.intent, self.spec.own_instructions]
            p.copied = [Copied(**vars(o)) for o in overlaps(p.instructions, self.cases, known=known)]
            self.arms[p.label] = Arm(p.label, with_instructions(self.spec, p.instructions))
        arms = [self.arms[p.label] for p in fresh]
        stopped = await self.measure(arms, "cases", self.cases)
        for p in fresh:
            decide_cases(self, p, self.arms[p.label], stopped)
        if stopped:
            self.report.stopped = f"round {round_.number}, measuring its proposals on the cases: {stopped}"
            return "stopped early"
        return await self._held_out(round_, [p for p in fresh if p.outcome == "kept"])

    def _fresh(self, proposal: Proposal, others: Sequence[Proposal]) -> bool:
        """Whether the proposal differs from the live instructions, from every proposal measured before
        and from the proposals of its round before it."""
        text = (proposal.instructions or "").strip()
        earlier = [(arm.label, arm.own) for arm in self.arms.values()]
        earlier += [(p.label, p.instructions or "") for p in others[: others.index(proposal)]]
        for label, own in earlier:
            if own.strip() == text:
                proposal.outcome = "discarded"
                proposal.decision = f"the same instructions as {label}, so it is not measured again"
                return False
        return True

    async def _held_out(self, round_: Round, passed: list[Proposal]) -> str | None:
        """The proposals that passed on the cases, measured on the held-out cases (and the live version,
        its stored runs reused); without a held-out file they stand as they are."""
        if not passed or self.holdout is None:
            return None
        arms = [self.base, *(self.arms[p.label] for p in passed)]
        stopped = await self.measure(arms, "holdout", self.holdout)
        self.report.live_holdout_mean = _mean(self.base, "holdout")
        for p in passed:
            decide_holdout(self, p, self.arms[p.label], stopped)
        if stopped:
            self.report.stopped = f"round {round_.number}, measuring on the held-out cases: {stopped}"
            return "stopped early"
        return None

    def _next_parent(self, parent: Arm) -> Arm:
        """The best instructions so far to build on: the best proposal kept, else the best that beat the
        parent on the cases and was not refused for copying or for the held-out cases."""
        proposals = [p for r in self.report.rounds for p in r.proposals if promising(p, self.allow_overlap)]
        if not proposals:
            return parent
        kept = [p for p in proposals if p.outcome == "kept"]
        best = max(kept or proposals, key=lambda p: p.cases.mean if p.cases and p.cases.mean else 0.0)
        mean = best.cases.mean if best.cases else None
        ahead = _mean(parent, "cases")
        if best.outcome != "kept" and (mean is None or ahead is None or mean <= ahead):
            return parent
        return self.arms[best.label]


def _mean(arm: Arm, key: str) -> float | None:
    side = arm.sides[key]
    side.finish()
    return side.figures.mean


def _diff(before_label: str, after_label: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.strip().splitlines(), after.strip().splitlines(), before_label, after_label, lineterm=""
    )
    return "\n".join(lines)


async def optimize(
    ws: Workspace,
    name: str,
    options: OptimizeOptions | None = None,
    *,
    on_run: Callable[[Run], None] | None = None,
    **fields: Any,
) -> Optimization:
    """Search for better own instructions of machine ``name`` (see the module's docstring), with
    ``options`` (or its fields given as keywords). Returns the report and, when a proposal was kept, its
    pending candidate (written to instructions.md). ``model`` measures the machine on another model than
    its live version's (its stored runs then do not count)."""
    o = OptimizeOptions.of(options, **fields)
    taught, withheld = cases_of(ws, name, o.cases), holdout_of(ws, name, o.holdout)
    checked_cases(ws, name, taught, withheld)  # before the machine's versions are first recorded
    chosen, held = taught.cases, None if withheld is None else withheld.cases
    spec, live = checked_machine(ws, name)
    if o.model and o.model.strip() != spec.model:
        spec = replace(spec, model=o.model.strip())
    optimizer = ws.load(OPTIMIZER)
    opt_model = (o.optimizer_model or "").strip() or optimizer.model
    # before the live version is measured
    await check_helper_model(ws, optimizer, opt_model, "optimizer_model", INSTRUCTIONS_FORM, spec)
    report = _report(name, o, live.label, optimizer.name, opt_model, spec.model, taught, withheld)
    measure = Measure(ws, name, o.trials, o.concurrency, o.pass_score, report.calls, live.label, on_run)
    search = Search(
        ws,
        spec,
        live,
        optimizer,
        opt_model,
        chosen,
        held,
        measure,
        report,
        o.candidates,
        SHOWN,
        PASSES_SHOWN,
        o.allow_overlap,
        o.seed,
    )
    await search.run(o.rounds)
    return keep(search)


def _report(
    name: str,
    o: OptimizeOptions,
    live: str,
    optimizer: str,
    opt_model: str,
    model: str,
    taught: Chosen,
    withheld: Chosen | None,
) -> OptimizeReport:
    """The report a search fills in, begun with what was asked and warned as the plan was."""
    report = OptimizeReport(
        machine=name,
        live=live,
        optimizer=optimizer,
        optimizer_model=opt_model,
        model=model,
        cases_file=taught.label,
        cases=len(taught.cases),
        holdout_file=None if withheld is None else withheld.label,
        holdout_cases=0 if withheld is None else len(withheld.cases),
        trials=o.trials,
        rounds_asked=o.rounds,
        candidates=o.candidates,
        min_z=o.min_z,
        allow_overlap=o.allow_overlap,
        calls=Calls(),
    )
    if withheld is None:
        report.warnings.append(no_holdout(name))
    report.warnings += thin_warnings(taught, withheld, o.min_z)  # as the plan said before the call
    return report
