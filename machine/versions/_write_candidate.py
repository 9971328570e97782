"""A candidate written into the machine's files: ``optimize`` writes the instructions it keeps to
instructions.md and records them as a pending version with their report, leaving both for the person to
accept (``commit``, or a git commit) or reject (``revert``, or ``git checkout``)."""

from __future__ import annotations

from machine.errors import BadInputError
from machine.spec import (
    INSTRUCTIONS_FILE,
    VERSIONS_FILE,
    GateReport,
    Version,
    identity_of,
    open_book,
    require_live,
    sha256_text,
    write_book,
)
from machine.workspace import Workspace

from ._lifecycle import _instructions_problem, _write_and_check


def _labelled(report: GateReport, label: str) -> GateReport:
    """``report`` with its candidate side named ``label`` (it was measured under a proposal's name)."""
    after = report.after.model_copy(update={"version": label})
    held = None if report.holdout is None else _labelled(report.holdout, label)
    return report.model_copy(update={"candidate": label, "after": after, "holdout": held})


def write_candidate(
    ws: Workspace, name: str, *, instructions: str, report: GateReport, note: str = ""
) -> Version:
    """Write ``instructions`` (the machine's own) to instructions.md and record them as a pending
    candidate of the live version with ``report``; an earlier pending candidate with the same
    instructions is reused. The machine must take its instructions from instructions.md and match its
    live version, or nothing is written."""
    text = instructions.strip()
    if not text:
        raise BadInputError(f"machine {name!r}: a candidate's instructions must not be empty")
    spec = ws.reload(name)
    folder = ws.machines_dir / name
    book = open_book(folder, spec)
    live = require_live(book, spec, "have a candidate written into its files")
    data = (text + "\n").encode("utf-8")
    spec = _write_and_check(
        ws, name, {INSTRUCTIONS_FILE: data}, lambda loaded: _instructions_problem(loaded, text)
    )
    identity = identity_of(spec)
    files = dict(live.files)
    key = sha256_text(text + "\n")
    files[INSTRUCTIONS_FILE] = key
    book.texts.setdefault(key, text + "\n")
    same = [v for v in book.versions if v.status == "pending" and v.identity == identity]
    found = next((v for v in same if v.base == live.number), None)
    if found is None:
        found = Version(
            number=book.next_number(),
            status="pending",
            model=live.model,
            base_model=live.base_model,
            instructions_sha=identity[0],
            rubric=identity[2],
            files=files,
            base=live.number,
        )
        book.versions.append(found)
    found.report = _labelled(report, found.label)
    found.files, found.note = files, note or found.note
    write_book(folder / VERSIONS_FILE, book)
    return found
