"""What ``optimize`` checks before it spends anything: the numbers, the machine (its own instructions
must live in instructions.md, its files must be its live version) and the cases (held-out cases must be
unseen ones)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from machine.errors import BadInputError, Fix
from machine.spec import Case, Machine, Version
from machine.spec._book import INSTRUCTIONS_FILE, open_book, require_live
from machine.workspace import Workspace, held_out


def cases_of(ws: Workspace, name: str, cases: str | Path | Sequence[Case] | None) -> tuple[list[Case], str]:
    """The cases the optimizer may be shown, and how the report names where they came from."""
    if cases is not None and not isinstance(cases, (str, Path)):
        return list(cases), "(given)"
    return ws.cases(name, cases), ws.cases_file(name, cases).name


def no_holdout(name: str) -> str:
    return (
        f"machine {name!r} has no held-out cases (holdout.json), so a proposal is judged on the cases "
        "it was shown alone, and one that memorized them cannot be told apart: write holdout.json"
    )


def holdout_of(
    ws: Workspace, name: str, holdout: str | Path | Sequence[Case] | None
) -> tuple[list[Case] | None, str | None]:
    found = held_out(ws, name, holdout)
    return (None, None) if found is None else (found.cases, found.label)


def checked_cases(name: str, cases: list[Case], holdout: list[Case] | None) -> None:
    if not cases:
        raise BadInputError(f"machine {name!r} has no cases to optimize on: write some in cases.json")
    if holdout is None:
        return
    if not holdout:
        raise BadInputError(f"the held-out cases of machine {name!r} are empty: add some, or remove the file")
    ids = {c.id for c in cases} & {c.id for c in holdout}
    inputs = {c.input for c in cases} & {c.input for c in holdout}
    if ids or inputs:
        which = f"case {sorted(ids)[0]!r}" if ids else "a case input"
        raise BadInputError(
            f"machine {name!r}: {which} is both among the cases and the held-out cases; held-out cases "
            "must be unseen: take it out of one of them"
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


def checked_numbers(
    trials: int, rounds: int, candidates: int, min_z: float, concurrency: int, shown: int
) -> None:
    for value, what in (
        (trials, "trials"),
        (rounds, "rounds"),
        (candidates, "candidates"),
        (concurrency, "concurrency"),
        (shown, "shown"),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BadInputError(
                f"{what} must be a whole number of at least 1, got {value!r}", fixes=[Fix(what, "N")]
            )
    if min_z < 0:
        raise BadInputError(f"min_z must not be negative, got {min_z}")
