"""Making a passed candidate live (``commit``), and what a commit would do before it is done
(``plan_commit``): which version goes live in place of which, and whether the gate lets it, so a face can
ask the person about exactly that before anything changes."""

from __future__ import annotations

from dataclasses import dataclass

from machine.errors import BadInputError, CommitRefused, Fix, MachineError
from machine.runs import endpoint_url, now
from machine.spec import (
    VERSIONS_FILE,
    Book,
    GateReport,
    Machine,
    Version,
    files_of,
    identity_of,
    keep_texts,
    open_book,
    require_live,
    snapshot,
    write_book,
)
from machine.workspace import Workspace, harness_name, made_harness

from ._lifecycle import _model_problem, _write_and_check, _written
from ._propose import check_fixed

ANYWAY = Fix("force", purpose="to commit it anyway")


@dataclass(frozen=True)
class CommitPlan:
    """What ``commit`` would do now: make ``candidate`` live in place of ``live``, unless ``refusal``
    (why the gate, or where it was measured, keeps it out; ``force`` overrides it). ``elsewhere`` says
    where it was measured when that is not where it would run."""

    machine: str
    candidate: Version
    live: Version
    report: GateReport
    refusal: MachineError | None
    elsewhere: str | None
    spec: Machine
    book: Book


def plan_commit(ws: Workspace, name: str, *, harness: str | None = None) -> CommitPlan:
    """What committing machine ``name`` would do, checked as ``commit`` checks it, changing nothing.
    Raises BadInputError when there is nothing to commit (no pending candidate, one measured against
    another live version, or one with no report)."""
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
    refusal: MachineError | None = None
    try:
        _gate_holds(ws, name, candidate, report, live)
    except MachineError as error:
        refusal = error
    elsewhere = _measured_elsewhere(ws, candidate, report, harness)
    if refusal is None and elsewhere is not None:
        refusal = _elsewhere(name, candidate, report, live, elsewhere)
    return CommitPlan(name, candidate, live, report, refusal, elsewhere, spec, book)


def commit(ws: Workspace, name: str, *, force: bool = False, harness: str | None = None) -> Version:
    """Make the newest pending candidate live, only if it passed the promotion gate and was measured on
    what it will run on (``force`` overrides both): write its files (its model.json; instructions.md for
    one ``optimize`` kept, which may be written already) and record it live; the live version is retired.
    ``harness`` names the harness it will run on (default: the one ``ws`` holds, else the harness and
    endpoint it was measured on, as its report says).

    Raises CommitRefused (with the candidate's report) when it did not pass, was not measured, or was
    measured on another harness, model or endpoint.
    """
    plan = plan_commit(ws, name, harness=harness)
    if plan.refusal is not None and not force:
        raise plan.refusal
    candidate, live, book = plan.candidate, plan.live, plan.book
    folder = ws.machines_dir / name
    _write_and_check(
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
    candidate.forced = plan.report.outcome != "passed" or plan.elsewhere is not None
    candidate.files = keep_texts(book, snapshot(folder), folder)
    book.make_live(candidate)
    write_book(folder / VERSIONS_FILE, book)
    return candidate


def _gate_holds(ws: Workspace, name: str, candidate: Version, report: GateReport, live: Version) -> None:
    """Refuse a candidate that did not pass, or one measured on a gate fixed before its training whose
    held-out file has changed since."""
    if report.outcome != "passed":
        raise _refused(name, candidate, report, live)
    if report.gate is not None:
        check_fixed(ws, report.gate, f"candidate {candidate.label}", fixes=[ANYWAY])


def _measured_elsewhere(
    ws: Workspace, candidate: Version, report: GateReport, harness: str | None
) -> str | None:
    """Where the candidate was measured, against where it will run, when the two differ (in words). It
    runs on ``harness`` when one is named, else on the harness ``ws`` holds, else where it was measured
    (the report's harness and endpoint), so what was measured only on the scripted harness goes live
    there unless told otherwise. A report that does not say where it was measured (written before
    reports kept it) is no match."""
    side = report.after
    made = made_harness(ws) if harness is None else None
    runs_on: str | None
    if harness is not None:  # named: its endpoint is the harness's default, not known here
        runs_on, endpoint = harness, None
    elif made is not None:
        runs_on, endpoint = made.name, endpoint_url(made)
    else:
        runs_on, endpoint = side.harness, side.endpoint
    if runs_on is None:  # an old report, and nothing named: the default harness for its model
        runs_on = harness_name(ws, candidate.model) or "(none)"
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
        fixes=[Fix("harness", "NAME", "to name the harness it will run on"), ANYWAY],
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
        fixes=[ANYWAY],
        report=report,
        version=candidate,
    )
