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

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from machine.learn import (
    Optimization,
    RubricDraft,
    Specialization,
    Trainer,
    TrainSettings,
    draft_rubric,
    optimize,
    specialize,
)
from machine.learn import train as train_machine
from machine.learn._sampling import pending as pending_runs
from machine.measure import Comparison, SuiteReport, compare
from machine.runs import LOCAL, Budget, Harness, Run
from machine.spec import Case, Machine, Version
from machine.versions import Candidate
from machine.versions import commit as commit_version
from machine.versions import propose as propose_version
from machine.versions import revert as revert_version
from machine.versions import update as update_version
from machine.versions import versions as list_versions
from machine.workspace import Workspace

from ._compose import make_harness, make_trainer, open_workspace
from ._session import RunStream, Session
from ._suite import plan_suite, run_planned


class MachineHandle:
    """One machine of a workspace, with what can be done with it: run, talk, grade, measure, version."""

    def __init__(self, workspace: Workspace, name: str) -> None:
        self.workspace = workspace
        self.name = name
        self.spec: Machine = workspace.load(name)

    def __repr__(self) -> str:
        return f"<machine {self.name} in {self.workspace.root}>"

    def run(
        self,
        input: str,
        *,
        files: Mapping[str, str] | None = None,
        model: str | None = None,
        grade: bool = False,
        cwd: str | Path | None = None,
    ) -> RunStream:
        """Run once on ``input`` (in a fresh sandbox seeded with ``files``, or in the folder ``cwd``)."""
        options: dict[str, Any] = {"model": model, "grade": grade, "files": files}
        if cwd is not None:
            options["workdir"] = Path(cwd)
        return RunStream(self, input, options)

    def session(self, *, auto_grade: bool = False, cwd: str | Path | None = None) -> Session:
        """A conversation with the machine (in the folder ``cwd``, else a fresh sandbox per exchange)."""
        folder = None if cwd is None else Path(cwd).resolve()
        return Session(self.workspace, self.spec, auto_grade=auto_grade, cwd=folder)

    async def grade(self, *, limit: int | None = None) -> list[Run]:
        """Grade the stored runs never graded, or graded under an older rubric; returns them graded."""
        due = self.pending()
        return [await self.workspace.grade(run, self.spec) for run in due[:limit]]

    def pending(self) -> list[Run]:
        """The stored runs due for grading (never graded, or under an older rubric)."""
        return pending_runs(self.workspace, self.spec)

    async def suite(
        self,
        *,
        cases: str | Path | list[Case] | None = None,
        trials: int = 1,
        concurrency: int = 4,
        pass_score: float = 1.0,
        model: str | None = None,
    ) -> SuiteReport:
        """The machine's suite (its cases.json, another cases file, or the cases given), as ``machine
        suite`` plans and runs it."""
        plan = plan_suite(
            self.workspace,
            self.name,
            cases=cases,
            trials=trials,
            model=model,
            concurrency=concurrency,
            pass_score=pass_score,
        )
        return await run_planned(self.workspace, plan)

    async def compare(
        self,
        *,
        ref: str = "HEAD",
        cases: str | Path | None = None,
        trials: int = 1,
        concurrency: int = 4,
        pass_score: float = 1.0,
        model: str | None = None,
    ) -> Comparison:
        """The working tree against the machine at git revision ``ref``, as ``machine compare`` runs it."""
        return await compare(
            self.workspace,
            self.name,
            ref=ref,
            cases=cases,
            trials=trials,
            concurrency=concurrency,
            pass_score=pass_score,
            model=model,
        )

    def versions(self) -> list[Version]:
        """The machine's versions (the first call records the current machine as v1)."""
        return list_versions(self.workspace, self.name)

    async def propose(
        self,
        *,
        model: str,
        trials: int = 3,
        cases: str | Path | None = None,
        min_z: float = 2.0,
        base_model: str | None = None,
        note: str = "",
    ) -> Candidate:
        """A pending candidate on ``model``, measured against the live version on held-out cases;
        the machine's files stay as they are until ``commit``."""
        return await propose_version(
            self.workspace,
            self.name,
            model=model,
            trials=trials,
            cases=cases,
            min_z=min_z,
            base_model=base_model,
            note=note,
        )

    async def optimize(
        self,
        *,
        trials: int = 3,
        rounds: int = 2,
        candidates: int = 2,
        min_z: float = 2.0,
        cases: str | Path | list[Case] | None = None,
        holdout: str | Path | list[Case] | None = None,
        optimizer_model: str | None = None,
        allow_overlap: bool = False,
        concurrency: int = 4,
        pass_score: float = 1.0,
        model: str | None = None,
        seed: int = 0,
        on_run: Callable[[Run], None] | None = None,
    ) -> Optimization:
        """Search for better instructions with the optimizer machine, as ``machine optimize`` does. A
        kept rewrite is written to instructions.md as ``result.candidate``, pending: ``commit`` makes it
        live (CommitRefused unless it passed), ``revert`` takes it back out of the files."""
        result = await optimize(
            self.workspace,
            self.name,
            trials=trials,
            rounds=rounds,
            candidates=candidates,
            min_z=min_z,
            cases=cases,
            holdout=holdout,
            optimizer_model=optimizer_model,
            allow_overlap=allow_overlap,
            concurrency=concurrency,
            pass_score=pass_score,
            model=model,
            seed=seed,
            on_run=on_run,
        )
        self.spec = self.workspace.reload(self.name)  # the files may hold the candidate now
        return result

    async def specialize(
        self,
        *,
        focus: str,
        slug: str | None = None,
        model: str | None = None,
        author_model: str | None = None,
        cases: int = 12,
        holdout_share: float = 0.25,
        retries: int = 2,
        reuse_cases: bool = False,
        timeout_s: float = 60.0,
    ) -> Specialization:
        """Have the author machine write a child of this machine for ``focus`` and the cases to rehearse it
        on, as ``machine specialize`` does; ``machine.load(report.child)`` then loads it. Nothing it wrote
        is committed."""
        return await specialize(
            self.workspace,
            self.name,
            focus=focus,
            slug=slug,
            model=model,
            author_model=author_model,
            cases=cases,
            holdout_share=holdout_share,
            retries=retries,
            reuse_cases=reuse_cases,
            timeout_s=timeout_s,
        )

    async def draft_rubric(
        self, *, author_model: str | None = None, retries: int = 2, timeout_s: float = 60.0
    ) -> RubricDraft:
        """Have the author machine draft a rubric for this machine, as ``machine draft-rubric`` does: written
        beside it as rubric_draft.py, for you to adopt by hand."""
        return await draft_rubric(
            self.workspace, self.name, author_model=author_model, retries=retries, timeout_s=timeout_s
        )

    async def train(
        self,
        *,
        samples: int = 0,
        trials: int = 3,
        best_of: int = 2,
        min_score: float = 1.0,
        epochs: int = 1,
        lr: float | None = None,
        rank: int | None = None,
        effort: float | None = None,
        any_model: bool = False,
        min_z: float = 2.0,
        trainer: Trainer | str | None = None,
        resume: str | None = None,
        max_length: int | None = None,
        lora_alpha: int | None = None,
        lora_dropout: float | None = None,
        target_modules: list[str] | None = None,
    ) -> Candidate:
        """Fine-tune the model on the good runs, as ``machine train`` does: a pending candidate measured
        on the held-out cases; ``commit`` makes it live only if it passed. ``lora_alpha``,
        ``lora_dropout`` and ``target_modules`` shape a local model's adapter."""
        settings = TrainSettings(
            base_model="", epochs=epochs, learning_rate=lr, rank=rank, effort=effort, max_length=max_length,
            lora_alpha=lora_alpha, lora_dropout=lora_dropout, target_modules=target_modules,
        )  # fmt: skip
        return await train_machine(
            self.workspace,
            self.name,
            samples=samples,
            trials=trials,
            best_of=best_of,
            min_score=min_score,
            settings=settings,
            any_model=any_model,
            min_z=min_z,
            trainer=trainer,
            make_trainer=make_trainer,
            resume=resume,
        )

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
    budget: Budget | float | None = None,
    judge_model: str | None = None,
) -> MachineHandle:
    """The machine ``name`` of ``workspace`` (default: ``MACHINE_WORKSPACE``, else the current folder).
    With no harness named, a machine whose model is ``local:...`` runs on the local harness (unless
    ``MACHINE_HARNESS`` says otherwise), as on the command line."""
    if isinstance(workspace, Workspace):
        return MachineHandle(workspace, name)
    handle = MachineHandle(
        open_workspace(workspace, harness=harness, budget=budget, judge_model=judge_model), name
    )
    if harness is None and handle.spec.model.startswith(LOCAL):
        handle.workspace = handle.workspace.using(harness=make_harness(None, model=handle.spec.model))
    return handle
