"""What a person changes from the dashboard: a run marked good (with the answer it should have given, as
the chat's ``/good --as``) or bad with a note, a correction noted, or the run made again with the
correction (``machine correction``: a model call, spent only under the cap the person gave, from the
page's explicit request). Stored as the chat's marks are (``Workspace.tag``: one verdict a run), so
``machine tagged``, export and train see them; each change is a line of the spending log, by the
dashboard, with when and what."""

from __future__ import annotations

import secrets
from typing import Any, Literal

import anyio.to_thread
from pydantic import ConfigDict, Field

from machine.budget import Budget
from machine.errors import BadInputError, MachineError
from machine.ops import WorkspaceSpendingLog, fork
from machine.runs import Model, Run, now, timestamp
from machine.workspace import Workspace

NOTE_CHARS = 4_000
ANSWER_CHARS = 50_000
MOST_USD = 10.0
"""The highest cap a page may give a run made again; more is a command line's to spend."""


class MarkRequest(Model):
    """The body of ``POST /api/runs/{id}/marks``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["good", "bad", "correction"]
    note: str | None = Field(default=None, max_length=NOTE_CHARS)
    answer: str | None = Field(default=None, max_length=ANSWER_CHARS)
    """With ``good``: the final answer to learn instead of the run's own."""
    run_again: bool = False
    """With ``correction``: make the run again with the correction added (a model call)."""
    budget_usd: float | None = Field(default=None, gt=0, le=MOST_USD)
    """With ``run_again``: the most the new run may spend, as the person set it on the page."""


def _checked(request: MarkRequest) -> tuple[str | None, str | None]:
    """The note and answer, stripped; refused in words where the chat would refuse them."""
    note = (request.note or "").strip() or None
    answer = request.answer.strip() if request.answer is not None and request.answer.strip() else None
    if request.kind in ("bad", "correction") and note is None:
        example = "too terse" if request.kind == "bad" else "answer in one line"
        raise BadInputError(f"a {request.kind} mark needs a note saying why, e.g. {example}")
    if answer is not None and request.kind != "good":
        raise BadInputError(f"an answer goes with a good mark, not a {request.kind} one")
    if request.run_again and (request.kind != "correction" or request.budget_usd is None):
        raise BadInputError(
            "running a run again goes with a correction, and needs budget_usd: the most it may spend"
        )
    return note, answer


def audit(ws: Workspace, run: Run, tool: str, detail: str, spent_usd: float = 0.0, **more: Any) -> None:
    """The change as a line of the workspace's spending log: who (the dashboard), when, what."""
    entry: dict[str, object] = {
        "at": timestamp(now()),
        "correlation_id": f"dashboard-{secrets.token_hex(6)}",
        "tool": tool,
        "machine": run.machine,
        "run": run.id,
        "by": "dashboard",
        "spent_usd": spent_usd,
        "budget_usd": more.pop("budget_usd", None),
        "consent": {"how": "dashboard", "detail": detail},
        **more,
    }
    WorkspaceSpendingLog(ws).append(entry)


def words(kind: str, note: str | None, answer: str | None) -> str:
    said = f"marked {kind}"
    if answer is not None:
        said += " with the answer it should have given"
    return said + (f": {note[:200]}" if note else "")


def _marked(ws: Workspace, run_id: str, kind: str, note: str | None, answer: str | None) -> Run:
    marked = ws.tag(ws.store.get(run_id), kind, note, answer=answer)
    audit(ws, marked, "mark", words(kind, note, answer), kind=kind)
    return marked


async def mark(ws: Workspace, run_id: str, request: MarkRequest) -> dict[str, Any]:
    """Store the mark on run ``run_id`` and log it; with ``run_again``, make the corrected run too."""
    note, answer = _checked(request)
    marked = await anyio.to_thread.run_sync(_marked, ws, run_id, request.kind, note, answer)
    answered: dict[str, Any] = {"run": marked.id, "tags": [t.model_dump(mode="json") for t in marked.tags]}
    if request.run_again and note is not None and request.budget_usd is not None:
        capped = ws.using(budget=Budget(request.budget_usd))
        try:
            made = await fork(capped, note, marked.id)
        except MachineError as error:  # the mark is stored: say why the new run was not made
            answered["corrected"] = {"id": None, "status": "error", "error": str(error)}
            return answered
        detail = f"ran {marked.id} again with a correction as {made.id}"
        more = {"budget_usd": request.budget_usd, "made": made.id, "status": made.status}
        await anyio.to_thread.run_sync(lambda: audit(ws, marked, "correction", detail, made.cost_usd, **more))
        answered["corrected"] = {"id": made.id, "status": made.status, "error": made.error}
    return answered


__all__ = ["MarkRequest", "audit", "mark"]
