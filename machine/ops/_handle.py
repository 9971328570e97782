"""The SDK handle: one machine of a workspace, and what can be done with it from code.

``machine.load("dev")`` gives a handle whose methods are the operations the ``machine`` command and the
MCP server call too:

    dev = machine.load("dev")
    async for message in dev.run("The tests fail. Fix calc.py.", files={"calc.py": ...}):
        if message.type == "tool_call":
            print("->", message.name)
    run = await dev.run("What does calc.py do?")       # or await it for the finished run
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from machine.budget import LOCAL, Budget
from machine.errors import BadInputError
from machine.learn import (
    ChooseSource,
    Optimization,
    OptimizeOptions,
    Options,
    Plan,
    RubricDraft,
    Specialization,
    SpecializeOptions,
    TrainingCheck,
    TrainOptions,
    check_training,
    draft_rubric,
    optimize,
    specialize,
)
from machine.learn import train as train_machine
from machine.learn.specialize import DraftRubricOptions
from machine.learn.train import pending as pending_runs
from machine.measure import Comparison, MeasureOptions, SuiteReport, compare
from machine.runs import Approver, Effort, Harness, Run
from machine.spec import DEFAULT_MIN_Z, Case, Machine, Version
from machine.training import Trainer
from machine.versions import Candidate
from machine.versions import commit as commit_version
from machine.versions import propose as propose_version
from machine.versions import revert as revert_version
from machine.versions import update as update_version
from machine.versions import versions as list_versions
from machine.workspace import Workspace

from ._compose import harness_for, open_workspace
from ._plans import plan_learning
from ._policy import SpendingPolicy
from ._session import RunStream, Session
from ._spend import Spend
from ._spending_log import WorkspaceSpendingLog
from ._suite import plan_suite, run_planned

T = TypeVar("T")


class MachineHandle:
    """One machine of a workspace, with what can be done with it: run, talk, grade, measure, version."""

    def __init__(self, workspace: Workspace, name: str) -> None:
        self.workspace = workspace
        self.name = name
        self.spec: Machine = workspace.load(name)

    def __repr__(self) -> str:
        return f"<machine {self.name} in {self.workspace.root}>"

    async def _spending(self, operation: str, work: Awaitable[T]) -> T:
        """``work`` as one spending call: the caller's own code consented, and the spending log gets its
        line (what the call spent from the handle's budget) as for a command or a tool."""
        policy = SpendingPolicy.from_env(log=WorkspaceSpendingLog(self.workspace))
        spend = Spend.by_code(policy, self.workspace.budget, operation=operation, machine=self.name)
        try:
            done = await work
        except BaseException:
            spend.settle(finished=False)
            raise
        spend.settle()
        return done

    def run(
        self,
        input: str,
        *,
        files: Mapping[str, str] | None = None,
        model: str | None = None,
        grade: bool = False,
        cwd: str | Path | None = None,
        approver: Approver | None = None,
    ) -> RunStream:
        """Run once on ``input`` (in a fresh sandbox seeded with ``files``, or in the folder ``cwd``);
        ``approver`` approves the calls of its tools that spend or change (None: they are refused)."""
        options: dict[str, Any] = {"model": model, "grade": grade, "files": files, "approver": approver}
        if cwd is not None:
            options["workdir"] = Path(cwd)
        return RunStream(self, input, options)

    def session(
        self, *, auto_grade: bool = False, cwd: str | Path | None = None, approver: Approver | None = None
    ) -> Session:
        """A conversation with the machine (in the folder ``cwd``, else a fresh sandbox per exchange);
        ``approver`` approves the calls of its tools that spend or change (None: they are refused)."""
        folder = None if cwd is None else Path(cwd).resolve()
        return Session(self.workspace, self.spec, auto_grade=auto_grade, cwd=folder, approver=approver)

    async def grade(self, *, limit: int | None = None) -> list[Run]:
        """Grade the stored runs never graded, or graded under an older rubric; returns them graded."""
        due = self.pending()[:limit]
        return await self._spending("grade", self._graded(due))

    async def _graded(self, runs: list[Run]) -> list[Run]:
        return [await self.workspace.grade(run, self.spec) for run in runs]

    def pending(self) -> list[Run]:
        """The stored runs due for grading (never graded, or under an older rubric)."""
        return pending_runs(self.workspace, self.spec)

    async def suite(
        self,
        options: MeasureOptions | None = None,
        *,
        cases: str | Path | list[Case] | None = None,
        model: str | None = None,
        **fields: Any,
    ) -> SuiteReport:
        """The machine's suite (its cases.json, another cases file, or the cases given), as ``machine
        suite`` plans and runs it, measured as ``options`` (a ``MeasureOptions``, or its fields as
        keywords: ``trials=3, concurrency=4, pass_score=1.0``) say."""
        plan = plan_suite(self.workspace, self.name, options, cases=cases, model=model, **fields)
        return await self._spending("suite", run_planned(self.workspace, plan))

    async def compare(
        self,
        options: MeasureOptions | None = None,
        *,
        ref: str = "HEAD",
        cases: str | Path | None = None,
        model: str | None = None,
        **fields: Any,
    ) -> Comparison:
        """The working tree against the machine at git revision ``ref``, as ``machine compare`` runs it,
        measured as ``options`` (a ``MeasureOptions``, or its fields as keywords) say."""
        work = compare(self.workspace, self.name, options, ref=ref, cases=cases, model=model, **fields)
        return await self._spending("compare", work)

    def versions(self) -> list[Version]:
        """The machine's versions (the first call records the current machine as v1)."""
        return list_versions(self.workspace, self.name)

    async def propose(
        self,
        options: MeasureOptions | None = None,
        *,
        model: str,
        cases: str | Path | None = None,
        min_z: float = DEFAULT_MIN_Z,
        base_model: str | None = None,
        note: str = "",
        allow_weak_gate: bool = False,
        **fields: Any,
    ) -> Candidate:
        """A pending candidate on ``model``, measured against the live version on held-out cases as
        ``options`` (a ``MeasureOptions``, or its fields as keywords; 3 trials unless they say) say;
        the machine's files stay as they are until ``commit``. A ``min_z`` below 1 is refused unless
        ``allow_weak_gate``."""
        work = propose_version(
            self.workspace,
            self.name,
            options,
            model=model,
            cases=cases,
            min_z=min_z,
            base_model=base_model,
            note=note,
            allow_weak_gate=allow_weak_gate,
            **fields,
        )
        return await self._spending("propose", work)

    async def optimize(
        self,
        options: OptimizeOptions | None = None,
        *,
        on_run: Callable[[Run], None] | None = None,
        **fields: Any,
    ) -> Optimization:
        """Search for better instructions with the optimizer machine, as ``machine optimize`` does, with
        ``options`` (an ``OptimizeOptions``, or its fields as keywords: ``trials=2, candidates=1``). A
        kept rewrite is written to instructions.md as ``result.candidate``, pending: ``commit`` makes it
        live (CommitRefused unless it passed), ``revert`` takes it back out of the files."""
        work = optimize(self.workspace, self.name, options, on_run=on_run, **fields)
        result = await self._spending("optimize", work)
        self.spec = self.workspace.reload(self.name)  # the files may hold the candidate now
        return result

    async def specialize(self, options: SpecializeOptions | None = None, **fields: Any) -> Specialization:
        """Have the author machine write a child of this machine for ``focus`` and the cases to rehearse it
        on, as ``machine specialize`` does, with ``options`` (a ``SpecializeOptions``, or its fields as
        keywords: ``focus="dates", cases=8``); ``machine.load(report.child)`` then loads it. Nothing it
        wrote is committed."""
        return await self._spending("specialize", specialize(self.workspace, self.name, options, **fields))

    async def draft_rubric(self, options: DraftRubricOptions | None = None, **fields: Any) -> RubricDraft:
        """Have the author machine draft a rubric for this machine, as ``machine draft-rubric`` does (with
        ``options``, or its fields as keywords): written beside it as rubric_draft.py, for you to adopt by
        hand."""
        work = draft_rubric(self.workspace, self.name, options, **fields)
        return await self._spending("draft-rubric", work)

    async def train(
        self,
        options: TrainOptions | None = None,
        *,
        trainer: Trainer | str | None = None,
        choose_source: ChooseSource | None = None,
        **fields: Any,
    ) -> Candidate:
        """Fine-tune the model on the good runs, as ``machine train`` does, with ``options`` (a
        ``TrainOptions``, or its fields as keywords: ``samples=4, epochs=2, lr=1e-4``): a pending
        candidate measured on the held-out cases; ``commit`` makes it live only if it passed. ``trainer``
        is one, or its name (default: the one for the model); ``choose_source`` is asked which source to
        learn from when ``any_model`` selects runs of several (without it, that is refused)."""
        work = train_machine(
            self.workspace,
            self.name,
            options,
            trainer=trainer,
            choose_source=choose_source,
            **fields,
        )
        return await self._spending("train", work)

    async def check_training(
        self,
        options: TrainOptions | None = None,
        *,
        smoke: bool = False,
        trainer: Trainer | str | None = None,
        **fields: Any,
    ) -> TrainingCheck:
        """The plan ``train`` would follow with these options, spending and writing nothing (``machine
        train --dry-run``); with ``smoke``, two steps of it trained end to end, the checkpoint sampled once,
        and all of it discarded (``--smoke``: on Tinker the steps cost, under this handle's budget)."""
        work = check_training(
            self.workspace,
            self.name,
            options,
            smoke=smoke,
            trainer=trainer,
            **fields,
        )
        return await (self._spending("train", work) if smoke else work)

    def plan(self, operation: str, options: Options | None = None, **fields: Any) -> Plan:
        """What a learning call (``"optimize"``, ``"train"``, ``"propose"``, ``"specialize"``,
        ``"draft-rubric"``) with these options would do at most, before anything is spent: its runs, steps
        and price bound, and its ``warnings`` (held-out cases too few for the gate to pass anything)."""
        return plan_learning(self.workspace, operation, self.name, options, **fields)

    def commit(self, *, force: bool = False, harness: str | None = None) -> Version:
        """Make the newest pending candidate live; raises CommitRefused unless it passed the gate (one
        not measured, or with too little evidence, did not) on the harness and model it will run on
        (``harness``, default: this workspace's)."""
        return self._reloaded(commit_version(self.workspace, self.name, force=force, harness=harness))

    def revert(self, *, to: str | int | None = None) -> Version:
        """Make the version live before the live one (or ``to``) live again, writing back its files
        exactly; reverting again steps further back along the live history."""
        return self._reloaded(revert_version(self.workspace, self.name, to=to))

    def update(
        self,
        *,
        instructions: str | None = None,
        model: str | None = None,
        base_model: str | None = None,
        note: str = "",
    ) -> Version:
        """Record a new live version by hand: write its instructions and/or model."""
        version = update_version(
            self.workspace,
            self.name,
            instructions=instructions,
            model=model,
            base_model=base_model,
            note=note,
        )
        return self._reloaded(version)

    def _reloaded(self, version: Version) -> Version:
        self.spec = self.workspace.load(self.name)  # the files changed: later runs use them
        return version


def load(
    name: str,
    *,
    workspace: str | Path | Workspace | None = None,
    harness: Harness | str | None = None,
    script: str | Path | None = None,
    base_url: str | None = None,
    budget: Budget | float | None = None,
    effort: str | Effort | None = None,
    judge_model: str | None = None,
    judge_effort: str | Effort | None = None,
) -> MachineHandle:
    """The machine ``name`` of ``workspace`` (default: ``MACHINE_WORKSPACE``, else the current folder),
    with what the command line takes: a harness (``script`` for the scripted one, ``base_url`` for an
    endpoint), a budget, the reasoning effort, the judges' model and effort. With no harness named, a
    machine whose model is ``local:...`` runs on the local harness (unless ``MACHINE_HARNESS`` says
    otherwise), as on the command line. A ``Workspace`` given whole carries its own settings: any other
    argument beside it is refused, not ignored."""
    if isinstance(workspace, Workspace):
        given: dict[str, object] = {
            "harness": harness,
            "script": script,
            "base_url": base_url,
            "budget": budget,
            "effort": effort,
            "judge_model": judge_model,
            "judge_effort": judge_effort,
        }
        ignored = [key for key, value in given.items() if value is not None]
        if ignored:
            raise BadInputError(
                f"load() was given a Workspace, which carries its own settings, and {', '.join(ignored)} "
                "beside it would be ignored: pass workspace as a folder with them, or set them on the "
                "Workspace (workspace.using(harness=..., budget=...))"
            )
        return MachineHandle(workspace, name)
    opened = open_workspace(
        workspace,
        harness=harness,
        script=script,
        base_url=base_url,
        budget=budget,
        effort=effort,
        judge_model=judge_model,
        judge_effort=judge_effort,
    )
    handle = MachineHandle(opened, name)
    if harness is None and handle.spec.model.startswith(LOCAL):  # else the default, made on first use
        handle.workspace = handle.workspace.using(harness=harness_for(handle.workspace, name))
    return handle
