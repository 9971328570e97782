"""The SDK handle: one machine of a workspace, and what can be done with it from code.

``machine.load("dev")`` gives a handle whose methods are the same operations the ``machine``
command runs (the command is a thin adapter over them):

    dev = machine.load("dev")
    async for message in dev.run("The tests fail. Fix calc.py.", files={"calc.py": ...}):
        if message.type == "tool_call":
            print("->", message.name)
    run = await dev.run("What does calc.py do?")       # or await it for the finished run
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ._harness import Event
from ._runs import Message, Run, new_run_id, now
from ._spec import Machine
from ._workspace import Workspace

if TYPE_CHECKING:
    from ._budget import Budget
    from ._cases import Case
    from ._compare import Comparison
    from ._harness import Harness
    from ._suite import SuiteReport
    from ._versions import Candidate, Version

MessageType = Literal["text", "assistant", "tool_call", "tool_result", "result"]


@dataclass(frozen=True)
class RunMessage:
    """What a run streams: a piece of text, a whole assistant turn, a tool call, a tool result, and at
    the end the finished run (``type == "result"``)."""

    type: MessageType
    message: Message | None = None
    run: Run | None = None

    @property
    def name(self) -> str | None:
        """The tool's name, for a tool call or a tool result."""
        if self.message is None:
            return None
        if self.type == "tool_call" and self.message.tool_calls:
            return self.message.tool_calls[0].name
        return self.message.name

    @property
    def text(self) -> str:
        return "" if self.message is None else self.message.content


class RunStream:
    """One run: iterate it for its messages as they happen, or await it for the finished Run."""

    def __init__(self, handle: MachineHandle, input: str, options: dict[str, Any]) -> None:
        self._handle, self._input, self._options = handle, input, options
        self._run: Run | None = None

    async def _finish(self, on_event: Any = None) -> Run:
        if self._run is None:
            self._run = await self._handle.workspace.run(
                self._handle.spec, self._input, on_event=on_event, **self._options
            )
        return self._run

    def __await__(self) -> Generator[Any, None, Run]:
        return self._finish().__await__()

    async def __aiter__(self) -> AsyncIterator[RunMessage]:
        send, receive = anyio.create_memory_object_stream[RunMessage](max_buffer_size=math.inf)

        def on_event(event: Event) -> None:
            send.send_nowait(RunMessage(event.type, message=event.message))

        async def produce() -> None:
            async with send:
                run = await self._finish(on_event)
                await send.send(RunMessage("result", run=run))

        async with anyio.create_task_group() as group:
            group.start_soon(produce)
            async with receive:
                async for message in receive:
                    yield message


@dataclass
class Session:
    """A multi-turn conversation with a machine in one working directory; every exchange is a run."""

    handle: MachineHandle
    auto_grade: bool = False
    cwd: Path | None = None
    conversation_id: str = field(default_factory=new_run_id)
    history: list[Message] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    async def send(self, text: str) -> Run:
        run = await self.handle.workspace.run(
            self.handle.spec,
            text,
            history=list(self.history),
            conversation_id=self.conversation_id,
            grade=self.auto_grade,
            workdir=self.cwd,
        )
        self.runs.append(run)
        if run.status == "ok":
            self.history.extend(run.trajectory)
        return run

    async def close(self) -> None:
        """Record the conversation so ``machine run NAME --continue`` can resume it."""
        from ._store import ChatSession

        if self.runs:
            self.handle.workspace.store.put_session(
                ChatSession(
                    name=self.conversation_id,
                    machine=self.handle.name,
                    conversation_id=self.conversation_id,
                    history=self.history,
                    updated_at=now(),
                )
            )


class MachineHandle:
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
        return Session(self, auto_grade=auto_grade, cwd=None if cwd is None else Path(cwd).resolve())

    async def grade(self, *, limit: int | None = None) -> list[Run]:
        """Grade the stored runs never graded, or graded under an older rubric; returns them graded."""
        due = self.pending()
        return [await self.workspace.grade(run, self.spec) for run in due[:limit]]

    def pending(self) -> list[Run]:
        """The stored runs due for grading (never graded, or under an older rubric)."""
        fingerprint = self.spec.rubric.fingerprint
        return [
            run
            for run in self.workspace.store.iter_runs(self.name)
            if run.status == "ok"
            and (run.scorecard is None or run.scorecard.rubric_fingerprint != fingerprint)
        ]

    async def suite(
        self,
        *,
        cases: str | Path | list[Case] | None = None,
        trials: int = 1,
        concurrency: int = 4,
        pass_score: float = 1.0,
        model: str | None = None,
    ) -> SuiteReport:
        from ._suite import run_suite

        chosen = cases if isinstance(cases, list) else self.workspace.cases(self.spec, cases)
        return await run_suite(
            self.workspace,
            self.spec,
            chosen,
            trials=trials,
            concurrency=concurrency,
            pass_score=pass_score,
            model=model,
        )

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
        from ._compare import compare

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
        from ._versions import versions

        return versions(self.workspace, self.name)

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
        from ._versions import propose

        return await propose(
            self.workspace,
            self.name,
            model=model,
            trials=trials,
            cases=cases,
            min_z=min_z,
            base_model=base_model,
            note=note,
        )

    def commit(self, *, force: bool = False) -> Version:
        """Make the newest pending candidate live; raises CommitRefused unless it passed the gate."""
        from ._versions import commit

        return self._reloaded(commit(self.workspace, self.name, force=force))

    def revert(self, *, to: str | int | None = None) -> Version:
        """Make the previous live version (or ``to``) live again, writing back its files exactly."""
        from ._versions import revert

        return self._reloaded(revert(self.workspace, self.name, to=to))

    def update(
        self,
        *,
        instructions: str | None = None,
        model: str | None = None,
        base_model: str | None = None,
        note: str = "",
    ) -> Version:
        """Record a new live version by hand: write its instructions and/or model."""
        from ._versions import update

        version = update(
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
    """The machine ``name`` of ``workspace`` (default: ``MACHINE_WORKSPACE``, else the current folder)."""
    if isinstance(workspace, Workspace):
        return MachineHandle(workspace, name)
    from ._budget import Budget

    chosen: Harness | None
    if isinstance(harness, str):
        from machine.clients import make_harness

        chosen = make_harness(harness)
    else:
        chosen = harness
    if budget is not None and not isinstance(budget, Budget):
        budget = Budget(budget)
    return MachineHandle(Workspace(workspace, harness=chosen, budget=budget, judge_model=judge_model), name)
