"""The review queue: the runs of a machine that wait for a person's verdict, newest first, one kind at a
time: ``failing`` (decided fails), ``unscored`` (graded with a criterion left UNSCORED),
``ungraded``, ``observed`` (what outside hosts ran, kept by ``machine serve``), and ``disagreeing`` (the
runs ``machine agree`` found its graders disagreeing on). A run marked good or bad has left the queue; a
correction alone leaves it waiting; an RL training's samples never join it. Each answer reads a bounded
number of runs and says where to go on."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any, Literal, get_args

from machine.errors import BadInputError, NotFoundError
from machine.measure import disagreeing
from machine.runs import Run, RunFilter, RunSummary
from machine.workspace import Workspace

Kind = Literal["failing", "unscored", "ungraded", "observed", "disagreeing"]
KINDS: tuple[str, ...] = get_args(Kind)
QUEUED = 20
"""The most runs one answer holds."""
READ = 1_000
"""The most runs one answer reads looking for them; ``next`` goes on from there."""
PAGE = 100
OUTCOMES = {"failing": "fail", "unscored": "unscored", "ungraded": "ungraded"}


def waiting(kinds: list[str]) -> bool:
    """Whether a run with these tags (kinds) still waits for a verdict."""
    return "good" not in kinds and "bad" not in kinds


def _by_outcome(
    ws: Workspace, machine: str, outcome: str, cursor: str | None
) -> tuple[list[RunSummary], str | None]:
    chosen = RunFilter(machine=machine, outcome=outcome, samples=False)
    found: list[RunSummary] = []
    read = 0
    while read < READ and len(found) < QUEUED:
        page = ws.store.page(chosen, cursor=cursor, limit=PAGE)
        read += max(len(page.runs), PAGE if page.window_full else 0)
        found += [r for r in page.runs if waiting(r.tags)]
        cursor = page.next
        if cursor is None:
            break
    return found, cursor


def _runs(ws: Workspace, ids: Iterator[str]) -> Iterator[Run]:
    for run_id in ids:
        try:
            yield ws.store.get(run_id)
        except NotFoundError:  # deleted since agree listed it
            continue


def queue(ws: Workspace, machine: str, kind: str, cursor: str | None = None) -> dict[str, Any]:
    """The next runs of ``machine``'s ``kind`` queue (``cursor``: where the last answer stopped)."""
    if kind not in KINDS:
        raise BadInputError(f"the review queue is one of {', '.join(KINDS)}, not {kind!r}")
    if kind in OUTCOMES:
        found, after = _by_outcome(ws, machine, OUTCOMES[kind], cursor)
        return {"kind": kind, "runs": [r.model_dump(mode="json") for r in found], "next": after}
    if kind == "observed":
        read = islice(ws.store.iter_newest_with('"observed":true', machine), READ)
        chosen: Iterator[Run] = (r for r in read if r.observed)
    else:
        chosen = _runs(ws, iter(disagreeing(ws, machine)[:READ]))
    kept = islice((r for r in chosen if r.verdict is None), QUEUED)
    return {"kind": kind, "runs": [RunSummary.of(r).model_dump(mode="json") for r in kept], "next": None}


__all__ = ["KINDS", "queue", "waiting"]
