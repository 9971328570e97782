"""Propose: a pending candidate (the live version with another model) measured against the live version on
the held-out cases, reusing stored graded runs of either version, with the gate's decision kept beside it
in versions.json. The machine's files are not changed until the candidate is committed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machine.errors import BadInputError, Fix, NotFoundError
from machine.measure import BatchWriter, MeasureOptions
from machine.runs import Run, setup_of
from machine.spec import (
    DEFAULT_MIN_Z,
    MODEL_FILE,
    VERSIONS_FILE,
    Book,
    Case,
    FixedGate,
    GateReport,
    Machine,
    Version,
    checked_min_z,
    model_json,
    open_book,
    require_live,
    sha256_of,
    sha256_text,
    write_book,
)
from machine.training import Phase
from machine.workspace import Workspace, held_out

from ._gate import SideTally, measured, tally_for

PROPOSE_TRIALS = 3
"""Runs per held-out case, each side, when a proposal's options do not say."""
PROPOSING = MeasureOptions(trials=PROPOSE_TRIALS)
"""A proposal's options when none are given: a measurement's, with ``PROPOSE_TRIALS``."""

Job = tuple[str, Case, int, Run | None]
"""One run to make (its side's label, the case, the trial) or, with a stored run, one to grade again."""


@dataclass
class Candidate:
    """A pending version and what ``propose`` measured about it."""

    version: Version
    report: GateReport

    @property
    def passed(self) -> bool:
        """Whether the candidate passed the promotion gate."""
        return self.report.passed

    @property
    def label(self) -> str:
        """The candidate's version label (``v3``)."""
        return self.version.label


def holdout_of(
    ws: Workspace, name: str, cases: str | Path | Sequence[Case] | None
) -> tuple[list[Case], str, Path | None]:
    """The held-out cases, how the report names where they came from, and their file (None: given)."""
    found = held_out(ws, name, cases)
    if found is None:
        path = ws.cases_file(name, None, default="holdout.json")
        raise NotFoundError(
            f"machine {name!r} has no held-out cases: write {path} (cases never used to change the machine)",
            fixes=[Fix("cases", "FILE", "to name another cases file")],
        )
    return found.cases, found.label, found.path


def _reusable(
    ws: Workspace,
    name: str,
    chosen: list[Case],
    sides: dict[str, SideTally],
    trials: int,
    fingerprint: str,
    live: str | None = None,
) -> tuple[dict[tuple[str, str], list[Run]], dict[tuple[str, str], list[Run]]]:
    """Stored runs of either version on these cases, made the same way (harness and its setup, model,
    effort, input): graded under the current rubric (reused as they are) or not (graded again), at most
    ``trials`` a case; a run that records no version (stored before versions.json) as side ``live``'s,
    labelled so. A run that records no setup is not reused where the harness has one now, nor a run an
    RL training sampled from a policy that was learning."""
    by_id = {c.id: c for c in chosen}
    instructions = ws.load(name).instructions
    effort = None if ws.effort is None else ws.effort.value
    harness = ws.harness.name
    setups = {label: setup_of(ws.harness, name, side.machine_model, ws.root) for label, side in sides.items()}
    graded: dict[tuple[str, str], list[Run]] = {}
    stale: dict[tuple[str, str], list[Run]] = {}
    for run in ws.store.iter_runs(name):
        if run.version is None and live is not None:
            run = run.model_copy(update={"version": live})
        side = sides.get(run.version or "")
        case = by_id.get(run.case_id or "")
        if (
            side is None
            or case is None
            or run.status != "ok"
            or run.history
            or run.sampled_for is not None
            or run.input != case.input
            or run.instructions != instructions
            or run.model != side.machine_model
            or run.harness != harness
            or run.setup != setups[run.version or ""]
            or run.effort != effort
        ):
            continue
        key = (run.version or "", case.id)
        current = run.scorecard is not None and run.scorecard.rubric_fingerprint == fingerprint
        (graded if current else stale).setdefault(key, []).append(run)
    for found in (graded, stale):
        for runs in found.values():
            runs.sort(key=lambda r: r.created_at, reverse=True)
            del runs[trials:]
    return graded, stale


