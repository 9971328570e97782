"""The workspace: machines bound to a store, sandboxes, a harness, model access and a budget.

Every run of every face goes through ``Workspace.run``, so a run is made, priced, graded and stored the same
way wherever it starts. The harness, the model access and the sandboxes come from outside the core: given as
objects, or as factories called on first use (``machine.ops`` composes them by name).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Awaitable, Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

# What only a run uses is reached through its package, so it loads with the first run: listing or
# showing machines opens no store and loads no harness, tools, provenance or versions.
import machine.runs as on_run
import machine.spec as spec_on_run
from machine.budget import Budget
from machine.errors import BadInputError, HarnessError
from machine.grade import GradeContext
from machine.runs import Effort, Run, checked_score, parse_effort
from machine.spec import TRUST_FILE, MachineLoader, TrustBook

from ._adapters import Adapters
from ._events import finished as told_finished
from ._events import graded as told_graded
from ._events import started as told_started
from ._executor import Executor, made_elsewhere
from ._harness_turn import drive
from ._run_place import edit_gate, run_sandbox
from ._run_record import starting_run
from ._tags import tag_run

if TYPE_CHECKING:
    from machine.runs import (
        ApproveEdit,
        Approver,
        EditMode,
        Event,
        Harness,
        Message,
        ModelAccess,
        Sandboxes,
        Store,
    )
    from machine.spec import Case, Machine

T = TypeVar("T")
Watcher = Callable[[str, Run], None]
"""Told of each run a workspace finishes (``"finished"``) or grades (``"graded"``), as it happens."""


def workspace_root(root: str | Path | None = None) -> Path:
    """``root``, else ``MACHINE_WORKSPACE``, else the current directory."""
    return Path(root or os.environ.get("MACHINE_WORKSPACE") or Path.cwd()).resolve()


class Workspace:
    """A folder of machines (``machines/``) with its store and its runs' sandboxes (``.machine/``)."""

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        store: Store | None = None,
        harness: Harness | None = None,
        budget: Budget | None = None,
        judge_model: str | None = None,
        judge_effort: str | Effort | None = None,
        effort: str | Effort | None = None,
        models: ModelAccess | None = None,
        sandboxes: Sandboxes | None = None,
        adapters: Adapters | None = None,
        keep_sandboxes: bool = False,
        data_dir: str | Path | None = None,
        project: str | Path | None = None,
    ) -> None:
        self.root = workspace_root(root)
        self.machines_dir = self.root / "machines"
        self.data_dir = Path(data_dir) if data_dir else self.root / ".machine"
        """Where the store and the runs' sandboxes live (``.machine/`` in the workspace by default)."""
        self._store = store
        self._harness = harness
        self.budget = budget if budget is not None else Budget(None)
        self.judge_model = judge_model or os.environ.get("MACHINE_JUDGE_MODEL")
        self.judge_effort = judge_effort if isinstance(judge_effort, Effort) else parse_effort(judge_effort)
        self.effort = effort if isinstance(effort, Effort) else parse_effort(effort)
        """The reasoning effort runs ask for; None leaves the endpoint's default."""
        self._models = models
        self._models_given = models is not None
        self.adapters = adapters or Adapters()
        self._sandboxes = sandboxes
        self.keep_sandboxes = keep_sandboxes
        self.sandbox_dir = self.data_dir / "sandboxes"
        """Where runs' fresh sandboxes are made (a suite gives its runs a folder of its own)."""
        self.project = Path(project).resolve() if project is not None else None
        """A folder runs work in directly (a project the person is in) instead of a fresh sandbox;
        runs of a case with starting files still get their own."""
        self.edits: EditMode | None = None
        """How runs in ``project`` change its files: ask, auto or deny (``_run_place``)."""
        self.approve_edit: ApproveEdit | None = None
        """Who is asked about each change there, unless a run is given its own (``run``)."""
        self.trust = TrustBook(self.data_dir / TRUST_FILE, self.machines_dir)
        """Which of its machine files a model wrote, and which of those the person trusted."""
        self.loader = MachineLoader(self.machines_dir, builtins=True, trust=self.trust)
        self.watchers: list[Watcher] = []
        """Who is told of every run finished or graded here (shared with ``using``'s copies): a front
        end's progress, an event log."""
        self.executor: Executor | None = None
        """Where runs are made when not here (a cluster's workers); they are graded, charged and stored here.
        Runs in a person's own folder, and interactive ones, are always made here."""

    @cached_property
    def events(self) -> on_run.EventLog:
        """The event log every run made here is told to as it goes (``.machine/events.jsonl``)."""
        return on_run.EventLog(self.data_dir / on_run.EVENTS_FILE)

    @property
    def store(self) -> Store:
        """The store, opened on first use (``MACHINE_STORE``, else ``.machine/store.db``)."""
        if self._store is None:
            self._store = on_run.open_store(data_dir=self.data_dir)
        return self._store

    @property
    def harness(self) -> Harness:
        """The harness runs use unless a call names another."""
        if self._harness is None:
            if self.adapters.harness is None:
                raise HarnessError(
                    "this workspace was made without a harness, so it cannot run a machine: give it one "
                    "(machine.load and machine.open_workspace make one by name)"
                )
            self._harness = self.adapters.harness()
        return self._harness

    @property
    def models(self) -> ModelAccess | None:
        """Model calls for the judges (None: judged criteria are UNSCORED, saying why)."""
        if self._models is None and self.adapters.models is not None:
            self._models = self.adapters.models(self._harness)
        return self._models

    def using(
        self,
        *,
        budget: Budget | None = None,
        harness: Harness | None = None,
        sandbox_dir: Path | None = None,
        executor: Executor | None = None,
    ) -> Workspace:
        """This workspace with another budget, harness, sandbox folder and/or executor (one call's, say):
        the same machines, store and settings; the judges follow the new harness's endpoint unless model
        access was given."""
        other = copy.copy(self)
        if sandbox_dir is not None:
            other.sandbox_dir = sandbox_dir
        if budget is not None:
            other.budget = budget
        if executor is not None:
            other.executor = executor
        if harness is not None:
            other._harness = harness
            if not self._models_given:
                other._models = None
        return other

    async def aclose(self) -> None:
        """Write the events still pending, and close the model clients in the event loop that used them."""
        self.events.flush()
        for owner in (self._harness, self._models):
            close = getattr(getattr(owner, "client", owner), "aclose", None)
            if close is not None:
                await close()

    def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` in an event loop of its own and close the model clients before it ends:
        what each command does, so no connection outlives the loop that opened it."""

        result: list[T] = []

        async def inside() -> None:
            try:
                result.append(await fn())
            finally:
                await self.aclose()

        # Handed back beside the main task, not as its result: on the way out asyncio builds the main
        # task's repr (for a signal check), and a suite report's costs about 13 ms per thousand cases.
        import anyio  # loaded by the first command that runs anything, not by `machine list`

        anyio.run(inside)
        return result[0]

    @cached_property
    def revision(self) -> str | None:
        """The workspace's git revision, recorded on every run."""
        return on_run.git_revision(self.root)

    def names(self) -> list[str]:
        """The workspace's machines, sorted."""
        return self.loader.names()

    def family(self, name: str) -> list[str]:
        """``name`` and every machine named ``name/...``, parents before their children."""
        return [n for n in self.names() if n == name or n.startswith(name + "/")]

    def load(self, name: str) -> Machine:
        """The machine ``name`` (imported once; ``reload`` reads its files again): the workspace's own,
        else the library's built-in one of that name."""
        return self.loader.load(name)

    def reload(self, name: str) -> Machine:
        """The machine ``name`` as its files are now: they may have changed since it was imported."""
        self.loader.unload()
        return self.loader.load(name)

    def cases_file(
        self, machine: Machine | str, file: str | Path | None = None, *, default: str = "cases.json"
    ) -> Path:
        """The cases file ``file`` names (relative to the machine's folder, else to the current
        directory), else ``default`` beside the machine (a built-in one's in the library's folder)."""
        name = machine if isinstance(machine, str) else machine.name
        folder = self.machines_dir / name
        if not folder.is_dir() and (spec_on_run.BUILTIN_MACHINES / name).is_dir():
            folder = spec_on_run.BUILTIN_MACHINES / name
        if file is None:
            return folder / default
        path = Path(file)
        if not path.is_absolute() and not path.exists() and (folder / path).exists():
            path = folder / path
        return path

    def cases(self, machine: Machine | str, file: str | Path | None = None) -> list[Case]:
        """The machine's cases: ``file`` (see ``cases_file``), else ``cases.json`` beside the machine."""
        return spec_on_run.load_cases(self.cases_file(machine, file))

    async def run(
        self,
        machine: Machine | str,
        input: str,
        *,
        case: Case | None = None,
        trial: int | None = None,
        history: list[Message] | None = None,
        conversation_id: str | None = None,
        model: str | None = None,
        harness: Harness | None = None,
        effort: Effort | None = None,
        grade: bool = False,
        pass_score: float = 1.0,
        interactive: bool = False,
        approver: Approver | None = None,
        on_event: Callable[[Event], None] | None = None,
        store: bool = True,
        files: Mapping[str, str] | None = None,
        workdir: Path | None = None,
        approve_edit: ApproveEdit | None = None,
    ) -> Run:
        """Run ``machine`` once on ``input``, store the run (graded if ``grade``) and return it. With
        ``store=False`` the caller stores the finished run itself (the suite writes in batches).
        ``approver`` approves the calls of its tools that spend or change (None: nobody can); a run with
        one is always made here. ``approve_edit`` is asked about each change to the project's files.

        A harness failure becomes a stored run with status ``error``; only BudgetExceeded is raised,
        before anything starts, so a refused run leaves nothing behind.
        """
        spec = self.load(machine) if isinstance(machine, str) else machine
        harness, model, effort = harness or self.harness, model or spec.model, effort or self.effort
        self._refuse_early(harness, model, pass_score, store)
        run = starting_run(self, spec, input, harness, model, effort, case, trial, history, conversation_id)
        folder = workdir.resolve() if workdir is not None else self.project
        starting = dict(case.files) if case else dict(files or {})
        listen = told_started(self.events, run, on_event, self.root)
        here = interactive or approver is not None or folder is not None
        if self.executor is not None and harness is self.harness and not here:
            run = await made_elsewhere(self.executor, spec, run, starting, self.budget, self.machines_dir)
        else:
            run = await self.make(
                spec,
                run,
                harness=harness,
                files=starting,
                folder=folder,
                interactive=interactive,
                approver=approver,
                on_event=listen,
                approve_edit=approve_edit,
            )
        run.timings.finished_at = on_run.now()
        if grade and run.status == "ok":
            run = await self.grade(run, spec, pass_score=pass_score, store=False, logged=False)
        if store:
            self.store.put(run)
        told_finished(self.events, run)
        self._tell("finished", run)
        return run

    def _refuse_early(self, harness: Harness, model: str, pass_score: float, store: bool) -> None:
        """Refuse a run before it starts: a pass score that is not a score, a spent budget, a store that
        cannot take the run (when it is stored here), a model without a price under a cap."""
        checked_score(pass_score)
        self.budget.check()
        if store:
            self.store.ready_to_write()
        if not on_run.is_free(harness.name):
            self.budget.probe_price(model)

    def _tell(self, what: str, run: Run) -> None:
        for watcher in list(self.watchers):
            watcher(what, run)

    async def make(
        self,
        spec: Machine,
        run: Run,
        *,
        harness: Harness | None = None,
        files: Mapping[str, str] | None = None,
        folder: Path | None = None,
        interactive: bool = False,
        approver: Approver | None = None,
        on_event: Callable[[Event], None] | None = None,
        approve_edit: ApproveEdit | None = None,
    ) -> Run:
        """``run`` (a record as it starts) made by the harness, in a fresh sandbox seeded with ``files``
        (or in ``folder``): what ``run`` does between its checks and its storing, and what a cluster's
        worker does with each run it is sent."""
        sandbox = run_sandbox(self, spec, run.id, dict(files or {}), folder)
        context = on_run.ToolContext(
            run_id=run.id,
            sandbox=sandbox,
            budget=self.budget,
            interactive=interactive,
            approver=approver,
            root=self.root,
            edits=edit_gate(self.edits, self.project, folder, approve_edit or self.approve_edit),
        )
        harness, effort = harness or self.harness, parse_effort(run.effort)
        try:
            return await drive(harness, spec, run, context, effort, on_event, self.budget, self.root)
        finally:
            fresh = sandbox is not None and sandbox.path != folder  # the person's own folder is never removed
            if sandbox is not None and fresh and not self.keep_sandboxes:
                sandbox.remove()

    @property
    def sandboxes(self) -> Sandboxes | None:
        """What makes this workspace's sandboxes (made on first use), or None where it was given none."""
        if self._sandboxes is None and self.adapters.sandboxes is not None:
            self._sandboxes = self.adapters.sandboxes()
        return self._sandboxes

    async def grade(
        self,
        run: Run,
        machine: Machine | None = None,
        *,
        pass_score: float = 1.0,
        store: bool = True,
        logged: bool = True,
    ) -> Run:
        """Grade ``run`` with its machine's current evaluator and (by default) store the scorecard;
        ``logged=False`` leaves the event log to the run's finish, which says its score."""
        if run.status == "error":
            raise BadInputError(f"run {run.id} failed ({run.error}), so it has no output to grade")
        spec = machine or self.load(run.machine)
        ctx = GradeContext(
            budget=self.budget,
            judge_model=self.judge_model,
            judge_effort=self.judge_effort,
            models=self.models,
        )
        scorecard = await spec.evaluator.grade(run, ctx, pass_score=pass_score)
        graded = run.model_copy(update={"scorecard": scorecard})
        if store:
            self.store.put(graded)
        if logged:
            told_graded(self.events, graded)
        self._tell("graded", graded)
        return graded

    def tag(self, run: Run, kind: str, note: str | None = None, **marks: Any) -> Run:
        """Mark ``run`` good, bad or with a correction, and store it (see ``_tags.tag_run``)."""
        return tag_run(self.store, run, kind, note, **marks)
