"""The harness protocol: the agent loop of one run, whichever model or host drives it, and model access
for the graders that ask a model."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

from machine.budget import Usage

if TYPE_CHECKING:
    from machine.budget import Budget

    from ._effort import Effort
    from ._records import Message
    from ._tools import Tool, ToolContext

EventType = Literal["text", "assistant", "tool_call", "tool_result"]
"""``text`` carries a piece of a reply as it streams; the others, whole messages."""


@dataclass(frozen=True)
class Event:
    """Something a run did, streamed while it happens (for live views and the SDK's iterator)."""

    type: EventType
    run_id: str
    message: Message
    usage: Usage | None = None
    """What the model call that made an ``assistant`` message used, where the harness knows (a trace's
    span of that call carries it); None elsewhere."""


@dataclass
class HarnessRequest:
    """Everything one run needs: instructions, input and history, model, tools bound to the run's
    sandbox, the budget to charge, the step limit, the effort, and who listens for events."""

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
    seed: int | None = None
    """Seeds the run's sampling where the harness samples itself (``run_seed`` of its case and trial, so a
    suite is reproducible); None: unseeded."""
    temperature: float | None = None
    """The sampling temperature (0: greedy); None: the harness's default."""
    root: Path | None = None
    """The workspace's root: a model id's relative paths (a local checkpoint a training left in the
    workspace) are read from it; None: the current folder."""

    def emit(self, type: EventType, message: Message, usage: Usage | None = None) -> None:
        """Pass an event to the listener, if there is one."""
        if self.on_event is not None:
            self.on_event(Event(type, self.run_id, message, usage))


def run_seed(case_id: str | None, trial: int | None) -> int | None:
    """The sampling seed of a case's trial: the same for the same (case, trial) in every process, and
    none for a run of no case."""
    if case_id is None:
        return None
    digest = hashlib.sha256(f"{case_id}\0{trial or 0}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass
class HarnessResult:
    """What a run did: its messages, what they used and cost, and why it stopped."""

    trajectory: list[Message]
    """The messages this run added: the user's input first, then assistant turns and tool results."""
    usage: Usage
    cost_usd: float
    stop_reason: str
    error: str | None = None
    retries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def output(self) -> str:
        """The last assistant message's text: the run's answer."""
        return next((m.content for m in reversed(self.trajectory) if m.role == "assistant"), "")


@runtime_checkable
class Harness(Protocol):
    """Runs one request to the end; a model call that fails for good is a result with ``error`` set.

    A harness whose runs depend on more than its name and the model (a script it replays, an endpoint it
    calls, a local model's files) may say so with a method ``setup(machine, model, root) -> str | None``
    (see ``setup_of``); it is optional, so it is not a member here."""

    name: str

    async def run(self, request: HarnessRequest) -> HarnessResult: ...


def endpoint_url(harness: object) -> str | None:
    """The URL a harness sends its calls to (``harness.endpoint.base_url``: scheme, host, port and path
    only, never a key, a password or a query), or None for a harness that calls no endpoint."""
    url = getattr(getattr(harness, "endpoint", None), "base_url", None)
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is not a number: say none rather than fail a run over it
        port = ""
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/") if parts.scheme else None


def setup_of(harness: object, machine: str, model: str, root: Path | None = None) -> str | None:
    """What a run of ``machine`` on ``model`` depends on beyond the harness's name and the model, in
    words a run records (``script sha256:...``, ``endpoint https://...``, ``model files sha256:...``):
    a stored run is reused only under the same setup, so a run made with one script is never counted
    as another's. The harness's own ``setup`` says it (computed once, not per run); a harness without
    one is known by its endpoint's URL, if it has one; None: nothing more to tell runs apart by."""
    own = getattr(harness, "setup", None)
    if callable(own):
        said = own(machine, model, root)
        return said if isinstance(said, str) and said else None
    url = endpoint_url(harness)
    return None if url is None else f"endpoint {url}"


@dataclass
class Turn:
    """One assistant reply and what it used."""

    message: Message
    usage: Usage = field(default_factory=Usage)
    retries: list[dict[str, Any]] = field(default_factory=list)
    """Failed attempts before this reply (status, error, wait), for the run's record."""
    cost_usd: float | None = None
    """What the call cost when it was charged under a reservation as it was made; None: not charged yet."""

    def charged(self, budget: Budget, model: str, kind: str = "runs") -> float:
        """The turn's cost in ``budget``: charged now unless it was charged under a reservation."""
        return self.cost_usd if self.cost_usd is not None else budget.charge(model, self.usage, kind)


class ModelAccess(Protocol):
    """One model call for a grader, routed to the endpoint that serves ``model``; given a ``budget``, the
    call is made under ``budget.reserve`` and the turn carries its ``cost_usd``, charged as ``kind``."""

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        effort: Effort | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        budget: Budget | None = None,
        kind: str = "grading",
    ) -> Turn: ...
