"""Versions: what decides how a machine behaves and is graded, numbered and kept beside the machine.

A version is the machine's OWN instructions, its model and its rubric fingerprint. They are numbered in
``machines/<name>/versions.json`` (checked in with the machine), each with the exact text of the files it
was made from (``instructions.md`` and ``model.json``, or that it had none), so ``revert`` writes them back
byte for byte. The machine's files stay the truth: a version is recorded from them, and a pending
candidate never changes them until it is committed.

``propose`` measures a candidate (the live version with another model) against the live version on the
machine's held-out cases, reusing stored graded runs of either version, and records the report and the
promotion gate's decision with the candidate. ``commit`` makes it live only if it passed the gate
(``force`` overrides); ``revert`` makes the previous live version live again; ``update`` records a new
version by hand.

The gate: the candidate's mean over the held-out cases must be higher than the live version's, by at least
``min_z`` standard errors of the per-case difference. When every case moved by the same amount the standard
error is 0 and there is no z: that passes only when the difference is positive and at least two cases
were compared (one case alone has no spread to judge by). A comparison the budget cut short never passes.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import _stats
from ._cases import Case, load_cases
from ._errors import BadInputError, BudgetExceeded, CommitRefused, DefinitionError, NotFoundError
from ._runs import Run, now
from ._spec import Machine

if TYPE_CHECKING:
    from ._workspace import Workspace

VERSIONS_FILE = "versions.json"
INSTRUCTIONS_FILE = "instructions.md"
MODEL_FILE = "model.json"
FILES = (INSTRUCTIONS_FILE, MODEL_FILE)
"""The machine's files a version keeps the exact text of (None: the version had no such file)."""
UNRECORDED = "unrecorded"
"""What a run records as its version when the machine's files match no recorded version."""
DEFAULT_MIN_Z = 2.0

Status = Literal["live", "pending", "retired"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SideFigures(_Model):
    """One version's runs on the held-out cases."""

    version: str
    model: str
    runs: int = 0
    """Runs counted (reused and new), failed ones included."""
    reused: int = 0
    """Stored runs of this version reused, graded under the current rubric."""
    regraded: int = 0
    """Stored runs reused after grading them again with the current evaluator."""
    new: int = 0
    """Runs made for this proposal."""
    errors: int = 0
    unscored: int = 0
    """Runs with no scored criterion (left out of the figures)."""
    mean: float | None = None
    pass_rate: float | None = None


class CriterionFigures(_Model):
    """One criterion's mean and pass rate over the scored runs, before (live) and after (candidate)."""

    before: float | None = None
    after: float | None = None
    before_pass_rate: float | None = None
    after_pass_rate: float | None = None
    unscored_before: int = 0
    unscored_after: int = 0


class GateReport(_Model):
    """What ``propose`` found and decided: the data, each version's figures, each criterion before and
    after, the paired difference (candidate - live) and the gate's decision in words."""

    machine: str
    live: str
    candidate: str
    cases_file: str
    cases: int
    trials: int
    before: SideFigures
    after: SideFigures
    criteria: dict[str, CriterionFigures] = Field(default_factory=dict)
    diff: float | None = None
    se: float | None = None
    z: float | None = None
    paired_cases: int = 0
    min_z: float = DEFAULT_MIN_Z
    passed: bool = False
    decision: str = ""
    stopped: str | None = None
    cost_usd: float = 0.0
    created_at: datetime = Field(default_factory=now)


class Version(_Model):
    number: int
    status: Status
    model: str
    base_model: str | None = None
    """The model a fine-tuned checkpoint is priced as."""
    instructions_sha: str
    """sha256 of the machine's own instructions (as the machine sees them)."""
    rubric: str
    """The rubric's fingerprint."""
    files: dict[str, str | None]
    """instructions.md and model.json: the sha256 of the exact text (kept under ``texts``), or None
    when the version had no such file."""
    created_at: datetime = Field(default_factory=now)
    note: str = ""
    base: int | None = None
    """A candidate's: the live version it was measured against (and may replace)."""
    committed_at: datetime | None = None
    forced: bool = False
    """Committed with ``force`` although it did not pass the gate."""
    report: GateReport | None = None

    @property
    def label(self) -> str:
        return f"v{self.number}"

    @property
    def live(self) -> bool:
        return self.status == "live"

    @property
    def passed(self) -> bool | None:
        """Whether the candidate passed the promotion gate; None for a version never proposed."""
        return None if self.report is None else self.report.passed

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.instructions_sha, self.model, self.rubric)