async def propose(
    ws: Workspace,
    name: str,
    options: MeasureOptions | None = None,
    *,
    model: str,
    cases: str | Path | Sequence[Case] | None = None,
    min_z: float = DEFAULT_MIN_Z,
    base_model: str | None = None,
    note: str = "",
    on_run: Callable[[Run], None] | None = None,
    gate: FixedGate | None = None,
    allow_weak_gate: bool = False,
    on_begin: Callable[[Phase], None] | None = None,
    **fields: Any,
) -> Candidate:
    """Make a pending candidate: the live version with ``model``. Run it and the live version on the
    held-out cases (holdout.json beside the machine, or ``cases``), interleaved, measured as ``options``
    (or its fields as keywords) say, ``PROPOSE_TRIALS`` trials each unless they say otherwise; stored
    runs of either version on those cases are reused (graded again with the current evaluator when they
    were graded under an older rubric), so only the missing trials run. Both are graded with the current
    evaluator; the report, with the gate's decision, is kept with the candidate in versions.json. The
    machine's files are not changed. With ``gate`` (fixed before a training), its held-out file (refused
    if it changed since), trials, ``min_z``, pass score and held criteria are the ones used. A ``min_z``
    below 1 is refused unless ``allow_weak_gate``; ``on_begin`` hears the runs."""
    o = MeasureOptions.of(options if options is not None else PROPOSING, **fields)
    trials, pass_score = o.trials, o.pass_score
    model = _checked(model, min_z, allow_weak_gate)
    spec = ws.reload(name)
    if spec.counterpart is not None:
        raise BadInputError(
            f"machine {name!r} holds conversations with a counterpart; propose measures single runs only"
        )
    book = open_book(ws.machines_dir / name, spec)
    live = require_live(book, spec, "have a candidate proposed")
    if model == live.model:
        raise BadInputError(f"{live.label} of machine {name!r} already runs {model!r}: propose another model")
    if gate is not None:  # a trained candidate: measured on the gate fixed before it was trained
        cases = check_fixed(ws, gate, f"the training of {model}")
        trials, min_z, pass_score = gate.trials, gate.min_z, gate.pass_score
    chosen, cases_file, _path = holdout_of(ws, name, cases)
    if not chosen:
        raise BadInputError(f"the held-out cases of machine {name!r} ({cases_file}) are empty")
    if base_model:
        ws.budget.price_as.setdefault(model, base_model)
    candidate = _record_candidate(ws.machines_dir / name, book, live, model, base_model, note)
    sides = {live.label: tally_for(live, ws.harness), candidate.label: tally_for(candidate, ws.harness)}
    jobs = plan_runs(ws, name, chosen, sides, trials, pass_score, live=live.label)
    begun(on_begin, f"measuring {candidate.label} against {live.label} on {cases_file}", jobs)
    spent_before = ws.budget.spent
    stopped = await run_jobs(ws, spec, sides, jobs, o.concurrency, pass_score, on_run)
    held = None if gate is None else gate.held
    report = measured(spec, live, candidate, sides, chosen, cases_file, trials, min_z, stopped, held=held)
    report.gate = gate
    report.cost_usd = ws.budget.spent - spent_before
    book = open_book(ws.machines_dir / name, spec)  # read again: runs may have recorded versions meanwhile
    stored = book.get(candidate.number)
    stored.report = report
    write_book(ws.machines_dir / name / VERSIONS_FILE, book)
    return Candidate(version=stored, report=report)


def begun(on_begin: Callable[[Phase], None] | None, what: str, jobs: list[Job]) -> None:
    """Tell ``on_begin`` that a measurement of ``jobs`` runs begins (a phase a face shows progress of)."""
    if on_begin is not None and jobs:
        on_begin(Phase(what=what, total=len(jobs)))


def check_fixed(ws: Workspace, gate: FixedGate, what: str, *, fixes: Sequence[Fix] = ()) -> Path:
    """The held-out file of ``gate``, refused (naming both hashes) when it changed since it was fixed."""
    path = ws.root / gate.file
    now = sha256_of(path) or "none (the file cannot be read)"
    if now != gate.sha256:
        raise BadInputError(
            f"{gate.file} changed since the gate was fixed for {what} (sha256 {gate.sha256} then, {now} "
            "now): the candidate is measured only on the held-out cases chosen before it was trained; "
            "restore the file, or train again to fix a new gate",
            fixes=list(fixes),
        )
    return path


