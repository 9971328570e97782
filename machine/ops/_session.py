"""What a run streams and a conversation with a machine: the SDK's ``run`` (iterate it for messages as
they happen, or await it for the finished run) and ``session`` (many exchanges in one working folder,
recorded after each so it can be resumed)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from machine.measure import MeasureOptions
from machine.runs import Approver, ChatSession, Event, Message, Run, new_run_id, now
from machine.spec import Machine
from machine.workspace import Workspace

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


class Runs(Protocol):
    """What a run stream runs in and runs: a workspace and its machine as it is when the run starts (a
    machine handle, whose machine is read again after a commit)."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def spec(self) -> Machine: ...


class RunStream:
    """One run: iterate it for its messages as they happen, or await it for the finished Run."""

    def __init__(self, handle: Runs, input: str, options: dict[str, Any]) -> None:
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
    """A multi-turn conversation with a machine in one working directory; every exchange is a run, and
    the conversation is recorded after each one, so it can be resumed (``Session.resume``)."""

    workspace: Workspace
    machine: Machine
    auto_grade: bool = False
    cwd: Path | None = None
    conversation_id: str = field(default_factory=new_run_id)
    history: list[Message] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    pass_score: float = MeasureOptions.default("pass_score")
    model: str | None = None
    approver: Approver | None = None
    """Who approves the calls of the machine's tools that spend or change (None: nobody, so they are
    refused): the person at a terminal, an allowance they typed."""

    @classmethod
    def resume(cls, workspace: Workspace, machine: Machine, **options: Any) -> Session | None:
        """The machine's newest recorded conversation, to go on with; None when there is none."""
        found = workspace.store.latest_session(machine.name)
        if found is None:
            return None
        return cls(
            workspace, machine, conversation_id=found.conversation_id, history=list(found.history), **options
        )

    async def send(self, text: str, *, interactive: bool = False) -> Run:
        """One exchange: a run with the conversation so far as its history."""
        run = await self.workspace.run(
            self.machine,
            text,
            history=list(self.history),
            conversation_id=self.conversation_id,
            grade=self.auto_grade,
            pass_score=self.pass_score,
            model=self.model,
            interactive=interactive,
            approver=self.approver,
            workdir=self.cwd,
        )
        self.runs.append(run)
        if run.status == "ok":
            self.history.extend(run.trajectory)
            self._record()
        return run

    async def close(self) -> None:
        """Record the conversation (each exchange already did; kept so a caller can say it is done)."""
        if self.runs:
            self._record()

    def _record(self) -> None:
        self.workspace.store.put_session(
            ChatSession(
                name=self.conversation_id,
                machine=self.machine.name,
                conversation_id=self.conversation_id,
                history=self.history,
                updated_at=now(),
            )
        )