class Book(_Model):
    """The whole of versions.json."""

    machine: str
    versions: list[Version] = Field(default_factory=list)
    texts: dict[str, str] = Field(default_factory=dict)
    """sha256 -> the exact text of a file some version had, each text once however many versions share it."""

    @property
    def live(self) -> Version:
        found = [v for v in self.versions if v.live]
        if len(found) != 1:
            raise DefinitionError(
                f"versions.json of machine {self.machine!r} must have exactly one live version, "
                f"has {len(found)}; fix the file (git can show what changed)"
            )
        return found[0]

    def get(self, label: str | int) -> Version:
        text = str(label).strip().lower().removeprefix("v")
        version = next((v for v in self.versions if str(v.number) == text), None)
        if version is None:
            known = ", ".join(v.label for v in self.versions)
            raise NotFoundError(
                f"machine {self.machine!r} has no version {label!r}; its versions are {known}"
            )
        return version

    def match(self, identity: tuple[str, str, str]) -> Version | None:
        """The recorded version with this identity: the live one first, then the newest pending, then
        the newest."""
        found = [v for v in self.versions if v.identity == identity]
        order = {"live": 0, "pending": 1, "retired": 2}
        return min(found, key=lambda v: (order[v.status], -v.number)) if found else None

    def next_number(self) -> int:
        return max((v.number for v in self.versions), default=0) + 1


@dataclass
class Candidate:
    """A pending version and what ``propose`` measured about it."""

    version: Version
    report: GateReport

    @property
    def passed(self) -> bool:
        return self.report.passed

    @property
    def label(self) -> str:
        return self.version.label


# ---------------------------------------------------------------- files


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identity_of(machine: Machine, model: str | None = None) -> tuple[str, str, str]:
    """What makes a version: the own instructions' sha256, the model, the rubric fingerprint."""
    return (_sha(machine.own_instructions), model or machine.model, machine.rubric.fingerprint)


def _folder(ws: Workspace, name: str) -> Path:
    return ws.machines_dir / name


def _read_book(path: Path, name: str) -> Book | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return _parse_book(path, data)


def _parse_book(path: Path, data: bytes) -> Book:
    try:
        return Book.model_validate(json.loads(data.decode("utf-8")))
    except json.JSONDecodeError as error:
        raise DefinitionError(
            f"{path} is not valid JSON ({error}); fix it (git can show what changed)"
        ) from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise DefinitionError(f"{path} is malformed ({where}: {first['msg']}); fix it") from None


