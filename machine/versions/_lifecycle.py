"""The lifecycle of a machine's versions: list them, record one by hand (``update``), make a passed
candidate live (``commit``), make an earlier version live again (``revert``). The machine's files stay
the truth: a version is recorded from them, and a change is checked by loading the machine again."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from machine.errors import BadInputError, CommitRefused, DefinitionError, Fix
from machine.runs import Model, now
from machine.spec import (
    INSTRUCTIONS_FILE,
    MODEL_FILE,
    VERSIONS_FILE,
    Book,
    GateReport,
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
from machine.workspace import Workspace, harness_name, made_harness

from ._gate import endpoint_of
from ._propose import check_fixed


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


def _gate_holds(ws: Workspace, name: str, candidate: Version, report: GateReport, live: Version) -> None:
    """Refuse a candidate that did not pass, or one measured on a gate fixed before its training whose
    held-out file has changed since."""
    if report.outcome != "passed":
        raise _refused(name, candidate, report, live)
    if report.gate is not None:
        anyway = Fix("force", purpose="to commit it anyway")
        check_fixed(ws, report.gate, f"candidate {candidate.label}", fixes=[anyway])


def commit(ws: Workspace, name: str, *, force: bool = False, harness: str | None = None) -> Version:
    """Make the newest pending candidate live, only if it passed the promotion gate and was measured on
    what it will run on (``force`` overrides both): write its files (its model.json; instructions.md for
    one ``optimize`` kept, which may be written already) and record it live; the live version is retired.
    ``harness`` names the harness it will run on (default: the workspace's, else the default for its
    model: ``MACHINE_HARNESS``, else ``local`` for a ``local:`` model, else ``tinker``).

    Raises CommitRefused (with the candidate's report) when it did not pass, was not measured, or was
    measured on another harness, model or endpoint.
    """
    spec = ws.reload(name)
    book = open_book(ws.machines_dir / name, spec)
    pending = [v for v in book.versions if v.status == "pending"]
    if not pending:
        raise BadInputError(
            f"machine {name!r} has no pending candidate to commit",
            fixes=[Fix(operation="propose", machine=name, purpose="makes one")],
        )
    candidate = max(pending, key=lambda v: v.number)
    live = book.live
    if candidate.base != live.number:
        raise BadInputError(
            f"candidate {candidate.label} of machine {name!r} was measured against v{candidate.base}, "
            f"but {live.label} is live now: propose it again to measure it against {live.label}"
        )
    if not _written(book, spec, candidate):
        require_live(book, spec, f"commit {candidate.label}")
    report = candidate.report
    if report is None:
        raise BadInputError(
            f"candidate {candidate.label} of machine {name!r} has no report (its proposal did not finish): "
            f"propose it again"
        )
    if not force:
        _gate_holds(ws, name, candidate, report, live)
    elsewhere = _measured_elsewhere(ws, candidate, report, harness)
    if not force and elsewhere is not None:
        raise _elsewhere(name, candidate, report, live, elsewhere)
    folder = ws.machines_dir / name
    spec = _write_and_check(
        ws,
        name,
        files_of(book, candidate),
        lambda loaded: (
            _model_problem(loaded, candidate.model, live.model)
            or (
                None
                if identity_of(loaded) == candidate.identity
                else f"machine {name!r} loaded from the files of {candidate.label} is not {candidate.label} "
                "(its instructions or rubric differ); the files were left as they were"
            )
        ),
    )
    candidate.committed_at = now()
    candidate.forced = report.outcome != "passed" or elsewhere is not None
    candidate.files = keep_texts(book, snapshot(folder), folder)
    book.make_live(candidate)
    write_book(folder / VERSIONS_FILE, book)
    return candidate


def _measured_elsewhere(
    ws: Workspace, candidate: Version, report: GateReport, harness: str | None
) -> str | None:
    """Where the candidate was measured, against where it will run, when the two differ (in words); a
    report that does not say where it was measured (written before reports kept it) is no match."""
    side = report.after
    runs_on = harness or harness_name(ws, candidate.model) or "(none)"
    made = made_harness(ws) if harness is None else None
    endpoint = endpoint_of(made)
    measured = f"harness {side.harness!r} with model {side.model!r}"
    if side.endpoint:
        measured += f" at {side.endpoint}"
    will = f"harness {runs_on!r} with model {candidate.model!r}" + (f" at {endpoint}" if endpoint else "")
    if side.harness is None:
        return (
            f"has a gate report that does not say which harness it was measured on (it was written before "
            f"reports kept it), and it would run on {will}"
        )
    differs = (
        side.harness != runs_on
        or side.model != candidate.model
        or (made is not None and side.endpoint != endpoint)
    )
    return f"was measured on {measured}, but would run on {will}" if differs else None


def _elsewhere(name: str, candidate: Version, report: GateReport, live: Version, where: str) -> CommitRefused:
    return CommitRefused(
        f"candidate {candidate.label} of machine {name!r} {where}, so its gate says nothing of how it runs "
        f"there and {live.label} stays live: measure it again there (propose it, or optimize again, on "
        "that harness)",
        fixes=[
            Fix("harness", "NAME", "to name the harness it will run on"),
            Fix("force", purpose="to commit it anyway"),
        ],
        report=report,
        version=candidate,
    )


def _refused(name: str, candidate: Version, report: GateReport, live: Version) -> CommitRefused:
    why = {
        "not measured": (
            "was not measured on every criterion"
            if report.unmeasured
            else "was not measured on enough of the cases"
        ),
        "not enough evidence": "has too little evidence behind it to pass the promotion gate",
    }.get(report.outcome, "did not pass the promotion gate")
    return CommitRefused(
        f"candidate {candidate.label} of machine {name!r} {why} ({report.decision}), so {live.label} "
        "stays live",
        fixes=[Fix("force", purpose="to commit it anyway")],
        report=report,
        version=candidate,
    )


def revert(ws: Workspace, name: str, *, to: str | int | None = None) -> Version:
    """Make the version that was live before the live one live again (or version ``to``), writing back
    its instructions.md and model.json exactly as they were (removing one it did not have). Without
    ``to`` it steps back along the live history, so reverting again goes further back and never returns
    to a version already reverted away from; with ``to`` the version joins the history's end.

    When the files hold a pending candidate not yet committed (instructions ``optimize`` kept), the
    live version's files are written back instead and the live version is returned; the candidate
    stays pending, so ``commit`` can still make it live."""
    spec = ws.reload(name)
    book = open_book(ws.machines_dir / name, spec)
    pending = book.match(identity_of(spec))
    if to is None and pending is not None and pending.status == "pending" and _written(book, spec, pending):
        return _withdraw(ws, name, book, pending)
    live = require_live(book, spec, "be reverted")
    target = _revert_target(book, live, to)
    if target.rubric != spec.rubric.fingerprint:
        raise BadInputError(
            f"{target.label} of machine {name!r} was made under another rubric (fingerprint "
            f"{target.rubric[:12]}, now {spec.rubric.fingerprint[:12]}); revert writes back instructions.md "
            "and model.json, not the rubric: restore the rubric from git first"
        )
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
