"""The lifecycle of a machine's versions: list them, record one by hand (``update``), make an earlier
version live again (``revert``; ``plan_revert`` says what it would do first); ``_commit`` makes a passed
candidate live. The machine's files stay the truth: a version is recorded from them, and a change is
checked by loading the machine again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import Field

from machine.errors import BadInputError, DefinitionError, Fix
from machine.runs import Model, now
from machine.spec import (
    INSTRUCTIONS_FILE,
    MODEL_FILE,
    VERSIONS_FILE,
    Book,
    Machine,
    Version,
    files_of,
    identity_of,
    keep_texts,
    model_json,
    open_book,
    require_live,
    restore,
    snapshot,
    write_book,
)
from machine.workspace import Workspace


class VersionList(Model):
    """A machine's versions, oldest first, the number of the one its files match now (None: none, so
    their runs record ``unrecorded``), and the numbers of the versions made live in turn, the live one
    last (what ``revert`` steps back along). A version is named by its ``number`` throughout."""

    machine: str
    current: int | None
    versions: list[Version]
    live_history: list[int] = Field(default_factory=list)


def versions(ws: Workspace, name: str) -> list[Version]:
    """The machine's versions, oldest first; the first call records the current machine as v1."""
    spec = ws.reload(name)
    return list(open_book(ws.machines_dir / name, spec).versions)


def live_history(ws: Workspace, name: str) -> list[Version]:
    """The versions made live in turn, the live one last: ``revert`` goes back to the one before it."""
    spec = ws.reload(name)
    book = open_book(ws.machines_dir / name, spec)
    return [book.get(number) for number in book.live_history]


def current(ws: Workspace, name: str) -> Version | None:
    """The recorded version the machine's files match now; None when they match none (their runs
    record ``unrecorded``)."""
    spec = ws.reload(name)
    return open_book(ws.machines_dir / name, spec).match(identity_of(spec))


def texts_of(ws: Workspace, name: str, label: str | int) -> dict[str, str | None]:
    """The exact text of each file the version had (None: it had none)."""
    spec = ws.reload(name)
    book = open_book(ws.machines_dir / name, spec)
    files = files_of(book, book.get(label))
    return {file: None if data is None else data.decode("utf-8") for file, data in files.items()}


def _write_and_check(
    ws: Workspace,
    name: str,
    files: dict[str, bytes | None],
    expect: Callable[[Machine], str | None],
) -> Machine:
    """Write ``files`` into the machine's folder and load it again; when ``expect`` finds the result
    wrong (it returns the reason), put every file back as it was and raise."""
    folder = ws.machines_dir / name
    before = snapshot(folder)
    restore(folder, files)
    try:
        spec = ws.reload(name)
        problem = expect(spec)
    except Exception:
        restore(folder, before)
        ws.reload(name)
        raise
    if problem is not None:
        restore(folder, before)
        ws.reload(name)
        raise DefinitionError(problem)
    return spec


def _model_problem(spec: Machine, model: str, default: str) -> str | None:
    if spec.model == model:
        return None
    return (
        f"{spec.source} does not take its model from model.json, so writing {model!r} there changes "
        f"nothing (it still runs {spec.model!r}); declare model=model_from(__file__, {default!r}) in it "
        "(from machine import model_from) and try again; the files were left as they were"
    )


def _instructions_problem(spec: Machine, instructions: str) -> str | None:
    if spec.own_instructions == instructions.strip():
        return None
    return (
        f"{spec.source} does not take its instructions from instructions.md, so writing them there "
        "changes nothing; declare instructions=instructions_from(__file__) in it and try again; "
        "the files were left as they were"
    )


def update(
    ws: Workspace,
    name: str,
    *,
    instructions: str | None = None,
    model: str | None = None,
    base_model: str | None = None,
    note: str = "",
) -> Version:
    """Record a new live version by hand: write ``instructions`` to instructions.md and ``model`` to
    model.json (each only when given), then record the machine as its files now make it. With neither,
    record the files as they are (after editing them by hand). Returns the live version (unchanged when
    the files already match it)."""
    spec = ws.reload(name)
    book = open_book(ws.machines_dir / name, spec)
    folder = ws.machines_dir / name
    files: dict[str, bytes | None] = {}
    if instructions is not None:
        if not instructions.strip():
            raise BadInputError(f"machine {name!r}: new instructions must not be empty")
        files[INSTRUCTIONS_FILE] = instructions.encode("utf-8")
    if model is not None:
        if not model.strip():
            raise BadInputError(f"machine {name!r}: the new model must be a model id")
        files[MODEL_FILE] = model_json(model.strip(), base_model).encode("utf-8")
    default = spec.model

    def expect(loaded: Machine) -> str | None:
        if model is not None and (problem := _model_problem(loaded, model.strip(), default)):
            return problem
        return _instructions_problem(loaded, instructions) if instructions is not None else None

    if files:
        spec = _write_and_check(ws, name, files, expect)
    identity = identity_of(spec)
    live = book.live
    if identity == live.identity and live.files == keep_texts(Book(machine=name), snapshot(folder), folder):
        return live
    version = Version(
        number=book.next_number(),
        status="live",
        model=identity[1],
        base_model=base_model if model is not None else None,
        instructions_sha=identity[0],
        rubric=identity[2],
        files=keep_texts(book, snapshot(folder), folder),
        note=note or "recorded by hand",
        committed_at=now(),
    )
    book.versions.append(version)
    book.make_live(version)
    write_book(folder / VERSIONS_FILE, book)
    return version


