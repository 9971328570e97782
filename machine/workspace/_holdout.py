"""A machine's held-out cases, read one way for every learner and the gate: a list given, a file named,
or ``holdout.json`` beside the machine. Whether having none is an error is the caller's to say."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from machine.spec import Case, load_cases

from ._files import folder_cases_file
from ._workspace import Workspace

HOLDOUT_FILE = "holdout.json"


class HeldOut(NamedTuple):
    """The held-out cases, the file they came from (None for a list given) and how a report names it."""

    cases: list[Case]
    path: Path | None
    label: str


def held_out(ws: Workspace, name: str, given: str | Path | Sequence[Case] | None = None) -> HeldOut | None:
    """``given`` (a list of cases, or a file in the machine's folder), else machine ``name``'s
    holdout.json; None when no list or file is given and the machine has no holdout.json. A file outside
    the machine's folder is refused (``folder_cases_file``)."""
    if given is not None and not isinstance(given, (str, Path)):
        return HeldOut(list(given), None, "(given)")
    folder = ws.machines_dir / name
    if given is None and not (folder / HOLDOUT_FILE).exists():
        return None
    path = folder_cases_file(folder, name, given, default=HOLDOUT_FILE, what="held-out")
    return HeldOut(load_cases(path), path, path.name if given is None else Path(given).as_posix())
