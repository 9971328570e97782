"""Moving a workspace's history from one store to another (``machine store copy``): every run, suite and
chat session, in batches, as upserts, and the spending log (a SQLite store's is the ``spending.jsonl``
beside it; a PostgreSQL store keeps its own), each line once, so a copy stopped part way is finished by
running it again and a second copy changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from pathlib import Path

from machine.errors import BadInputError
from machine.runs import Model, Store, mask_passwords, open_store, store_claiming

from ._spending_log import log_of

BATCH = 1_000
"""Runs written in one transaction."""


class StoreCopy(Model):
    """What a copy moved, and between which stores (named without a password: ``mask_passwords``)."""

    source: str
    target: str
    runs: int
    suites: int
    sessions: int
    spending: int = 0
    """Spending-log lines the target did not have."""


def copy_store(source: str, target: str, *, on_runs: Callable[[int], None] | None = None) -> StoreCopy:
    """Copy everything ``source`` holds into ``target`` (each a ``postgresql://`` URL or a SQLite file);
    ``on_runs(n)`` is told how many runs are copied so far, after each batch."""
    if source == target:
        raise BadInputError(
            f"the source and the target are the same store: name two stores, not {mask_passwords(source)} "
            "twice"
        )
    stores: list[Store] = []
    try:
        stores.append(open_store(_existing(source)))
        stores.append(open_store(target))
        return _copy(stores[0], stores[1], on_runs)
    finally:
        for store in stores:
            store.close()


def _existing(source: str) -> str:
    """A file source (one no registered store claims by its scheme) must be there: opening a missing one
    would make an empty store."""
    if store_claiming(source) is None and not Path(source).expanduser().is_file():
        raise BadInputError(
            f"the source {mask_passwords(source)} is not a store file: name a workspace's "
            ".machine/store.db, or a postgresql:// URL"
        )
    return source


def _copy(source: Store, target: Store, on_runs: Callable[[int], None] | None) -> StoreCopy:
    runs = 0
    every = source.iter_runs()
    while batch := list(islice(every, BATCH)):
        target.put_many(batch)
        runs += len(batch)
        if on_runs is not None:
            on_runs(runs)
    suites = sessions = 0
    for suite in source.iter_suites():
        target.put_suite(suite)
        suites += 1
    for session in source.iter_sessions():
        target.put_session(session)
        sessions += 1
    return StoreCopy(
        source=mask_passwords(str(getattr(source, "path", ""))),
        target=mask_passwords(str(getattr(target, "path", ""))),
        runs=runs,
        suites=suites,
        sessions=sessions,
        spending=_copy_spending(source, target),
    )


def _copy_spending(source: Store, target: Store) -> int:
    """The source's spending-log lines the target lacks (by correlation id), appended oldest first."""
    into = log_of(target, _folder(target))
    known = {entry.get("correlation_id") for entry in into.every()}
    new = [e for e in log_of(source, _folder(source)).every() if e.get("correlation_id") not in known]
    for entry in new:
        into.append(entry)
    return len(new)


def _folder(store: Store) -> Path:
    """The folder a SQLite store's file is in (where its workspace's spending log is)."""
    return Path(str(getattr(store, "path", "."))).parent


__all__ = ["StoreCopy", "copy_store"]
