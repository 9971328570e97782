"""What ``optimize`` checks before it spends anything, past its options' bounds: the machine (its own
instructions must live in instructions.md, its files must be its live version) and the cases. Both cases
files are read from the machine's own folder only, on every face; the held-out cases must be unseen
ones: another file than the cases, no case of one in the other (by id, or by input compared as the train
guard does, near duplicates too), and the cases shown never the machine's own holdout.json (or a copy of
it), so swapping the two files is refused."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from machine.errors import BadInputError, Fix
from machine.spec import INSTRUCTIONS_FILE, Case, Machine, Version, load_cases, open_book, require_live
from machine.workspace import Workspace, folder_cases_file, held_out

from .._near_duplicates import Inputs

HOLDOUT_FILE = "holdout.json"


class Chosen:
    """One side's cases, where they came from (None for a list given) and how the report names it."""

    def __init__(self, cases: list[Case], path: Path | None, label: str) -> None:
        self.cases, self.path, self.label = cases, path, label


def cases_of(ws: Workspace, name: str, cases: str | Path | Sequence[Case] | None) -> Chosen:
    """The cases the optimizer may be shown (a file in the machine's folder, else cases.json)."""
    if cases is not None and not isinstance(cases, (str, Path)):
        return Chosen(list(cases), None, "(given)")
    path = folder_cases_file(ws.machines_dir / name, name, cases, what="cases")
    return Chosen(load_cases(path), path, path.name)


def no_holdout(name: str) -> str:
    return (
        f"machine {name!r} has no held-out cases (holdout.json), so a proposal is judged on the cases "
        "it was shown alone, and one that memorized them cannot be told apart: write holdout.json"
    )


def holdout_of(ws: Workspace, name: str, holdout: str | Path | Sequence[Case] | None) -> Chosen | None:
    found = held_out(ws, name, holdout)
    return None if found is None else Chosen(found.cases, found.path, found.label)


def checked_cases(ws: Workspace, name: str, shown: Chosen, held: Chosen | None) -> None:
    """Refuse cases that cannot be optimized on, or held-out cases that are not unseen (see the module)."""
    if not shown.cases:
        raise BadInputError(f"machine {name!r} has no cases to optimize on: write some in cases.json")
    if held is not None:
        if not held.cases:
            raise BadInputError(
                f"the held-out cases of machine {name!r} are empty: add some, or remove the file"
            )
        if shown.path is not None and shown.path == held.path:
            raise _seen(name, f"the cases and the held-out cases are the same file ({shown.label})")
        _apart(name, shown, held)
    own = ws.machines_dir / name / HOLDOUT_FILE
    if not own.is_file():
        return
    own_path = folder_cases_file(own.parent, name, HOLDOUT_FILE, what="held-out")
    if held is not None and held.path == own_path:
        return  # the held-out cases are the machine's own: checked above
    if shown.path == own_path:
        raise _seen(name, f"the cases the optimizer would be shown are its held-out cases ({HOLDOUT_FILE})")
    _apart(name, shown, Chosen(load_cases(own_path), own_path, HOLDOUT_FILE))


def _apart(name: str, shown: Chosen, held: Chosen) -> None:
    """No case of ``shown`` among ``held``, by id or by input."""
    ids = sorted({c.id for c in shown.cases} & {c.id for c in held.cases})
    if ids:
        raise _seen(name, f"case {ids[0]!r} of {shown.label} is also among the held-out cases ({held.label})")
    inputs = Inputs(c.input for c in held.cases)
    same = next(((c, inputs.match(c.input)) for c in shown.cases if inputs.match(c.input)), None)
    if same is not None:
        raise _seen(
            name,
            f"case {same[0].id!r} of {shown.label} asks what a held-out case of {held.label} asks "
            f"({same[1]!r}, compared without case, spacing or punctuation)",
        )


def _seen(name: str, what: str) -> BadInputError:
    return BadInputError(
        f"machine {name!r}: {what}; held-out cases must be unseen by the optimizer: name the cases to show "
        "and the held-out ones apart, and take any case out of one of them",
        fixes=[Fix("cases", "cases.json", "for the cases shown"), Fix("holdout", "holdout.json")],
    )


def checked_machine(ws: Workspace, name: str) -> tuple[Machine, Version]:
    spec = ws.reload(name)
    if spec.counterpart is not None:
        raise BadInputError(
            f"machine {name!r} holds conversations with a counterpart; optimize measures single runs only"
        )
    path = ws.machines_dir / name / INSTRUCTIONS_FILE
    written = path.read_text(encoding="utf-8").strip() if path.is_file() else None
    if written != spec.own_instructions:
        raise BadInputError(
            f"{spec.source} does not take its instructions from {path}, so optimize has nothing to "
            "rewrite; keep them there and declare instructions=instructions_from(__file__)"
        )
    book = open_book(ws.machines_dir / name, spec)
    return spec, require_live(book, spec, "be optimized")
