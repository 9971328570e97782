"""One request shared by the graders of several criteria of the same run.

A judge panel scores several criteria in one model call, and Jev answers all of a run's questions
in one request. Each criterion's grader asks for the shared result; the first one to ask starts
the request and the others wait for it. The entry is dropped once every criterion has taken it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio

from ._runs import Run

T = TypeVar("T")


@dataclass
class _Entry(Generic[T]):
    done: anyio.Event = field(default_factory=anyio.Event)
    result: T | None = None
    error: BaseException | None = None
    waiting: int = 0


class SharedCall(Generic[T]):
    def __init__(self) -> None:
        self._entries: dict[tuple[str, int], _Entry[T]] = {}

    async def get(self, run: Run, takers: int, fetch: Callable[[], Awaitable[T]]) -> T:
        """The shared result for ``run``; ``takers`` is how many criteria will ask for it."""
        key = (run.id, id(run))  # one grading of one run object
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(waiting=takers)
            try:
                entry.result = await fetch()
            except Exception as error:
                entry.error = error
            finally:
                entry.done.set()
        else:
            await entry.done.wait()
        entry.waiting -= 1
        if entry.waiting <= 0:
            self._entries.pop(key, None)
        if entry.error is not None:
            raise entry.error
        return entry.result  # type: ignore[return-value]
