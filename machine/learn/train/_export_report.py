"""What an export wrote (its report), and what both exports share: the held-out cases whose runs stay
out, and the error for a file that cannot be written."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from machine.errors import BadInputError, Fix
from machine.runs import Model
from machine.spec import Case, Machine
from machine.workspace import Workspace, held_out


class FunnelStep(Model):
    """One filter of the selection and how many runs it left."""

    keeps: str
    left: int


class ExportReport(Model):
    """What an export wrote, and what each filter left of the stored runs."""

    machine: str
    out: str
    runs: int
    rows: int
    per_turn: bool = False
    source: str | None = None
    """``--from``: the machine whose runs were exported as this one's."""
    stored: int = 0
    funnel: list[FunnelStep] = Field(default_factory=list)
    redacted: int = 0
    """Things that look like secrets replaced by a marker in what was written (what the runs read or
    wrote); a count of what was found, not a promise that nothing secret is left."""
    redacted_kinds: dict[str, int] = Field(default_factory=dict)
    """``redacted`` by kind (``url``: a URL's password, ``key``, ``value``, ``command``, ``header``,
    ``setting``)."""
    held_out: int = 0
    """Held-out cases whose runs were kept out (by id or input, as ``train`` keeps them out)."""
    include_holdout: bool = False
    """Whether held-out runs were asked for by name and exported too."""
    sources: dict[str, int] = Field(default_factory=dict)
    """The exported runs by where they came from (``teacher on scripted``: model on harness), most first."""
    pairs: dict[str, int] | None = None
    """With ``pairs``: the preference pairs written, by kind (``verdict``, ``correction``, ``edit``)."""


def held_out_cases(ws: Workspace, spec: Machine, target: Machine | None) -> list[Case]:
    """The held-out cases whose runs stay out: ``spec``'s, and ``target``'s for runs exported as it."""
    held: list[Case] = []
    for machine in (spec, target):
        found = None if machine is None else held_out(ws, machine.name)
        held += [] if found is None else found.cases
    return held


def unwritable(path: Path, error: OSError) -> BadInputError:
    return BadInputError(
        f"cannot write the export to {path}: {error.strerror or error}",
        fixes=[Fix("out", "PATH", "(a file in a folder you can write)")],
    )
