"""Arms: the machine with one set of its own instructions (the live version's, or a proposal's), measured
on a set of cases with trials. The live version's stored graded runs are reused (graded again when the
rubric changed since), so it is never paid twice; a proposal's runs are all new, and kept by case so the
optimizer can be shown them in the next round."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from machine.measure import BatchWriter
from machine.runs import Run
from machine.spec import Case, GateReport, Machine
from machine.versions import Job, SideTally, empty_tally, plan_runs
from machine.workspace import Workspace

from ._report import Calls, Cost


def with_instructions(spec: Machine, own: str) -> Machine:
    """``spec`` with ``own`` as its own instructions; a child's still follow its parent's, unchanged."""
    own = own.strip()
    whole = spec.parent.instructions + ("\n\n" + own if own else "") if spec.parent is not None else own
    return replace(spec, instructions=whole, own_instructions=own)


@dataclass
class Arm:
    """One set of instructions and what was measured of it, per cases file (``cases``, ``holdout``)."""

    label: str
    spec: Machine
    sides: dict[str, SideTally] = field(default_factory=dict)
    graded: dict[str, list[Run]] = field(default_factory=dict)
    """Its finished runs on the cases it may be shown from, by case id."""
    runs: list[str] = field(default_factory=list)
    """The ids of the runs made for it."""
    cost: Cost = field(default_factory=Cost)
    gates: dict[str, GateReport] = field(default_factory=dict)
    """What was decided of it against the live version, per cases file."""

    @property
    def own(self) -> str:
        return self.spec.own_instructions


@dataclass
class Measure:
    """Where arms are measured: the workspace, the machine, and how."""

    ws: Workspace
    name: str
    trials: int
    concurrency: int
    pass_score: float
    calls: Calls
    live: str
    """The live version's label: its arm's stored runs may be reused."""
    on_run: Callable[[Run], None] | None = None

    async def __call__(self, arms: Sequence[Arm], key: str, cases: list[Case]) -> str | None:
        """Measure each arm not yet measured on ``key`` on ``cases``; why it stopped early, if it did."""
        todo = [arm for arm in arms if key not in arm.sides]
        if not todo:
            return None
        harness = self.ws.harness
        sides = {
            arm.label: arm.sides.setdefault(key, empty_tally(arm.label, arm.spec.model, harness))
            for arm in todo
        }
        by_label = {arm.label: arm for arm in todo}

        def reused(run: Run) -> None:
            if key == "cases":
                by_label[run.version or ""].graded.setdefault(run.case_id or "", []).append(run)

        jobs = plan_runs(
            self.ws, self.name, cases, sides, self.trials, self.pass_score, reused, live=self.live
        )
        self.calls.reused += sum(side.figures.reused for side in sides.values())
        writer = BatchWriter(self.ws.store)

        async def one(job: Job) -> None:
            label, case, trial, old = job
            arm = by_label[label]
            run = await self._made(arm, case, trial, old)
            arm.sides[key].add(run, how="regraded" if old is not None else "new", pass_score=self.pass_score)
            if key == "cases":
                arm.graded.setdefault(case.id, []).append(run)
            writer.add([run])
            if self.on_run is not None:
                self.on_run(run)

        return await writer.run(jobs, one, concurrency=self.concurrency)

    async def _made(self, arm: Arm, case: Case, trial: int, old: Run | None) -> Run:
        """The run of ``arm`` on ``case`` (or the stored ``old`` one graded again), graded, its cost
        counted by part."""
        ws = self.ws
        if old is not None:
            run = await ws.grade(old, arm.spec, pass_score=self.pass_score, store=False)
            self.calls.regraded += 1
        else:
            run = await ws.run(arm.spec, case.input, case=case, trial=trial, store=False)
            self.calls.new += 1
            self.calls.live_new += arm.label == self.live
            arm.runs.append(run.id)
            arm.cost.runs += run.cost_usd
            if run.status == "ok":
                run = await ws.grade(run, arm.spec, pass_score=self.pass_score, store=False)
        if run.scorecard is not None:
            arm.cost.judges += run.scorecard.cost_usd
        return run
