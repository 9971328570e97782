"""The workspace: machines bound to a store, sandboxes, a harness and a budget.

Every face of the product (the SDK, the ``machine`` command, later the MCP server) goes through
here, so a run is made, priced, graded and stored the same way wherever it starts.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import anyio

from ._budget import Budget
from ._cases import Case, load_cases
from ._effort import Effort, parse_effort
from ._errors import BadInputError, BudgetExceeded, MachineError
from ._graders import GradeContext, ModelAccess
from ._harness import Event, Harness, HarnessRequest
from ._loader import MachineLoader
from ._provenance import git_revision, library_version
from ._runs import Message, Run, Timings, Usage, now
from ._spec import Machine
from ._store import SQLiteStore, Store
from ._tools import ToolContext
from ._versions import version_label

T = TypeVar("T")


def workspace_root(root: str | Path | None = None) -> Path:
    """``root``, else ``MACHINE_WORKSPACE``, else the current directory."""
    return Path(root or os.environ.get("MACHINE_WORKSPACE") or Path.cwd()).resolve()


class Workspace:
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
        self.keep_sandboxes = keep_sandboxes
        self.project = Path(project).resolve() if project is not None else None
        """A folder runs work in directly (a project the person is in) instead of a fresh sandbox;
        runs of a case with starting files still get their own."""
        self.loader = MachineLoader(self.machines_dir)

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = SQLiteStore(self.data_dir / "store.db")
        return self._store

    @property
    def harness(self) -> Harness:
        if self._harness is None:
            from machine.clients import make_harness

            self._harness = make_harness()
        return self._harness

    @property
    def models(self) -> ModelAccess:
        """Model calls for the judges: the run harness's endpoint when it has one, else by model id."""
        if self._models is None:
            from machine.clients.chat import ModelRouter

            self._models = ModelRouter(default=getattr(self._harness, "endpoint", None))
        return self._models

    async def aclose(self) -> None:
        """Close the model clients' connections, in the event loop that used them."""
        for owner in (self._harness, self._models):
            close = getattr(getattr(owner, "client", owner), "aclose", None)
            if close is not None:
                await close()

    def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` in an event loop of its own and close the model clients before it ends:
        what each command does, so no connection outlives the loop that opened it."""

        async def inside() -> T:
            try:
                return await fn()
            finally:
                await self.aclose()

        return anyio.run(inside)

    @cached_property
    def revision(self) -> str | None:
        return git_revision(self.root)

    def names(self) -> list[str]:
        return self.loader.names()

    def load(self, name: str) -> Machine:
        return self.loader.load(name)

    def cases(self, machine: Machine | str, file: str | Path | None = None) -> list[Case]:
        """The machine's cases: ``file`` (relative to the machine's folder or the current directory),
        else ``cases.json`` beside the machine."""
        name = machine if isinstance(machine, str) else machine.name
        folder = self.machines_dir / name
        if file is None:
            return load_cases(folder / "cases.json")
        path = Path(file)
        if not path.is_absolute() and not path.exists() and (folder / path).exists():
            path = folder / path
        return load_cases(path)

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
        on_event: Callable[[Event], None] | None = None,
        store: bool = True,
        files: Mapping[str, str] | None = None,
        workdir: Path | None = None,
    ) -> Run:
        """Run ``machine`` once on ``input``, store the run (graded if ``grade``) and return it.

        With ``store=False`` the caller stores the finished run itself (the suite writes in batches).

        A harness failure becomes a stored run with status ``error``; only BudgetExceeded is raised,
        before anything starts, so a refused run leaves nothing behind.
        """
        spec = self.load(machine) if isinstance(machine, str) else machine
        harness = harness or self.harness
        model = model or spec.model
        effort = effort or self.effort
        self.budget.check()
        if harness.name not in ("echo", "scripted"):
            self.budget.cost(model, Usage(input_tokens=1))  # an unknown price is refused before the call
        run = Run(
            machine=spec.name,
            version=version_label(spec, model),
            model=model,
            harness=harness.name,
            effort=None if effort is None else effort.value,
            instructions=spec.instructions,
            input=input,
            history=list(history or []),
            case_id=case.id if case else None,
            case=case.data() if case else None,
            trial=trial,
            conversation_id=conversation_id,
            revision=self.revision,
            library_version=library_version(),
            timings=Timings(),
        )
        folder = workdir.resolve() if workdir is not None else self.project
        sandbox = self._sandbox(spec, run.id, dict(case.files) if case else dict(files or {}), folder)
        fresh = sandbox is not None and sandbox.path != folder  # the person's own folder is never removed
        request = HarnessRequest(
            run_id=run.id,
            machine=spec.name,
            instructions=spec.instructions,
            input=input,
            model=model,
            tools=spec.tools,
            tool_context=ToolContext(
                run_id=run.id,
                sandbox=sandbox,
                budget=self.budget,
                interactive=interactive,
            ),
            budget=self.budget,
            history=run.history,
            max_steps=spec.max_steps,
            effort=effort,
            on_event=on_event,
        )
        try:
            result = await harness.run(request)
        except BudgetExceeded:
            raise
        except MachineError as error:
            run = run.model_copy(update={"status": "error", "error": str(error)})
        except Exception as error:
            run = run.model_copy(update={"status": "error", "error": f"{type(error).__name__}: {error}"})
        else:
            run = run.model_copy(
                update={
                    "trajectory": result.trajectory,
                    "output": result.output,
                    "usage": result.usage,
                    "cost_usd": result.cost_usd,
                    "stop_reason": result.stop_reason,
                    "retries": result.retries,
                    "status": "error" if result.error else "ok",
                    "error": result.error,
                }
            )
        finally:
            if sandbox is not None and fresh and not self.keep_sandboxes:
                sandbox.remove()
        run.timings.finished_at = now()
        if grade and run.status == "ok":
            run = await self.grade(run, spec, pass_score=pass_score, store=False)
        if store:
            self.store.put(run)
        return run

    def _sandbox(self, spec: Machine, run_id: str, files: dict[str, str], folder: Path | None) -> Any:
        """The run's sandbox: ``folder`` (a project, its ``.machine`` hidden) when given and the run has
        no starting files, else a fresh folder seeded with them; none without tools or files."""
        if not spec.tools and not files:
            return None
        from machine.sandboxes import LocalSandbox

        if folder is not None and not files:
            self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # hidden from the first run on
            inside = self.data_dir.resolve()
            hide = [inside.relative_to(folder).as_posix()] if inside.is_relative_to(folder) else []
            return LocalSandbox(folder, hide=hide)
        return LocalSandbox.create(self.data_dir / "sandboxes", run_id, files)

    async def grade(
        self, run: Run, machine: Machine | None = None, *, pass_score: float = 1.0, store: bool = True
    ) -> Run:
        """Grade ``run`` with its machine's current evaluator and (by default) store the scorecard."""
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
        return graded

    def tag(self, run: Run, kind: str, note: str | None = None) -> Run:
        from ._runs import Tag

        tagged = run.model_copy(update={"tags": [*run.tags, Tag(kind=kind, note=note)]})  # type: ignore[arg-type]
        self.store.put(tagged)
        return tagged

    def describe(self, name: str) -> Mapping[str, Any]:
        """What ``machine show`` and ``list --json`` print about one machine."""
        spec = self.load(name)
        return {
            "name": spec.name,
            "intent": spec.intent,
            "model": spec.model,
            "parent": spec.parent.name if spec.parent else None,
            "counterpart": spec.counterpart.machine.name if spec.counterpart else None,
            "max_steps": spec.max_steps,
            "criteria": [
                {
                    "name": c,
                    "description": spec.rubric[c].description,
                    "weight": spec.rubric[c].weight,
                    "grader": f"{spec.evaluator.graders[c].kind}:{spec.evaluator.graders[c].name}",
                    "from": spec.origin(c),
                }
                for c in spec.rubric
            ],
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "from": spec.name if t.name in spec.own_tools else _tool_origin(spec, t.name),
                }
                for t in spec.tools
            ],
        }


def _tool_origin(spec: Machine, tool: str) -> str:
    node: Machine | None = spec
    while node is not None:
        if tool in node.own_tools:
            return node.name
        node = node.parent
    return spec.name
