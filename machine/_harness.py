"""The harness protocol: the agent loop of one run, whichever model or host drives it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ._budget import Budget
from ._effort import Effort
from ._runs import Message, Usage
from ._tools import Tool, ToolContext

EventType = Literal["text", "assistant", "tool_call", "tool_result"]
"""``text`` carries a piece of a reply as it streams; the others, whole messages."""


@dataclass(frozen=True)
class Event:
    """Something a run did, streamed while it happens (for live views and the SDK's iterator)."""

    type: EventType
    run_id: str
    message: Message


@dataclass
class HarnessRequest:
    run_id: str
    machine: str
    instructions: str
    input: str
    model: str
    tools: Sequence[Tool]
    tool_context: ToolContext
    budget: Budget
    history: list[Message] = field(default_factory=list)
    max_steps: int = 8
    effort: Effort | None = None
    on_event: Callable[[Event], None] | None = None

    def emit(self, type: EventType, message: Message) -> None:
        if self.on_event is not None:
            self.on_event(Event(type, self.run_id, message))


@dataclass
class HarnessResult:
    trajectory: list[Message]
    """The messages this run added: the user's input first, then assistant turns and tool results."""
    output: str
    usage: Usage
    cost_usd: float
    stop_reason: str
    error: str | None = None
    retries: list[dict[str, Any]] = field(default_factory=list)


@runtime_checkable
class Harness(Protocol):
    name: str

    async def run(self, request: HarnessRequest) -> HarnessResult: ...
