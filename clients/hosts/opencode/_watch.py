"""The run's steps, followed live on opencode's event stream: passed on and charged as each finishes.

opencode's step limit only asks the model to stop and it retries for ever: both are kept here instead.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import anyio.abc
import httpx

from machine.runs import HarnessRequest, Usage

from ._mapping import _usage, emit_step, step_messages


class _Watch:
    """Follows the session on opencode's event stream while it runs.

    Each finished step (a model call and the tools it called) is passed on as events and charged to the
    budget at once, so a run that fails or is cancelled later has paid for what it used. After
    ``max_steps`` steps the session is aborted (the tools of the last one have run by then, as in the
    in-process loop); so is a model call that failed more than ``max_retries`` times (opencode would
    retry it for ever)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        where: dict[str, str],
        session: str,
        request: HarnessRequest,
        max_retries: int,
        *,
        metered: bool = False,
    ) -> None:
        self.http, self.where, self.session, self.request = http, where, session, request
        self.max_retries = max_retries
        self.metered = metered
        """Each call is charged by the model proxy as it is made: the events only give the trajectory."""
        self.parts: dict[str, dict[str, dict[str, Any]]] = {}
        """The parts seen so far, by message and part id (a tool part is updated as it runs)."""
        self.seen: set[str] = set()
        """The steps (assistant messages) passed on and charged."""
        self.usage, self.cost, self.steps = Usage(), 0.0, 0
        self.retries: list[dict[str, Any]] = []
        self.reached = False
        self.gave_up: str | None = None

    async def watch(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Until the run ends, the limit is reached, or the stream breaks (then the session's messages,
        read at the end, still give every step)."""
        started = False
        try:
            async with self.http.stream("GET", "/event", params=self.where, timeout=None) as events:
                task_status.started()  # the stream is open: no step of this run can be missed
                started = True
                await self._follow(events)
        except httpx.HTTPError:
            if not started:  # the run goes on without live events
                task_status.started()

    async def _follow(self, events: httpx.Response) -> None:
        async for line in events.aiter_lines():
            if not line.startswith("data:"):
                continue
            try:
                event = json.loads(line[5:])
            except ValueError:
                continue
            found = event.get("properties") or {}
            mine = found.get("sessionID") == self.session
            if (
                event.get("type") == "session.status"
                and mine
                and await self._status(found.get("status") or {})
            ):
                return
            part = found.get("part") or {}
            if part.get("sessionID") != self.session or "messageID" not in part:
                continue
            self.parts.setdefault(part["messageID"], {})[str(part.get("id"))] = part
            if part.get("type") == "step-finish" and await self._step(part):
                return

    async def _step(self, finish: dict[str, Any]) -> bool:
        message_id = finish["messageID"]
        self.steps += 1
        self.seen.add(message_id)
        usage = _usage(finish.get("tokens") or {})
        self.usage = self.usage + usage
        if not self.metered:
            self.cost += self.request.budget.charge(self.request.model, usage)
        emit_step(self.request, *step_messages(list(self.parts.pop(message_id).values())))
        if self.steps >= self.request.max_steps and finish.get("reason") == "tool-calls":
            self.reached = True
            await self.http.post(f"/session/{self.session}/abort", params=self.where)
            return True
        return False

    async def _status(self, status: dict[str, Any]) -> bool:
        if status.get("type") != "retry":
            return False
        attempt, message = int(status.get("attempt") or 0), str(status.get("message") or "")
        wait = max((float(status.get("next") or 0) / 1000) - time.time(), 0.0)
        self.retries.append({"attempt": attempt, "error": message, "wait_s": round(wait, 3)})
        if attempt <= self.max_retries:
            return False
        self.gave_up = f"the model call failed after {attempt} attempts: {message}"
        await self.http.post(f"/session/{self.session}/abort", params=self.where)
        return True
