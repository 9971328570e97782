"""The runs ``agree`` found its graders disagreeing on, kept for a person to look at: the newest report's
disagreements, per machine and criterion, in ``.machine/agreements/NAME.json``. A review (the dashboard's
queue) walks them; a person's mark on one says which grader was right."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from machine._data import Model
from machine.runs import atomic_text, now
from machine.workspace import Workspace

from ._agreement_report import AgreementReport

FOLDER = "agreements"
MOST_KEPT = 500
"""The most disagreements kept per criterion: the widest gaps first, as the report sorts them."""


class Disagreements(Model):
    """One criterion's newest disagreements."""

    criterion: str
    reference: str
    candidate: str
    at: datetime
    runs: list[str]
    """Run ids, the widest gap first."""


def _path(ws: Workspace, machine: str) -> Path:
    return ws.data_dir / FOLDER / f"{machine}.json"


def kept(ws: Workspace, machine: str) -> dict[str, Disagreements]:
    """Each criterion's newest disagreements of ``machine``; nothing when none were kept (or the file is
    not one this wrote: it is rewritten by the next ``agree``)."""
    try:
        with open(_path(ws, machine), encoding="utf-8") as handle:
            raw = json.load(handle)
        return {name: Disagreements.model_validate(entry) for name, entry in dict(raw).items()}
    except (OSError, ValueError, TypeError, ValidationError):
        return {}


def keep(ws: Workspace, report: AgreementReport) -> None:
    """Keep ``report``'s disagreements as its criterion's newest, beside the other criteria's."""
    found = kept(ws, report.machine)
    found[report.criterion] = Disagreements(
        criterion=report.criterion,
        reference=report.reference_grader,
        candidate=report.candidate.grader,
        at=now(),
        runs=[d.run_id for d in report.disagreements[:MOST_KEPT]],
    )
    path = _path(ws, report.machine)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_text(path, private=True) as handle:
            handle.write(json.dumps({k: v.model_dump(mode="json") for k, v in found.items()}, indent=1))
    except OSError:  # the report stands without them: a review only misses this list
        pass


def disagreeing(ws: Workspace, machine: str) -> list[str]:
    """The run ids of ``machine``'s kept disagreements, every criterion's, each once."""
    seen: dict[str, None] = {}
    for entry in kept(ws, machine).values():
        seen.update(dict.fromkeys(entry.runs))
    return list(seen)


__all__ = ["Disagreements", "disagreeing", "keep", "kept"]