def _written(book: Book, spec: Machine, candidate: Version) -> bool:
    """Whether the machine's files are already ``candidate``'s (``optimize`` writes the instructions it
    keeps, and leaves them for the person to accept)."""
    return identity_of(spec) == candidate.identity and candidate.identity != book.live.identity


@dataclass(frozen=True)
class RevertPlan:
    """What ``revert`` would do now: make ``target`` live in place of ``live``; or, with ``withdraw``,
    write the live version's files back over ``pending``, a candidate written into them and not yet
    committed (``target`` is then the live version, which stays live)."""

    machine: str
    live: Version
    target: Version
    withdraw: Version | None
    book: Book


def plan_revert(ws: Workspace, name: str, *, to: str | int | None = None) -> RevertPlan:
    """What reverting machine ``name`` would do, checked as ``revert`` checks it, changing nothing.
    Raises BadInputError when there is nothing to revert to."""
    spec = ws.reload(name)
    book = open_book(ws.machines_dir / name, spec)
    pending = book.match(identity_of(spec))
    if to is None and pending is not None and pending.status == "pending" and _written(book, spec, pending):
        return RevertPlan(name, book.live, book.live, pending, book)
    live = require_live(book, spec, "be reverted")
    target = _revert_target(book, live, to)
    if target.rubric != spec.rubric.fingerprint:
        raise BadInputError(
            f"{target.label} of machine {name!r} was made under another rubric (fingerprint "
            f"{target.rubric[:12]}, now {spec.rubric.fingerprint[:12]}); revert writes back instructions.md "
            "and model.json, not the rubric: restore the rubric from git first"
        )
    return RevertPlan(name, live, target, None, book)


def revert(ws: Workspace, name: str, *, to: str | int | None = None) -> Version:
    """Make the version that was live before the live one live again (or version ``to``), writing back
    its instructions.md and model.json exactly as they were (removing one it did not have). Without
    ``to`` it steps back along the live history, so reverting again goes further back and never returns
    to a version already reverted away from; with ``to`` the version joins the history's end.

    When the files hold a pending candidate not yet committed (instructions ``optimize`` kept), the
    live version's files are written back instead and the live version is returned; the candidate
    stays pending, so ``commit`` can still make it live."""
    plan = plan_revert(ws, name, to=to)
    book, target = plan.book, plan.target
    if plan.withdraw is not None:
        return _withdraw(ws, name, book, plan.withdraw)
    _write_and_check(
        ws,
        name,
        files_of(book, target),
        lambda loaded: (
            None
            if identity_of(loaded) == target.identity
            else (
                f"machine {name!r} written back to {target.label}'s instructions.md and model.json still "
                f"differs from {target.label} (its instructions or model are set in {loaded.source} itself); "
                "the files were left as they were"
            )
        ),
    )
    book.make_live(target, back=to is None)
    write_book((ws.machines_dir / name) / VERSIONS_FILE, book)
    return target


def _withdraw(ws: Workspace, name: str, book: Book, pending: Version) -> Version:
    """Write the live version's files back over the pending candidate written into them."""
    live = book.live
    _write_and_check(
        ws,
        name,
        files_of(book, live),
        lambda loaded: (
            None
            if identity_of(loaded) == live.identity
            else f"machine {name!r} written back to {live.label}'s files still differs from {live.label}; "
            "the files were left as they were"
        ),
    )
    return live


def _revert_target(book: Book, live: Version, to: str | int | None) -> Version:
    """The version a revert makes live: ``to``, or the one live before ``live`` in the live history."""
    name = book.machine
    if to is None:
        previous = book.previous_live()
        if previous is None:
            raise BadInputError(
                f"machine {name!r} has no version that was live before {live.label} to revert to "
                f"(its live history: {' -> '.join(f'v{n}' for n in book.live_history)})",
                fixes=[Fix("to", "VERSION", "to make a version of your choice live")],
            )
        return previous
    target = book.get(to)
    if target.status == "pending":
        raise BadInputError(
            f"{target.label} of machine {name!r} is a pending candidate, never live: commit it instead"
        )
    if target.live:
        raise BadInputError(f"{target.label} of machine {name!r} is already live")
    return target
