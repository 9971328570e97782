"""The one worker pool behind suites, comparisons and proposals, and the batch writer their runs go
through. A spent budget stops new work while the work in flight finishes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

import anyio
import anyio.lowlevel

from machine.errors import BudgetExceeded, plain_spelling
from machine.runs import Run, Store

J = TypeVar("J")

WRITE_BATCH = 64
"""Finished runs are written this many at a time: one transaction instead of one per run. A crash
loses at most one batch of finished runs, never half a run."""


async def run_pool(
    jobs: Sequence[J], work: Callable[[J], Awaitable[str | None]], *, concurrency: int
) -> str | None:
    """Do ``jobs`` in order, at most ``concurrency`` at once. A job that raises BudgetExceeded, or returns
    a reason (a conversation the budget cut short), stops new jobs; returns that reason, or None.

    Each job starts at a checkpoint, so cancelling the pool (Ctrl-C) stops it before its next job even
    when the jobs themselves never wait on anything."""
    queue = iter(jobs)
    stopped: list[str] = []

    async def worker() -> None:
        for job in queue:
            if stopped:
                return
            await anyio.lowlevel.checkpoint()
            try:
                reason = await work(job)
            except BudgetExceeded as error:  # reported by every face: its fixes in plain words
                reason = error.explain(plain_spelling)
            if reason is not None:
                stopped.append(reason)
                return

    async with anyio.create_task_group() as group:
        for _ in range(min(concurrency, len(jobs))):
            group.start_soon(worker)
    return stopped[0] if stopped else None


class BatchWriter:
    """Collects finished runs and writes them ``WRITE_BATCH`` at a time; ``flush`` writes the rest.
    Runs added together (a conversation's turns) land in the same batch."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[Run] = []

    def add(self, runs: Iterable[Run]) -> None:
        """Queue finished runs, writing a batch when enough are waiting."""
        self.pending.extend(runs)
        if len(self.pending) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        """Write every queued run now."""
        if self.pending:
            self.store.put_many(self.pending)
            self.pending.clear()