def _write_atomic(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


def _write_book(path: Path, book: Book) -> None:
    text = json.dumps(book.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    _write_atomic(path, text.encode("utf-8"))


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """The exact bytes of the version files as they are now (None: absent)."""
    found: dict[str, bytes | None] = {}
    for file in FILES:
        try:
            found[file] = (folder / file).read_bytes()
        except FileNotFoundError:
            found[file] = None
    return found


def _restore(folder: Path, files: dict[str, bytes | None]) -> None:
    for file, data in files.items():
        path = folder / file
        if data is None:
            path.unlink(missing_ok=True)
        elif not path.exists() or path.read_bytes() != data:
            _write_atomic(path, data)


def _keep(book: Book, snapshot: dict[str, bytes | None], folder: Path) -> dict[str, str | None]:
    """Keep the snapshot's texts in the book; the version's ``files`` entry."""
    files: dict[str, str | None] = {}
    for file, data in snapshot.items():
        if data is None:
            files[file] = None
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInputError(
                f"{folder / file} is not UTF-8 text; a version can only keep text files"
            ) from None
        key = _sha(text)
        book.texts.setdefault(key, text)
        files[file] = key
    return files


def _files_of(book: Book, version: Version) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for file in FILES:
        key = version.files.get(file)
        if key is None:
            found[file] = None
            continue
        if key not in book.texts:
            raise DefinitionError(
                f"versions.json of machine {book.machine!r}: {version.label}'s {file} ({key[:12]}) is "
                "missing from its texts, so it cannot be written back"
            )
        found[file] = book.texts[key].encode("utf-8")
    return found


def model_json(model: str, base_model: str | None = None) -> str:
    """The text of a committed model.json."""
    data: dict[str, str] = {"model": model}
    if base_model:
        data["base_model"] = base_model
    return json.dumps(data, indent=2) + "\n"


def _fresh(ws: Workspace, name: str) -> Machine:
    """Load ``name`` again from its files: they may have changed since it was imported."""
    loader = ws.loader
    loader._cache.clear()
    for module in [m for m in sys.modules if m == loader.package or m.startswith(loader.package + ".")]:
        del sys.modules[module]
    importlib.invalidate_caches()
    return ws.load(name)


_LABELS: dict[Path, tuple[bytes, Book]] = {}
"""versions.json as last read, by path: each run reads the file (it is small) but parses it only when it
changed."""


def version_label(machine: Machine, model: str | None = None) -> str | None:
    """What a run of ``machine`` (with ``model``) records as its version: ``v3``, ``unrecorded`` when the
    files match no recorded version, None when the machine has no versions.json (never versioned)."""
    if machine.source is None:
        return None
    path = machine.source.parent / VERSIONS_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    cached = _LABELS.get(path)
    if cached is not None and cached[0] == data:
        book = cached[1]
    else:
        book = _parse_book(path, data)
        _LABELS[path] = (data, book)
    found = book.match(identity_of(machine, model))
    return found.label if found else UNRECORDED


# ---------------------------------------------------------------- the book


def _book(ws: Workspace, name: str, spec: Machine, *, note: str = "") -> Book:
    """The machine's versions; the first call records the machine as it is now as v1 (live)."""
    path = _folder(ws, name) / VERSIONS_FILE
    book = _read_book(path, name)
    if book is not None:
        if book.machine != name:
            raise DefinitionError(f"{path} is the versions file of machine {book.machine!r}, not {name!r}")
        return book
    book = Book(machine=name)
    instructions_sha, model, rubric = identity_of(spec)
    book.versions.append(
        Version(
            number=1,
            status="live",
            model=model,
            instructions_sha=instructions_sha,
            rubric=rubric,
            files=_keep(book, _snapshot(_folder(ws, name)), _folder(ws, name)),
            note=note or "the machine as it was when versions were first listed",
        )
    )
    _write_book(path, book)
    return book


def _require_live(book: Book, spec: Machine, what: str) -> Version:
    """The live version, which the machine's files must match before ``what`` may go ahead."""
    live = book.live
    if identity_of(spec) != live.identity:
        found = book.match(identity_of(spec))
        now_is = f"match {found.label} ({found.status})" if found else "match no recorded version"
        raise BadInputError(
            f"machine {spec.name!r}: its files (own instructions, model, rubric) {now_is}, not the live "
            f"version {live.label}, so it cannot {what}: record them as a version with "
            f"`machine versions {spec.name} --record`, or restore them to {live.label}"
        )
    return live


def versions(ws: Workspace, name: str) -> list[Version]:
    """The machine's versions, oldest first; the first call records the current machine as v1."""
    spec = _fresh(ws, name)
    return list(_book(ws, name, spec).versions)


def current(ws: Workspace, name: str) -> Version | None:
    """The recorded version the machine's files match now; None when they match none (their runs
    record ``unrecorded``)."""
    spec = _fresh(ws, name)
    return _book(ws, name, spec).match(identity_of(spec))


def texts_of(ws: Workspace, name: str, label: str | int) -> dict[str, str | None]:
    """The exact text of each file the version had (None: it had none)."""
    spec = _fresh(ws, name)
    book = _book(ws, name, spec)
    files = _files_of(book, book.get(label))
    return {file: None if data is None else data.decode("utf-8") for file, data in files.items()}


def _write_and_check(
    ws: Workspace,
    name: str,
    files: dict[str, bytes | None],
    expect: Callable[[Machine], str | None],
) -> Machine:
    """Write ``files`` into the machine's folder and load it again; when ``expect`` finds the result
    wrong (it returns the reason), put every file back as it was and raise."""
    folder = _folder(ws, name)
    before = _snapshot(folder)
    _restore(folder, files)
    try:
        spec = _fresh(ws, name)
        problem = expect(spec)
    except Exception:
        _restore(folder, before)
        _fresh(ws, name)
        raise
    if problem is not None:
        _restore(folder, before)
        _fresh(ws, name)
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


def _switch(book: Book, new_live: Version) -> None:
    for v in book.versions:
        if v.live and v is not new_live:
            v.status = "retired"
    new_live.status = "live"


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
    spec = _fresh(ws, name)
    book = _book(ws, name, spec)
    folder = _folder(ws, name)
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
    if identity == live.identity and live.files == _keep(Book(machine=name), _snapshot(folder), folder):
        return live
    version = Version(
        number=book.next_number(),
        status="live",
        model=identity[1],
        base_model=base_model if model is not None else None,
        instructions_sha=identity[0],
        rubric=identity[2],
        files=_keep(book, _snapshot(folder), folder),
        note=note or "recorded by hand",
        committed_at=now(),
    )
    book.versions.append(version)
    _switch(book, version)
    _write_book(folder / VERSIONS_FILE, book)
    return version


def commit(ws: Workspace, name: str, *, force: bool = False) -> Version:
    """Make the newest pending candidate live, only if it passed the promotion gate (``force``
    overrides): write its model.json and record it live; the live version is retired.

    Raises CommitRefused (with the candidate's report) when it did not pass.
    """
    spec = _fresh(ws, name)
    book = _book(ws, name, spec)
    pending = [v for v in book.versions if v.status == "pending"]
    if not pending:
        raise BadInputError(
            f"machine {name!r} has no pending candidate to commit: make one with "
            f"`machine propose {name} --model MODEL`"
        )
    candidate = max(pending, key=lambda v: v.number)
    live = book.live
    if candidate.base != live.number:
        raise BadInputError(
            f"candidate {candidate.label} of machine {name!r} was measured against v{candidate.base}, "
            f"but {live.label} is live now: propose it again to measure it against {live.label}"
        )
    _require_live(book, spec, f"commit {candidate.label}")
    report = candidate.report
    if report is None:
        raise BadInputError(
            f"candidate {candidate.label} of machine {name!r} has no report (its proposal did not finish): "
            f"propose it again"
        )
    if not report.passed and not force:
        raise CommitRefused(
            f"candidate {candidate.label} of machine {name!r} did not pass the promotion gate "
            f"({report.decision}), so {live.label} stays live; pass --force (force=True from Python) "
            "to commit it anyway",
            report=report,
            version=candidate,
        )
    folder = _folder(ws, name)
    spec = _write_and_check(
        ws,
        name,
        {MODEL_FILE: _files_of(book, candidate)[MODEL_FILE]},  # all a candidate changes
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
    candidate.forced = not report.passed
    candidate.files = _keep(book, _snapshot(folder), folder)
    _switch(book, candidate)
    _write_book(folder / VERSIONS_FILE, book)
    return candidate


def revert(ws: Workspace, name: str, *, to: str | int | None = None) -> Version:
    """Make the previous live version (or version ``to``) live again, writing back its instructions.md
    and model.json exactly as they were (removing one it did not have)."""
    spec = _fresh(ws, name)
    book = _book(ws, name, spec)
    live = _require_live(book, spec, "be reverted")
    if to is not None:
        target = book.get(to)
        if target.status == "pending":
            raise BadInputError(
                f"{target.label} of machine {name!r} is a pending candidate, never live: commit it instead"
            )
        if target.live:
            raise BadInputError(f"{target.label} of machine {name!r} is already live")
    else:
        earlier = [v for v in book.versions if v.status == "retired" and v.number < live.number]
        if not earlier:
            raise BadInputError(
                f"machine {name!r} has no version before {live.label} to revert to "
                f"(see `machine versions {name}`)"
            )
        target = max(earlier, key=lambda v: v.number)
    if target.rubric != spec.rubric.fingerprint:
        raise BadInputError(
            f"{target.label} of machine {name!r} was made under another rubric (fingerprint "
            f"{target.rubric[:12]}, now {spec.rubric.fingerprint[:12]}); revert writes back instructions.md "
            "and model.json, not the rubric: restore the rubric from git first"
        )
    _write_and_check(
        ws,
        name,
        _files_of(book, target),
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
    _switch(book, target)
    _write_book(_folder(ws, name) / VERSIONS_FILE, book)
    return target


# ---------------------------------------------------------------- propose


@dataclass
class _Side:
    figures: SideFigures
    machine_model: str
    scores: dict[str, list[float]]
    criteria: dict[str, list[float]]
    criteria_passes: dict[str, int]
    criteria_unscored: dict[str, int]
    scored: int = 0
    passes: int = 0

    def add(self, run: Run, *, how: Literal["reused", "regraded", "new"], pass_score: float) -> None:
        f = self.figures
        f.runs += 1
        setattr(f, how, getattr(f, how) + 1)
        if run.status == "error":
            f.errors += 1
            return
        card = run.scorecard
        score = run.score
        if card is None or score is None:
            f.unscored += 1
            return
        self.scores.setdefault(run.case_id or "", []).append(score)
        self.scored += 1
        self.passes += score >= pass_score - 1e-9
        for criterion, grade in card.criteria.items():
            if grade.score is None:
                self.criteria_unscored[criterion] = self.criteria_unscored.get(criterion, 0) + 1
                continue
            self.criteria.setdefault(criterion, []).append(grade.score)
            if grade.score >= pass_score - 1e-9:
                self.criteria_passes[criterion] = self.criteria_passes.get(criterion, 0) + 1

    def finish(self) -> None:
        values = [s for scores in self.scores.values() for s in scores]
        self.figures.mean = _stats.mean(values) if values else None
        self.figures.pass_rate = self.passes / self.scored if self.scored else None


def _side(version: Version) -> _Side:
    return _Side(SideFigures(version=version.label, model=version.model), version.model, {}, {}, {}, {})


def gate(paired: _stats.Paired | None, min_z: float, stopped: str | None) -> tuple[bool, str]:
    """The promotion gate's decision and the reason in words."""
    if stopped:
        return False, f"the comparison stopped early ({stopped}), so the data is incomplete"
    if paired is None or paired.cases == 0:
        return False, "no held-out case has scored runs of both versions, so there is nothing to compare"
    if paired.diff <= 0:
        return False, (
            f"the candidate's mean is not higher (difference {paired.diff:+.3f} over {paired.cases} cases)"
        )
    if paired.cases < 2:
        return False, "only one held-out case has scored runs of both versions: no standard error to judge by"
    if paired.se == 0:
        return True, (
            f"every one of the {paired.cases} held-out cases scored {paired.diff:+.3f} higher "
            "(standard error 0)"
        )
    z = paired.diff / paired.se
    if z >= min_z:
        return True, (
            f"the candidate scored {paired.diff:+.3f} higher, {z:.2f} standard errors above zero "
            f"(at least {min_z:g} needed)"
        )
    return False, (
        f"the candidate scored {paired.diff:+.3f} higher, only {z:.2f} standard errors above zero "
        f"({min_z:g} needed): not evidence that it is better"
    )


def _holdout(ws: Workspace, name: str, cases: str | Path | Sequence[Case] | None) -> tuple[list[Case], str]:
    if cases is not None and not isinstance(cases, (str, Path)):
        return list(cases), "(given)"
    if cases is None:
        path = _folder(ws, name) / "holdout.json"
        if not path.exists():
            raise NotFoundError(
                f"machine {name!r} has no held-out cases: write {path} (cases never used to change the "
                "machine), or pass --cases FILE"
            )
        return load_cases(path), path.name
    chosen = ws.cases(name, cases)
    return chosen, Path(cases).as_posix()


def _reusable(
    ws: Workspace, name: str, chosen: list[Case], sides: dict[str, _Side], trials: int, fingerprint: str
) -> tuple[dict[tuple[str, str], list[Run]], dict[tuple[str, str], list[Run]]]:
    """Stored runs of either version on these cases, made the same way (harness, model, effort, input):
    graded under the current rubric (reused as they are) or not (graded again), at most ``trials`` a case."""
    by_id = {c.id: c for c in chosen}
    instructions = ws.load(name).instructions
    effort = None if ws.effort is None else ws.effort.value
    harness = ws.harness.name
    graded: dict[tuple[str, str], list[Run]] = {}
    stale: dict[tuple[str, str], list[Run]] = {}
    for run in ws.store.iter_runs(name):
        side = sides.get(run.version or "")
        case = by_id.get(run.case_id or "")
        if (
            side is None
            or case is None
            or run.status != "ok"
            or run.history
            or run.input != case.input
            or run.instructions != instructions
            or run.model != side.machine_model
            or run.harness != harness
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
    *,
    model: str,
    trials: int = 3,
    cases: str | Path | Sequence[Case] | None = None,
    min_z: float = DEFAULT_MIN_Z,
    base_model: str | None = None,
    concurrency: int = 4,
    pass_score: float = 1.0,
    note: str = "",
    on_run: Callable[[Run], None] | None = None,
) -> Candidate:
    """Make a pending candidate: the live version with ``model``. Run it and the live version on the
    held-out cases (holdout.json beside the machine, or ``cases``), ``trials`` each, interleaved;
    stored runs of either version on those cases are reused (graded again with the current evaluator
    when they were graded under an older rubric), so only the missing trials run. Both are graded with
    the current evaluator; the report, with the gate's decision, is kept with the candidate in
    versions.json. The machine's files are not changed.
    """
    if trials < 1:
        raise BadInputError("trials must be at least 1")
    if concurrency < 1:
        raise BadInputError("concurrency must be at least 1")
    if min_z < 0:
        raise BadInputError(f"min_z must not be negative, got {min_z}")
    model = model.strip()
    if not model:
        raise BadInputError("propose needs the candidate's model (--model MODEL)")
    spec = _fresh(ws, name)
    if spec.counterpart is not None:
        raise BadInputError(
            f"machine {name!r} holds conversations with a counterpart; propose measures single runs only"
        )
    book = _book(ws, name, spec)
    live = _require_live(book, spec, "have a candidate proposed")
    if model == live.model:
        raise BadInputError(f"{live.label} of machine {name!r} already runs {model!r}: propose another model")
    chosen, cases_file = _holdout(ws, name, cases)
    if not chosen:
        raise BadInputError(f"the held-out cases of machine {name!r} ({cases_file}) are empty")
    if base_model:
        ws.budget.price_as.setdefault(model, base_model)

    folder = _folder(ws, name)
    identity = (live.instructions_sha, model, live.rubric)
    files = dict(live.files)
    model_text = model_json(model, base_model)
    files[MODEL_FILE] = _sha(model_text)
    book.texts.setdefault(_sha(model_text), model_text)
    existing = next(
        (
            v
            for v in book.versions
            if v.status == "pending" and v.identity == identity and v.base == live.number
        ),
        None,
    )
    if existing is not None:
        candidate = existing
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
    _write_book(folder / VERSIONS_FILE, book)  # recorded first, so the candidate's runs record its number

    sides = {live.label: _side(live), candidate.label: _side(candidate)}
    fingerprint = spec.rubric.fingerprint
    graded, stale = _reusable(ws, name, chosen, sides, trials, fingerprint)
    jobs: list[tuple[str, Case, int, Run | None]] = []
    for trial in range(trials):
        for case in chosen:
            for label, side in sides.items():
                old = graded.get((label, case.id), [])
                if trial < len(old):
                    side.add(old[trial], how="reused", pass_score=pass_score)
                    continue
                again = stale.get((label, case.id), [])
                index = trial - len(old)
                jobs.append((label, case, trial, again[index] if index < len(again) else None))

    spent_before = ws.budget.spent
    stopped: str | None = None
    from ._suite import BatchWriter  # here: _suite imports _workspace, which imports this module

    writer = BatchWriter(ws.store)
    queue = iter(jobs)

    async def worker() -> None:
        nonlocal stopped
        for label, case, trial, old in queue:
            if stopped:
                return
            side = sides[label]
            try:
                if old is not None:
                    run = await ws.grade(old, spec, pass_score=pass_score, store=False)
                else:
                    run = await ws.run(
                        spec, case.input, case=case, trial=trial, model=side.machine_model, store=False
                    )
                    run = run.model_copy(update={"version": label})
                    if run.status == "ok":
                        run = await ws.grade(run, spec, pass_score=pass_score, store=False)
            except BudgetExceeded as error:
                stopped = str(error)
                return
            side.add(run, how="regraded" if old is not None else "new", pass_score=pass_score)
            writer.add([run])
            if on_run is not None:
                on_run(run)

    try:
        async with anyio.create_task_group() as group:
            for _ in range(min(concurrency, max(1, len(jobs)))):
                group.start_soon(worker)
    finally:
        writer.flush()

    before, after = sides[live.label], sides[candidate.label]
    before.finish()
    after.finish()
    paired = None
    if any(before.scores.get(c.id) and after.scores.get(c.id) for c in chosen):
        paired = _stats.paired(before.scores, after.scores)
    passed, decision = gate(paired, min_z, stopped)
    criteria: dict[str, CriterionFigures] = {}
    for criterion in spec.rubric:
        figures = CriterionFigures(
            unscored_before=before.criteria_unscored.get(criterion, 0),
            unscored_after=after.criteria_unscored.get(criterion, 0),
        )
        for side, mean_field, rate_field in (
            (before, "before", "before_pass_rate"),
            (after, "after", "after_pass_rate"),
        ):
            values = side.criteria.get(criterion, [])
            if values:
                setattr(figures, mean_field, _stats.mean(values))
                setattr(figures, rate_field, side.criteria_passes.get(criterion, 0) / len(values))
        criteria[criterion] = figures
    report = GateReport(
        machine=name,
        live=live.label,
        candidate=candidate.label,
        cases_file=cases_file,
        cases=len(chosen),
        trials=trials,
        before=before.figures,
        after=after.figures,
        criteria=criteria,
        diff=None if paired is None else paired.diff,
        se=None if paired is None else paired.se,
        z=None if paired is None else paired.z,
        paired_cases=0 if paired is None else paired.cases,
        min_z=min_z,
        passed=passed,
        decision=decision,
        stopped=stopped,
        cost_usd=ws.budget.spent - spent_before,
    )
    book = _book(ws, name, spec)  # read again: runs may have been recorded meanwhile, nothing else changes it
    stored = book.get(candidate.number)
    stored.report = report
    _write_book(folder / VERSIONS_FILE, book)
    return Candidate(version=stored, report=report)


# ---------------------------------------------------------------- words


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def format_report(report: GateReport) -> str:
    """The report in words: the data, each version's figures, each criterion before and after, the
    paired difference and the decision."""
    b, a = report.before, report.after
    lines = [
        f"{report.machine}: candidate {report.candidate} ({a.model}) against live {report.live} ({b.model})",
        f"data: {report.cases} held-out cases from {report.cases_file}, {report.trials} trials each",
    ]
    for label, side in ((f"live {report.live}", b), (f"candidate {report.candidate}", a)):
        lines.append(
            f"  {label}: {side.runs} runs ({side.reused} reused, {side.regraded} regraded, {side.new} new), "
            f"{side.errors} failed, {side.unscored} unscored; mean {_score(side.mean)}, "
            f"pass rate {_rate(side.pass_rate)}"
        )
    if report.criteria:
        lines.append("criteria (mean before -> after, pass rate before -> after):")
        width = max(len(c) for c in report.criteria)
        for criterion, f in report.criteria.items():
            unscored = f.unscored_before + f.unscored_after
            extra = f", {unscored} unscored" if unscored else ""
            lines.append(
                f"  {criterion:<{width}}  {_score(f.before)} -> {_score(f.after)}   "
                f"{_rate(f.before_pass_rate)} -> {_rate(f.after_pass_rate)}{extra}"
            )
    if report.diff is not None:
        z = "-" if report.z is None else f"{report.z:.2f}"
        lines.append(
            f"candidate - live: {report.diff:+.3f}, standard error {_score(report.se)} over "
            f"{report.paired_cases} cases, z {z} (gate: z >= {report.min_z:g})"
        )
    verdict = "PASSED" if report.passed else "NOT PASSED"
    lines.append(f"decision: {verdict}: {report.decision}")
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    lines.append(f"cost: ${report.cost_usd:.4f}")
    return "\n".join(lines)


def to_json(version: Version) -> dict[str, Any]:
    """A version as ``machine versions --json`` prints it (its files' texts left out)."""
    return version.model_dump(mode="json")
