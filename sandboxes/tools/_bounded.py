"""Work a tool does off the event loop: in a thread that is told to stop when its time is up or the
call is cancelled, so a cancelled call returns at once and the thread ends within one step."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

TOOL_SECONDS = 30.0
"""How long one call of a file tool may work before it stops with what it has."""


class Deadline:
    """When a piece of work must stop: a time limit, or the call that wanted it was cancelled."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds
        self._abandoned = threading.Event()

    def abandon(self) -> None:
        """Tell the work its result is no longer wanted."""
        self._abandoned.set()

    @property
    def abandoned(self) -> bool:
        """Whether the call was cancelled (or finished) and the work should stop now."""
        return self._abandoned.is_set()

    def expired(self) -> bool:
        """Whether the work should stop: out of time, or abandoned."""
        return self._abandoned.is_set() or time.monotonic() > self._end

    def left(self) -> float:
        """Seconds left before the time limit (0 when past it)."""
        return max(0.0, self._end - time.monotonic())


async def in_thread(work: Callable[[Deadline], T], seconds: float) -> T:
    """Run ``work`` in a worker thread with a Deadline it checks between steps. Cancelling the call
    returns at once (the thread is abandoned, and sees it at its next check)."""
    deadline = Deadline(seconds)
    try:
        return await anyio.to_thread.run_sync(work, deadline, abandon_on_cancel=True)
    finally:
        deadline.abandon()
