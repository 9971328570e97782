"""A machine's held-out cases, read one way for every learner and the gate: a list given, a file named,
or ``holdout.json`` beside the machine. Whether having none is an error is the caller's to say."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from machine.spec import Case, load_cases

from ._workspace import Workspace


class HeldOut(NamedTuple):
    """The held-out cases, the file they came from (None for a list given) and how a report names it."""

    cases: list[Case]
    path: Path | None
    label: str


def held_out(ws: Workspace, name: str, given: str | Path | Sequence[Case] | None = None) -> HeldOut | None:
    """``given`` (a list of cases, or a file), else machine ``name``'s holdout.json; None when no list or
    file is given and the machine has no holdout.json."""
    if given is not None and not isinstance(given, (str, Path)):
        return HeldOut(list(given), None, "(given)")
    path = ws.cases_file(name, given, default="holdout.json")
    if given is None and not path.exists():
        return None
    return HeldOut(load_cases(path), path, path.name if given is None else Path(given).as_posix())
