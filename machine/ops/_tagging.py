"""Tags, observed runs and corrections, as every face lists and makes them: the newest marked or observed
runs as ``MarkedRun`` rows, and a run made again with a person's correction (``machine fork``)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import Field

from machine.errors import BadInputError, Fix, NotFoundError
from machine.measure import MeasureOptions
from machine.runs import Model, Run, Tag
from machine.workspace import observed_runs, observing, tagged_runs

if TYPE_CHECKING:
    from machine.workspace import Workspace

PREVIEW = 100
"""How many characters of a run's input and output a row keeps."""


class MarkedRun(Model):
    """A stored run as a listing of tags or observations shows it."""

    id: str
    machine: str
    created_at: datetime
    status: str
    model: str
    harness: str
    input_preview: str
    output_preview: str
    tags: list[Tag] = Field(default_factory=list)
    observed: bool = False
    forked_from: str | None = None
    correction: str | None = None

    @classmethod
    def of(cls, run: Run) -> MarkedRun:
        return cls(
            id=run.id,
            machine=run.machine,
            created_at=run.created_at,
            status=run.status,
            model=run.model,
            harness=run.harness,
            input_preview=run.input[:PREVIEW],
            output_preview=run.output[:PREVIEW],
            tags=run.tags,
            observed=run.observed,
            forked_from=run.forked_from,
            correction=run.correction,
        )


class WorkspaceData(Model):
    """Where a workspace keeps what its runs hold, and how much of it a person marked."""

    workspace: str
    store: str
    runs: int
    good: int
    bad: int
    corrections: int
    """Corrections noted on runs (``/correct``)."""
    corrected: int
    """Runs made again with a correction (``machine fork``, ``machine correction``)."""
    observed: int
    observing: bool


def data(ws: Workspace) -> WorkspaceData:
    """The workspace's store and its counts of marked, corrected and observed runs."""
    store = ws.store
    verdicts: Counter[str] = Counter()
    corrections = 0
    for run in store.iter_newest_with('"kind":"'):
        verdicts[run.verdict.kind if run.verdict else ""] += 1
        corrections += sum(t.kind == "correction" for t in run.tags)
    return WorkspaceData(
        workspace=str(ws.root),
        store=str(ws.data_dir / "store.db"),
        runs=store.count(),
        good=verdicts["good"],
        bad=verdicts["bad"],
        corrections=corrections,
        corrected=sum(1 for r in store.iter_newest_with('"forked_from":"') if r.forked_from),
        observed=sum(1 for r in store.iter_newest_with('"observed":true') if r.observed),
        observing=observing(ws.data_dir),
    )


def _known(ws: Workspace, name: str | None) -> None:
    if name is not None and name not in ws.names():
        ws.load(name)  # raises, listing the known machines


def tagged(ws: Workspace, name: str | None = None, limit: int = 20) -> list[MarkedRun]:
    """The newest ``limit`` runs a person marked (of machine ``name``), newest first."""
    _known(ws, name)
    return [MarkedRun.of(run) for run in tagged_runs(ws.store, name, limit)]


def observed(ws: Workspace, name: str | None = None, limit: int = 20) -> list[MarkedRun]:
    """The newest ``limit`` observed runs (of machine ``name``), newest first."""
    _known(ws, name)
    return [MarkedRun.of(run) for run in observed_runs(ws.store, name, limit)]


def corrected_input(run: Run, note: str) -> str:
    """What the corrected run is asked: the original input, the answer it got, and the correction."""
    answer = run.output or f"(no answer: {run.error or 'none was given'})"
    return f"{run.input}\n\nAn earlier answer to this was:\n{answer}\n\nCorrection: {note}"


def to_correct(ws: Workspace, run_id: str | None) -> Run:
    """The run ``run_id``, or else the newest observed run."""
    if run_id is not None:
        return ws.store.get(run_id)
    newest = observed_runs(ws.store, None, 1)
    if not newest:
        raise NotFoundError(
            "there is no observed run to fork: observed runs are the ones outside hosts make through the "
            "MCP server while the workspace observes (turn observing on first)",
            fixes=[
                Fix(operation="correction", arguments=(("run_id", "ID"),), purpose="corrects a stored run")
            ],
        )
    return newest[0]


async def fork(
    ws: Workspace,
    note: str,
    run_id: str | None = None,
    *,
    grade: bool = False,
    pass_score: float = MeasureOptions.default("pass_score"),
    model: str | None = None,
) -> Run:
    """Run the machine of run ``run_id`` (by default the newest observed run) again, on its input with the
    person's correction ``note`` added, and store the new run linked to the old one: the pair is a
    preference (the corrected answer over the original) for ``export --pairs``."""
    if not note.strip():
        raise BadInputError("a correction needs a note saying what should change, e.g. answer in one line")
    original = to_correct(ws, run_id)
    spec = ws.load(original.machine)
    files = (original.case or {}).get("files") or None
    made = await ws.run(
        spec,
        corrected_input(original, note.strip()),
        history=list(original.history),
        files=files,
        model=model,
        grade=grade,
        pass_score=pass_score,
        store=False,
    )
    linked = made.model_copy(update={"forked_from": original.id, "correction": note.strip()})
    ws.store.put(linked)
    return linked
