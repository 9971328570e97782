"""Compare: the working tree's machine (B) against the same machine at a git revision (A), paired by case.

Both versions run on the same cases, interleaved (A and B alternate per case and trial) through the same
harness and model options, and BOTH are graded with the current rubric and evaluator: the comparison
measures the change in behaviour and nothing else. Every run is stored; A's with the ref's commit as its
revision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import computed_field

from machine.runs import Model, Run
from machine.spec import Case, Machine, machine_at
from machine.workspace import Workspace, converse

from ._options import MeasureOptions
from ._pool import BatchWriter
from ._side import Side
from ._tally import CaseResult, CriterionResult
from .stats import Paired, paired

EVIDENCE_Z = 2.0
"""A difference within about this many standard errors of zero is not evidence either way."""


class Plan(Model):
    """What is about to be compared: known before any run starts, so a front end can say it first."""

    machine: str
    ref: str
    commit: str
    changes: list[str]
    """What differs between A and B: instructions, model, tools, max_steps, rubric."""
    cases: int
    trials: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rubric_changed(self) -> bool:
        """Whether the rubric differs (both sides are graded with the current one)."""
        return "rubric" in self.changes

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unchanged(self) -> bool:
        """Whether nothing that decides behaviour or grading differs."""
        return not self.changes


class Comparison(Model):
    """A comparison's result: both sides, the paired difference B - A, and the verdict in words."""

    plan: Plan
    a: Side
    b: Side
    paired: Paired | None = None
    """None when no case has a scored run of both versions."""
    cost_usd: float = 0.0
    stopped: str | None = None
    """Why scheduling stopped early (the budget), or None."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def machine(self) -> str:
        """The machine compared."""
        return self.plan.machine

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ref(self) -> str:
        """The git revision A was read from, as given."""
        return self.plan.ref

    @computed_field  # type: ignore[prop-decorator]
    @property
    def commit(self) -> str:
        """The commit the ref named: A's revision."""
        return self.plan.commit

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rubric_changed(self) -> bool:
        """Whether the rubric differs between the two versions."""
        return self.plan.rubric_changed

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unchanged(self) -> bool:
        """Whether nothing that decides behaviour or grading differs."""
        return self.plan.unchanged

    @computed_field  # type: ignore[prop-decorator]
    @property
    def changes(self) -> list[str]:
        """What differs between A and B."""
        return list(self.plan.changes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def diff(self) -> float | None:
        """The mean over cases of B's per-case mean minus A's."""
        return None if self.paired is None else self.paired.diff

    @computed_field  # type: ignore[prop-decorator]
    @property
    def se(self) -> float | None:
        """The standard error of ``diff`` over cases."""
        return None if self.paired is None else self.paired.se

    @computed_field  # type: ignore[prop-decorator]
    @property
    def z(self) -> float | None:
        """``diff / se``; None when the standard error is 0 or too few cases were compared."""
        return None if self.paired is None else self.paired.z

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cases(self) -> int:
        """Cases with scored runs of both versions (the only ones compared)."""
        return 0 if self.paired is None else self.paired.cases

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unscored(self) -> int:
        """UNSCORED criterion grades of both sides."""
        return self.a.unscored + self.b.unscored

    @computed_field  # type: ignore[prop-decorator]
    @property
    def errors(self) -> int:
        """Failed runs of both sides."""
        return self.a.errors + self.b.errors

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unmeasured(self) -> dict[str, list[str]]:
        """Each criterion with no scored grade on a side, with the sides (``A``, ``B``)."""
        found: dict[str, list[str]] = {}
        for label, side in (("A", self.a), ("B", self.b)):
            for name in side.unmeasured:
                found.setdefault(name, []).append(label)
        return found

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> str:
        """The comparison in words, with what it is and is not evidence of. A criterion not measured on
        a side makes it "Not measured": the scores leave that criterion out, so they cannot say which
        version is better."""
        p, a, b = self.paired, f"A ({self.ref})", "B (the working tree)"
        if self.unmeasured:
            return _not_measured(self, a, b)
        if p is None or p.cases == 0:
            return "No case has a scored run of both versions, so there is nothing to compare."
        if p.cases < 2:
            return (
                "Only one case has scored runs of both versions, so the difference has no standard "
                "error and is not evidence that either version is better; compare on more cases."
            )
        if p.se == 0:
            if p.diff == 0:
                return "Every case scored the same under both versions: no difference at all."
            better = b if p.diff > 0 else a
            return (
                f"Every case moved by the same {p.diff:+.3f} (standard error 0): {better} scored "
                "higher on every case."
            )
        if abs(p.diff) < EVIDENCE_Z * p.se:
            return (
                "The difference is within about two standard errors of zero: it is not evidence that "
                "either version is better (run more cases or trials to tell)."
            )
        better, worse = (b, a) if p.diff > 0 else (a, b)
        return (
            f"The difference is {abs(p.diff) / p.se:.1f} standard errors from zero: evidence that "
            f"{better} scores higher than {worse}."
        )


def _not_measured(comparison: Comparison, a: str, b: str) -> str:
    sides = {"A": (a, comparison.a), "B": (b, comparison.b)}
    parts = []
    for name, labels in comparison.unmeasured.items():
        where = [
            f"{sides[label][0]} ({sides[label][1].criteria[name].unscored} UNSCORED)" for label in labels
        ]
        parts.append(f"criterion {name!r} has no scored grade on {' nor on '.join(where)}")
    return (
        f"Not measured: {'; '.join(parts)}. The scores leave out what was not graded, so they are not "
        "evidence that either version is better; make the grader score (the UNSCORED reasons say why) "
        "and compare again."
    )


def changes_between(a: Machine, b: Machine) -> list[str]:
    """What decides behaviour or grading and differs between the two versions."""
    changes = []
    if a.instructions != b.instructions:
        changes.append("instructions")
    if a.model != b.model:
        changes.append("model")
    if [t.name for t in a.tools] != [t.name for t in b.tools]:
        changes.append("tools")
    if a.max_steps != b.max_steps:
        changes.append("max_steps")
    if a.rubric.fingerprint != b.rubric.fingerprint:
        changes.append("rubric")
    return changes


async def compare(
    workspace: Workspace,
    name: str,
    options: MeasureOptions | None = None,
    *,
    ref: str = "HEAD",
    cases: str | Path | Sequence[Case] | None = None,
    model: str | None = None,
    on_run: Callable[[Run], None] | None = None,
    on_start: Callable[[Plan], None] | None = None,
    **fields: Any,
) -> Comparison:
    """Run the working tree's ``name`` (B) and ``name`` at ``ref`` (A) on the same cases (a cases file,
    default cases.json, or the cases), ``options.trials`` each (``options``, or its fields as keywords),
    interleaved; grade both with the current evaluator; store every run; compare them paired by case.
    ``on_start`` sees the plan before any run starts; ``on_run`` each finished run (A's record the ref's
    commit as their revision)."""
    o = MeasureOptions.of(options, **fields)
    trials = o.trials
    current = workspace.load(name)
    chosen = (
        list(cases)
        if cases is not None and not isinstance(cases, (str, Path))
        else workspace.cases(current, cases)
    )
    spent_before = workspace.budget.spent
    with machine_at(workspace.machines_dir, name, ref, trust=workspace.trust) as baseline:
        plan = Plan(
            machine=name,
            ref=ref,
            commit=baseline.commit,
            changes=changes_between(baseline.machine, current),
            cases=len(chosen),
            trials=trials,
        )
        if on_start is not None:
            on_start(plan)
        comparison = Comparison(
            plan=plan,
            a=_side(ref, baseline.commit, chosen, current),
            b=_side("working tree", workspace.revision, chosen, current),
        )
        versions = ((comparison.a, baseline.machine), (comparison.b, current))
        jobs = [
            (side, spec, case, trial) for trial in range(trials) for case in chosen for side, spec in versions
        ]
        comparison.stopped = await _run(workspace, jobs, current, o.concurrency, model, o.pass_score, on_run)
    comparison.cost_usd = workspace.budget.spent - spent_before
    a_scores, b_scores = comparison.a.scores, comparison.b.scores
    if any(a_scores[c] and b_scores[c] for c in a_scores):
        comparison.paired = paired(a_scores, b_scores)
    return comparison


def _side(label: str, revision: str | None, cases: list[Case], current: Machine) -> Side:
    """An empty side: every case, and every criterion of the current rubric (each graded by it)."""
    return Side(
        label=label,
        revision=revision,
        cases={c.id: CaseResult(case_id=c.id) for c in cases},
        criteria={name: CriterionResult() for name in current.rubric},
    )


async def _run(
    workspace: Workspace,
    jobs: list[tuple[Side, Machine, Case, int]],
    current: Machine,
    concurrency: int,
    model: str | None,
    pass_score: float,
    on_run: Callable[[Run], None] | None,
) -> str | None:
    """Every (version, case, trial), tallied on its side as it finishes; why it stopped early, if it did."""
    writer = BatchWriter(workspace.store)

    async def one(job: tuple[Side, Machine, Case, int]) -> str | None:
        side, spec, case, trial = job
        run, turns, stopped = await _version_run(
            workspace, side, spec, current, case, trial, model, pass_score
        )
        if run is not None:
            side.add(case.id, run)
        writer.add(turns)
        if on_run is not None and run is not None:
            on_run(run)
        return stopped

    return await writer.run(jobs, one, concurrency=concurrency)


async def _version_run(
    workspace: Workspace,
    side: Side,
    spec: Machine,
    current: Machine,
    case: Case,
    trial: int,
    model: str | None,
    pass_score: float,
) -> tuple[Run | None, list[Run], str | None]:
    """Run one (version, case, trial), stamp its revision, and grade it with the CURRENT machine: its
    result run, every turn to store, and the budget's word if it cut a conversation short."""
    stopped = None
    if spec.counterpart is not None:  # a case is a whole conversation; its machine's last turn counts
        conversation = await converse(
            workspace, spec, case, trial=trial, model=model, grade=False, store=False
        )
        stopped = conversation.stopped
        turns = [t.model_copy(update={"revision": side.revision}) for t in conversation.turns]
        result = conversation.result
        index = next((i for i, t in enumerate(turns) if result and t.id == result.id), None)
    else:
        run = await workspace.run(spec, case.input, case=case, trial=trial, model=model, store=False)
        turns, index = [run.model_copy(update={"revision": side.revision})], 0
    if index is None:
        return None, turns, stopped
    if turns[index].status == "ok":
        turns[index] = await workspace.grade(turns[index], current, pass_score=pass_score, store=False)
    return turns[index], turns, stopped
