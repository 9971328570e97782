"""What every SQL store does the same way, on the statements of its dialect (``Statements``): reads,
paged walks, the suite and session records, the viewer's reads. A store gives its connection's reader
(``_rows``), its one-row writer (``_write``), how it is named in messages, and what only it can do: open,
check, write runs, say when another process wrote, close."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from machine.errors import Fix, NotFoundError

from ._failing import FailingGrade
from ._failing import failing as failing_of
from ._health import HEALTH_WINDOW, MachineHealth
from ._health import health as health_of
from ._names import check_name
from ._records import Run
from ._rows import ChatSession, RunFilter, RunSummary, SuiteRecord, summary_row, utc_text
from ._statements import PAGE_SIZE, TREND_LIMIT, Statements
from ._views import Choices, RunPage, TrendPoint, choices_of, points
from ._views import page as page_of


class SQLStore:
    """The shared half of a store over SQL; ``SQLiteStore`` and ``PostgresStore`` are the two."""

    sql: ClassVar[Statements]
    """The store's statements, in its dialect."""

    @property
    def location(self) -> str:
        """How the store is named in messages (a file, or a URL with its password hidden)."""
        raise NotImplementedError

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows ``statement`` answers; the engine's failures said as the store's (``StoreError``)."""
        raise NotImplementedError

    def _write(self, statement: str, params: Sequence[Any]) -> None:
        """Run one writing statement, once the store is known to be writable."""
        raise NotImplementedError

    # --- runs ---------------------------------------------------------------------------------------------

    def get(self, run_id: str) -> Run:
        """The run with id ``run_id``; ``NotFoundError`` when there is none."""
        found = self._rows(self.sql.get_run, (run_id,))
        if not found:
            listed = Fix(operation="runs", purpose="lists them")
            raise NotFoundError(f"there is no run {run_id!r} in {self.location}", fixes=[listed])
        return Run.model_validate_json(found[0][0])

    def runs(self, machine: str, limit: int = 20) -> list[Run]:
        """The newest ``limit`` runs of ``machine``, newest first."""
        return [
            Run.model_validate_json(data) for (data,) in self._rows(self.sql.newest_runs, (machine, limit))
        ]

    def summaries(self, machine: str, limit: int = 20) -> list[RunSummary]:
        """``runs`` for a listing: the newest ``limit`` runs of ``machine`` as ``RunSummary`` rows, newest
        first, read from the index and a few JSON fields (no run is validated, no trajectory built)."""
        return [summary_row(*row) for row in self._rows(self.sql.newest_summaries, (machine, limit))]

    def _pages(self, statement: str, head: Sequence[Any], after: tuple[str, str] = ("", "")) -> Iterator[Run]:
        """The runs of a paged walk (``statement`` with ``head``, then the last row's (created_at, id)),
        page by page, so memory stays flat however many there are."""
        while True:
            rows = self._rows(statement, (*head, *after))
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                after = (created_at, run_id)
            if len(rows) < PAGE_SIZE:
                return

    def iter_runs(self, machine: str | None = None) -> Iterator[Run]:
        """Every run (of ``machine``), oldest first, read in pages so memory stays flat."""
        if machine is None:
            return self._pages(self.sql.page_runs, ())
        return self._pages(self.sql.page_machine_runs, (machine,))

    def iter_newest_with(self, text: str, machine: str | None = None) -> Iterator[Run]:
        """The runs (of ``machine``) whose stored JSON holds ``text``, newest first, in pages along the
        time index: a superset the caller filters (``"observed":true``), read only as far as it asks."""
        statement = self.sql.newest_with(scoped=machine is not None)
        return self._pages(statement, (*([] if machine is None else [machine]), text), ("\uffff", ""))

    def count(self, machine: str | None = None) -> int:
        """How many runs (of ``machine``) are stored."""
        if machine is None:
            return int(self._rows(self.sql.count)[0][0])
        return int(self._rows(self.sql.count_machine, (machine,))[0][0])

    # --- training selection -------------------------------------------------------------------------------

    def iter_learnable(self, machine: str, *, min_score: float | None, marks: Sequence[str]) -> Iterator[Run]:
        """The finished runs of ``machine``, oldest first, that score at least ``min_score`` or may carry
        one of ``marks`` (a person's ``good``/``bad``): what export and train read. A superset, decided on
        the row's columns and text before any run is parsed, so runs that cannot qualify cost nothing."""
        statement, wanted = self.sql.learnable(min_score, tuple(marks))
        return self._pages(statement, (machine, *wanted))

    def tally(self, machine: str) -> tuple[int, int]:
        """How many runs of ``machine`` are stored, and how many of them finished."""
        [(stored, finished)] = self._rows(self.sql.tally, (machine,))
        return int(stored), int(finished or 0)

    # --- suites -------------------------------------------------------------------------------------------

    def iter_suite_runs(self, suite_id: str) -> Iterator[Run]:
        """Every run of one suite invocation, oldest first, in pages (an index walk, not a scan)."""
        return self._pages(self.sql.page_suite_runs, (suite_id,))

    def put_suite(self, suite: SuiteRecord) -> None:
        """Store ``suite``, or replace the stored one with its id."""
        check_name(suite.machine)
        check_name(suite.id, "suite id")
        row = (suite.id, suite.machine, suite.key, utc_text(suite.created_at), suite.model_dump_json())
        self._write(self.sql.upsert_suite, row)

    def get_suite(self, suite_id: str) -> SuiteRecord:
        """The suite with id ``suite_id``; ``NotFoundError`` when there is none."""
        found = self._rows(self.sql.get_suite, (suite_id,))
        if not found:
            raise NotFoundError(f"there is no suite {suite_id!r} in {self.location}")
        return SuiteRecord.model_validate_json(found[0][0])

    def latest_suite(self, machine: str, key: str) -> SuiteRecord | None:
        """The newest suite of ``machine`` over the same cases and trials (``key``)."""
        found = self._rows(self.sql.latest_suite, (machine, key))
        return SuiteRecord.model_validate_json(found[0][0]) if found else None

    def iter_suites(self) -> Iterator[SuiteRecord]:
        """Every suite record, oldest first."""
        return (SuiteRecord.model_validate_json(data) for (data,) in self._rows(self.sql.suites))

    # --- chat sessions ------------------------------------------------------------------------------------

    def put_session(self, session: ChatSession) -> None:
        """Store ``session``, or replace the stored one with its name."""
        check_name(session.name, "session name")
        check_name(session.machine)
        row = (session.name, session.machine, utc_text(session.updated_at), session.model_dump_json())
        self._write(self.sql.upsert_session, row)

    def get_session(self, name: str) -> ChatSession:
        """The chat session called ``name``; ``NotFoundError`` when there is none."""
        found = self._rows(self.sql.get_session, (name,))
        if not found:
            raise NotFoundError(f"there is no chat session {name!r}")
        return ChatSession.model_validate_json(found[0][0])

    def latest_session(self, machine: str) -> ChatSession | None:
        """The chat session with ``machine`` updated last, if any."""
        found = self._rows(self.sql.latest_session, (machine,))
        return ChatSession.model_validate_json(found[0][0]) if found else None

    def iter_sessions(self) -> Iterator[ChatSession]:
        """Every chat session, by name (there are few: one a name)."""
        return (ChatSession.model_validate_json(data) for (data,) in self._rows(self.sql.sessions))

    # --- a viewer's reads ---------------------------------------------------------------------------------

    def page(self, chosen: RunFilter, *, cursor: str | None = None, limit: int = 50) -> RunPage:
        """A page of run summaries matching ``chosen``, newest first (``_views.page``: bounded reads)."""
        return page_of(self._rows, self.sql, chosen, cursor=cursor, limit=limit)

    def trend(self, machine: str, limit: int = TREND_LIMIT) -> list[TrendPoint]:
        """The newest ``limit`` runs of ``machine``, oldest first: when, how well, at what cost."""
        return points(self._rows(self.sql.trend, (machine, limit)))

    def case_means(
        self, machine: str, *, version: str | None = None, suite_id: str | None = None
    ) -> dict[str, tuple[float, int]]:
        """Each case's mean score and scored runs, over the runs of one version of ``machine`` or of one
        suite; a failed run counts as 0 on its side (as the gate counts it), an unscored one not at all."""
        if (version is None) == (suite_id is None):
            raise ValueError("give a version or a suite")
        rows = self._rows(self.sql.case_means(by_suite=suite_id is not None), (machine, suite_id or version))
        return {case: (float(mean), int(n)) for case, mean, n in rows if n}

    def choices(self, machine: str) -> Choices:
        """What ``machine``'s runs can be filtered and compared by (``Choices``)."""
        rows = self._rows(self.sql.choices, (machine,))
        return choices_of(rows, self._rows(self.sql.choice_suites, (machine,)))

    def machine_counts(self) -> dict[str, int]:
        """Every machine with runs in the store, and how many (one walk of the machine index)."""
        return {m: int(n) for m, n in self._rows(self.sql.machine_counts)}

    def health(self, machine: str, window: int = HEALTH_WINDOW) -> MachineHealth:
        """How ``machine`` does over its newest ``window`` runs (``_health``: summed by the database)."""
        return health_of(self._rows, self.sql, machine, window)

    def failing(self, machine: str, window: int = HEALTH_WINDOW) -> list[FailingGrade]:
        """What fails among ``machine``'s newest ``window`` runs (``_failing``: a few fields a run)."""
        return failing_of(self._rows, self.sql, machine, window)


__all__ = ["SQLStore"]
