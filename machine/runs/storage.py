"""What a store adapter shares with the embedded SQLite store, so a second store keeps the same rows and
answers the same way.

- The protocols it keeps: ``Store``, the union of ``RunStore``, ``SessionStore``, ``SuiteStore``,
  ``TrainingStore`` and ``ViewStore`` (``STORE_PROTOCOLS``).
- For a store over SQL, nearly all of it: ``SQLStore`` implements every read, the suite and session
  records and a viewer's reads on the ``Statements`` of a ``Dialect`` (``SQLITE`` is the embedded one's);
  an adapter gives its dialect, its connection's reader and writer, and what only it can do (open, write
  runs, ``data_version``, close).
- The rows and records: a run's row and summary, timestamps as stored, the suite and session records.
- A viewer's pieces, for any store: the page algorithm over a reader (``page``), paging cursors, trend
  points and choices, a machine's figures at a glance (``health``) and what fails in it (``failing``), and
  the bounds (``PAGE_SIZE``, ``WINDOW``, ``TREND_LIMIT``, ``HEALTH_WINDOW``).
- How a store's location is shown with its password hidden.
"""

from __future__ import annotations

from ._dialect import SQLITE, Dialect
from ._failing import RUN_FAILED, FailingGrade, failing
from ._health import HEALTH_SLICES, HEALTH_WINDOW, CriterionHealth, MachineHealth, health
from ._names import check_name
from ._rows import ChatSession, RunFilter, RunSummary, SuiteRecord, run_row, summary_row, utc_text
from ._sql_store import SQLStore
from ._statements import PAGE_SIZE, Statements
from ._store_protocols import (
    STORE_PROTOCOLS,
    RunStore,
    SessionStore,
    Store,
    SuiteStore,
    TrainingStore,
    ViewStore,
)
from ._store_url import HIDDEN, is_conninfo, mask_passwords
from ._views import (
    TREND_LIMIT,
    WINDOW,
    Choices,
    Query,
    RunPage,
    TrendPoint,
    choices_of,
    cursor_of,
    page,
    parse_cursor,
    points,
)

__all__ = [
    "HEALTH_SLICES",
    "HEALTH_WINDOW",
    "HIDDEN",
    "PAGE_SIZE",
    "RUN_FAILED",
    "SQLITE",
    "STORE_PROTOCOLS",
    "TREND_LIMIT",
    "WINDOW",
    "ChatSession",
    "Choices",
    "CriterionHealth",
    "Dialect",
    "FailingGrade",
    "MachineHealth",
    "Query",
    "RunFilter",
    "RunPage",
    "RunStore",
    "RunSummary",
    "SQLStore",
    "SessionStore",
    "Statements",
    "Store",
    "SuiteRecord",
    "SuiteStore",
    "TrainingStore",
    "TrendPoint",
    "ViewStore",
    "check_name",
    "choices_of",
    "cursor_of",
    "failing",
    "health",
    "is_conninfo",
    "mask_passwords",
    "page",
    "parse_cursor",
    "points",
    "run_row",
    "summary_row",
    "utc_text",
]
