"""What a store promises, by concern: runs, chat sessions, suites, what the learners select from, and a
viewer's reads. ``Store`` is all of them, what a workspace holds; code that needs one part may ask for the
smaller protocol. ``SQLiteStore`` (embedded) and ``machine.clients.postgres.PostgresStore`` keep them all.

Every listing is bounded or paged: it reads along an index, so it costs the same at a hundred runs and at
a million, and an iterator holds one page in memory at a time. Every write is an upsert by id (or name)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from ._failing import FailingGrade
from ._health import HEALTH_WINDOW, MachineHealth
from ._records import Run
from ._rows import ChatSession, RunFilter, RunSummary, SuiteRecord
from ._statements import TREND_LIMIT
from ._views import Choices, RunPage, TrendPoint


class RunStore(Protocol):
    """Runs: written whole, read by id, listed newest first, walked in pages, found by a mark."""

    def ready_to_write(self) -> None:
        """Nothing, or ``StoreError`` when the store cannot take a write (read-only, damaged, unreachable)."""
        ...

    def put(self, run: Run) -> None:
        """Store ``run``, replacing the stored run with its id; a bad machine name or id is refused."""
        ...

    def put_many(self, runs: Iterable[Run]) -> None:
        """``put`` for many runs in one transaction: all of them are written, or (on any refusal, or an
        error raised by ``runs`` while it is read) none. Every run is read before any is written."""
        ...

    def get(self, run_id: str) -> Run:
        """The run with id ``run_id``; ``NotFoundError`` when there is none."""
        ...

    def runs(self, machine: str, limit: int = 20) -> list[Run]:
        """The newest ``limit`` runs of ``machine``, newest first (an index walk, bounded by ``limit``)."""
        ...

    def summaries(self, machine: str, limit: int = 20) -> list[RunSummary]:
        """``runs`` as ``RunSummary`` rows, newest first, read without validating any run."""
        ...

    def iter_runs(self, machine: str | None = None) -> Iterator[Run]:
        """Every run (of ``machine``), oldest first, read in pages so memory stays flat."""
        ...

    def iter_newest_with(self, text: str, machine: str | None = None) -> Iterator[Run]:
        """The runs (of ``machine``) whose JSON holds ``text``, newest first, in pages: a superset."""
        ...

    def count(self, machine: str | None = None) -> int:
        """How many runs (of ``machine``) are stored."""
        ...

    def close(self) -> None:
        """Release the store's connection; the store is not used after."""
        ...


class SessionStore(Protocol):
    """Named chat sessions: what ``--continue`` resumes, one a name."""

    def put_session(self, session: ChatSession) -> None:
        """Store ``session``, replacing the stored one with its name; a bad name is refused first."""
        ...

    def get_session(self, name: str) -> ChatSession:
        """The session called ``name``; ``NotFoundError`` when there is none."""
        ...

    def latest_session(self, machine: str) -> ChatSession | None:
        """The session with ``machine`` updated last, or None."""
        ...

    def iter_sessions(self) -> Iterator[ChatSession]:
        """Every session, by name."""
        ...


class SuiteStore(Protocol):
    """Suite invocations: what ``--resume`` needs, and the runs each one made."""

    def put_suite(self, suite: SuiteRecord) -> None:
        """Store ``suite``, replacing the stored one with its id; a bad machine name or id is refused."""
        ...

    def get_suite(self, suite_id: str) -> SuiteRecord:
        """The suite with id ``suite_id``; ``NotFoundError`` when there is none."""
        ...

    def latest_suite(self, machine: str, key: str) -> SuiteRecord | None:
        """The newest suite of ``machine`` over the same cases and trials (``key``), or None."""
        ...

    def iter_suite_runs(self, suite_id: str) -> Iterator[Run]:
        """Every run of one suite, oldest first, in pages (an index walk, not a scan)."""
        ...

    def iter_suites(self) -> Iterator[SuiteRecord]:
        """Every suite record, oldest first."""
        ...


class TrainingStore(Protocol):
    """What the learners select examples from (``machine.learn.train``'s selection)."""

    def iter_learnable(self, machine: str, *, min_score: float | None, marks: Sequence[str]) -> Iterator[Run]:
        """The finished runs of ``machine``, oldest first, in pages, scoring at least ``min_score`` or
        perhaps carrying one of ``marks``: a superset chosen before any run is parsed."""
        ...

    def tally(self, machine: str) -> tuple[int, int]:
        """How many runs of ``machine`` are stored, and how many of them finished."""
        ...


class ViewStore(Protocol):
    """A viewer's reads (the dashboard, a host's completions): each bounded in the rows it reads."""

    def page(self, chosen: RunFilter, *, cursor: str | None = None, limit: int = 50) -> RunPage:
        """Up to ``limit`` summaries matching ``chosen``, newest first, after ``cursor``, reading at most
        ``WINDOW`` rows: a sparse filter answers with a cursor past the window."""
        ...

    def trend(self, machine: str, limit: int = TREND_LIMIT) -> list[TrendPoint]:
        """The newest ``limit`` runs of ``machine``, oldest first: when, how well, at what cost."""
        ...

    def case_means(
        self, machine: str, *, version: str | None = None, suite_id: str | None = None
    ) -> dict[str, tuple[float, int]]:
        """Each case's mean score and scored runs over one version or one suite (a failed run counts 0)."""
        ...

    def choices(self, machine: str) -> Choices:
        """The cases, models, versions and newest suites of ``machine``'s newest runs, to filter by."""
        ...

    def machine_counts(self) -> dict[str, int]:
        """Every machine with runs in the store, and how many."""
        ...

    def health(self, machine: str, window: int = HEALTH_WINDOW) -> MachineHealth:
        """How ``machine`` does over its newest ``window`` runs: mean, pass rate, unscored, spend, a
        trend and each criterion's fails, summed by the store along its index (``MachineHealth``)."""
        ...

    def failing(self, machine: str, window: int = HEALTH_WINDOW) -> list[FailingGrade]:
        """Each grade scored below its run's pass score, and each failed run, among ``machine``'s newest
        ``window`` runs, newest first: a few fields of each, read along the store's index
        (``FailingGrade``)."""
        ...

    def data_version(self) -> int:
        """A number that changes whenever another connection writes the store, read without reading runs."""
        ...


class Store(RunStore, SessionStore, SuiteStore, TrainingStore, ViewStore, Protocol):
    """Where runs, chat sessions and suites are kept: every part at once, what a workspace holds.
    ``SQLiteStore`` is the default; ``open_store`` picks one by location."""


STORE_PROTOCOLS: tuple[type, ...] = (RunStore, SessionStore, SuiteStore, TrainingStore, ViewStore)
"""The parts of ``Store``, one a concern."""


__all__ = ["STORE_PROTOCOLS", "RunStore", "SessionStore", "Store", "SuiteStore", "TrainingStore", "ViewStore"]
