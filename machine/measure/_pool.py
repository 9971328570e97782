"""The one worker pool behind suites, comparisons and proposals, and the batch writer their runs go
through. A spent budget stops new work while the work in flight finishes.

Finished runs are written as they finish, batched in time: what finished within ``WRITE_EVERY_S`` (or
``WRITE_BATCH`` runs, if sooner) goes into one transaction, so a killed process loses at most about a
second of finished work. A failure that is not the budget (the store cannot be written, the disk is full,
a harness cannot start) stops new work the same way; the first such failure is the one reported, with
every finished run that could not be stored named, and nothing that was stored is lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

import anyio
import anyio.lowlevel

from machine.errors import BudgetExceeded, MachineError, WorkFailed, plain_spelling
from machine.runs import Run, Store

J = TypeVar("J")

WRITE_BATCH = 64
"""At most this many finished runs wait before they are written (one transaction for them all)."""
WRITE_EVERY_S = 1.0
"""A finished run waits at most about this long before it is written."""
WAITING_LIMIT = 4 * WRITE_BATCH
"""While a write is in flight, at most about this many finished runs wait for the next one: a job that
finishes beyond it waits for the write, so memory stays flat however many runs a pool makes."""


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


def said(error: BaseException) -> str:
    """A failure in a person's words: a library error with its fixes, a file-system one with its file."""
    if isinstance(error, MachineError):
        return error.explain(plain_spelling)
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return f"{type(error).__name__}: {error}"


def lost_runs(runs: Sequence[Run]) -> str:
    """Which finished runs were not stored: each id, with its case and trial where it has them."""
    named = [
        run.id if run.case_id is None else f"{run.id} (case {run.case_id}, trial {run.trial})" for run in runs
    ]
    plural = "s" if len(runs) != 1 else ""
    return f"{len(runs)} finished run{plural} could not be stored and {'are' if plural else 'is'} lost: " + (
        ", ".join(named)
    )


class BatchWriter:
    """Collects finished runs and writes them in batches; ``run`` does a pool's jobs while it writes what
    finishes every ``every_s`` seconds (or every ``batch`` runs). Runs added together (a conversation's
    turns) land in the same batch. A write that fails is retried run by run, so one run that does not
    fit costs only itself; what still cannot be written is ``unwritten``."""

    def __init__(
        self,
        store: Store,
        *,
        every_s: float = WRITE_EVERY_S,
        batch: int = WRITE_BATCH,
        limit: int = WAITING_LIMIT,
    ) -> None:
        self.store = store
        self.every_s, self.batch, self.limit = every_s, batch, limit
        self.pending: list[Run] = []
        self.unwritten: list[Run] = []
        """Finished runs whose write failed (tried again with each later batch)."""
        self.written = 0
        self.failure: BaseException | None = None
        """The first failure, of a write or of a job: the one reported."""
        self._due: anyio.Event | None = None
        self._written: anyio.Event | None = None
        """Set when a write finishes, for the jobs waiting on it (``_room``)."""

    def add(self, runs: Iterable[Run]) -> None:
        """Queue finished runs; a full batch is written at once (by ``run``'s writer, when running)."""
        self.pending.extend(runs)
        if len(self.pending) >= self.batch:
            if self._due is None:
                self.flush()
            else:
                self._due.set()

    def flush(self) -> None:
        """Write every queued run now (and those that failed before). A store that cannot be written is
        kept as ``failure``, never raised: the runs stay in ``unwritten``."""
        self._write(self._take())

    def _take(self) -> list[Run]:
        """What is to be written now, taken in the event loop's thread (where runs are added)."""
        batch, self.pending, self.unwritten = self.unwritten + self.pending, [], []
        return batch

    def _write(self, batch: list[Run]) -> None:
        if not batch:
            return
        try:
            self.store.put_many(batch)
        except MachineError:  # the store (a full disk), or one run it refuses (a bad name)
            for run in batch:  # as many as still fit, one transaction each
                try:
                    self.store.put(run)
                except MachineError as error:
                    self._fail(error)
                    self.unwritten.append(run)
                else:
                    self.written += 1
        else:
            self.written += len(batch)

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error

    async def run(
        self, jobs: Sequence[J], work: Callable[[J], Awaitable[str | None]], *, concurrency: int
    ) -> str | None:
        """``run_pool`` with the finished runs written as they finish, and all of them written (or named
        as lost) before it returns, even when cancelled. A failure stops new jobs while those in flight
        finish, then raises WorkFailed with the first one; a bug in a job is raised as it is."""

        async def guarded(job: J) -> str | None:
            if self.failure is not None:
                return said(self.failure)
            try:
                reason = await work(job)
            except (BudgetExceeded, BrokenPipeError):  # the budget, or the reader gone: not the store's
                raise
            except (OSError, MachineError) as error:
                self._fail(error)
                return said(error)
            await self._room()
            return reason

        stopped: str | None = None
        bug: Exception | None = None
        self._due = anyio.Event()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._write_every)
                try:
                    stopped = await run_pool(jobs, guarded, concurrency=concurrency)
                except Exception as error:  # raised below, once the finished runs are written
                    bug = error
                group.cancel_scope.cancel()
        finally:
            self._due = None
            await self._write_taken()
        if bug is not None:
            if self.unwritten:
                bug.add_note(lost_runs(self.unwritten))
            raise bug
        if self.failure is not None:
            raise self.failed()
        return stopped

    async def _room(self) -> None:
        """Wait while the finished runs waiting to be written are at the limit: jobs that finish faster
        than the store takes them wait for the write in flight, instead of queueing without bound."""
        while self._due is not None and len(self.pending) >= self.limit:
            self._due.set()
            if self._written is None:
                self._written = anyio.Event()
            await self._written.wait()

    async def _write_every(self) -> None:
        """Write what finished, every ``every_s`` seconds or as soon as a batch is full."""
        while self._due is not None:
            with anyio.move_on_after(self.every_s):
                await self._due.wait()
            if self._due is not None:
                self._due = anyio.Event()
            await self._write_taken()

    async def _write_taken(self) -> None:
        """Write what waits, off the event loop (a batch of big runs takes longer than a loop may wait).
        Shielded from the moment the batch is taken: a cancel landing before its thread starts would
        otherwise drop runs that are no longer pending and not yet written."""
        with anyio.CancelScope(shield=True):
            batch = self._take()
            if batch:
                await anyio.to_thread.run_sync(self._write, batch)
            written, self._written = self._written, None
            if written is not None:
                written.set()

    def failed(self) -> WorkFailed:
        """The first failure, with the finished runs it cost."""
        assert self.failure is not None
        if self.unwritten:
            lost = lost_runs(self.unwritten)
        else:
            lost = f"every finished run ({self.written}) was stored"
        return WorkFailed(f"{said(self.failure)}; {lost}", cause=self.failure, lost=list(self.unwritten))