def _checked(model: str, min_z: float, allow_weak_gate: bool) -> str:
    """The candidate's model, once the gate's settings are checked."""
    checked_min_z(min_z, allow_weak_gate)
    if not model.strip():
        raise BadInputError("propose needs the candidate's model", fixes=[Fix("model", "MODEL")])
    return model.strip()


async def run_jobs(
    ws: Workspace,
    spec: Machine,
    sides: dict[str, SideTally],
    jobs: list[Job],
    concurrency: int,
    pass_score: float,
    on_run: Callable[[Run], None] | None,
) -> str | None:
    """The missing runs made (and stale ones graded again), each counted on its side as it finishes; why
    it stopped early, if it did."""
    writer = BatchWriter(ws.store)

    async def one(job: Job) -> None:
        label, case, trial, old = job
        side = sides[label]
        if old is not None:
            run = await ws.grade(old, spec, pass_score=pass_score, store=False)
        else:
            run = await ws.run(
                spec, case.input, case=case, trial=trial, model=side.machine_model, store=False
            )
            run = run.model_copy(update={"version": label})
            if run.status == "ok":
                run = await ws.grade(run, spec, pass_score=pass_score, store=False)
        side.add(run, how="regraded" if old is not None else "new", pass_score=pass_score)
        writer.add([run])
        if on_run is not None:
            on_run(run)

    return await writer.run(jobs, one, concurrency=concurrency)


def _record_candidate(
    folder: Path, book: Book, live: Version, model: str, base_model: str | None, note: str
) -> Version:
    """The pending candidate (the live version on ``model``), written to the book before any run, so
    the candidate's runs record its number; an earlier proposal of the same candidate is reused."""
    identity = (live.instructions_sha, model, live.rubric)
    files = dict(live.files)
    model_text = model_json(model, base_model)
    files[MODEL_FILE] = sha256_text(model_text)
    book.texts.setdefault(sha256_text(model_text), model_text)
    candidate = next(
        (
            v
            for v in book.versions
            if v.status == "pending" and v.identity == identity and v.base == live.number
        ),
        None,
    )
    if candidate is not None:
        candidate.files, candidate.base_model, candidate.report = files, base_model, None
        candidate.note = note or candidate.note
    else:
        candidate = Version(
            number=book.next_number(),
            status="pending",
            model=model,
            base_model=base_model,
            instructions_sha=live.instructions_sha,
            rubric=live.rubric,
            files=files,
            base=live.number,
            note=note or f"{live.label} with model {model}",
        )
        book.versions.append(candidate)
    write_book(folder / VERSIONS_FILE, book)
    return candidate


def plan_runs(
    ws: Workspace,
    name: str,
    chosen: list[Case],
    sides: dict[str, SideTally],
    trials: int,
    pass_score: float,
    on_reused: Callable[[Run], None] | None = None,
    *,
    live: str | None = None,
) -> list[Job]:
    """The runs still to make (or stale ones to grade again), interleaved by trial, case and side;
    stored graded runs of a side (a version's label) are counted into ``sides`` at once (and handed to
    ``on_reused``). A side whose label no stored run records (a proposal) gets every run new. A run stored
    before the machine had versions records none: it counts as side ``live``'s (the live version's label)
    when it was made the same way, as every reused run must be."""
    fingerprint = ws.load(name).rubric.fingerprint
    graded, stale = _reusable(ws, name, chosen, sides, trials, fingerprint, live)
    jobs: list[Job] = []
    for trial in range(trials):
        for case in chosen:
            for label, side in sides.items():
                old = graded.get((label, case.id), [])
                if trial < len(old):
                    side.add(old[trial], how="reused", pass_score=pass_score)
                    if on_reused is not None:
                        on_reused(old[trial])
                    continue
                again = stale.get((label, case.id), [])
                index = trial - len(old)
                jobs.append((label, case, trial, again[index] if index < len(again) else None))
    return jobs
