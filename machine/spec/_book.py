"""The versions book: ``versions.json`` beside a machine, numbering what decides how it behaves and is
graded (its own instructions, its model, its rubric fingerprint), with the exact text of the files each
version was made from, so a version can be written back byte for byte. Also what a run records as its
version (``version_label``)."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from machine.errors import BadInputError, DefinitionError, Fix, NotFoundError
from machine.runs import Record, now, write_atomic

from ._gate_report import GateReport
from ._machine import Machine

VERSIONS_FILE = "versions.json"
INSTRUCTIONS_FILE = "instructions.md"
MODEL_FILE = "model.json"
FILES = (INSTRUCTIONS_FILE, MODEL_FILE)
"""The machine's files a version keeps the exact text of (None: the version had no such file)."""
UNRECORDED = "unrecorded"
"""What a run records as its version when the machine's files match no recorded version."""

VersionStatus = Literal["live", "pending", "retired"]


class Version(Record):
    """One numbered version of a machine: its own instructions, model and rubric, and where it stands."""

    number: int
    status: VersionStatus
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


class Book(Record):
    """The whole of versions.json."""

    machine: str
    versions: list[Version] = Field(default_factory=list)
    texts: dict[str, str] = Field(default_factory=dict)
    """sha256 -> the exact text of a file some version had, each text once however many versions share it."""
    live_history: list[int] = Field(default_factory=list)
    """The numbers of the versions made live, in the order they were, the live one last: a revert steps
    back along it, so a version reverted away from is left behind. A versions.json written before it was
    kept gets the old order (the versions live once, by number)."""

    @model_validator(mode="after")
    def _known_history(self) -> Book:
        """Keep the history to versions that were live, ending with the live one."""
        live = [v.number for v in self.versions if v.live]
        if len(live) != 1:
            return self  # ``live`` says what is wrong when asked
        once = {v.number for v in self.versions if v.status != "pending"}
        history = [n for n in self.live_history if n in once]
        if not history:
            history = sorted(v.number for v in self.versions if v.status == "retired" and v.number < live[0])
        if not history or history[-1] != live[0]:
            history.append(live[0])
        self.live_history = [n for i, n in enumerate(history) if i == 0 or history[i - 1] != n]
        return self

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

    def previous_live(self) -> Version | None:
        """The version that was live before the live one, by the live history; None when none was."""
        return self.get(self.live_history[-2]) if len(self.live_history) > 1 else None

    def make_live(self, version: Version, *, back: bool = False) -> None:
        """Make ``version`` the live one and retire the one live before. ``back`` (a revert to the
        previous live version): the live one leaves the history; otherwise ``version`` joins its end."""
        if back:
            if self.previous_live() is not version:
                raise ValueError(f"{version.label} is not the version live before the live one")
            self.live_history.pop()
        elif not self.live_history or self.live_history[-1] != version.number:
            self.live_history.append(version.number)
        for other in self.versions:
            if other.live and other is not version:
                other.status = "retired"
        version.status = "live"


def sha256_text(text: str) -> str:
    """The sha256 of ``text`` as UTF-8: how a version names its instructions and the texts it keeps."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identity_of(machine: Machine, model: str | None = None) -> tuple[str, str, str]:
    """What makes a version: the own instructions' sha256, the model, the rubric fingerprint."""
    return (sha256_text(machine.own_instructions), model or machine.model, machine.rubric.fingerprint)


def read_book(path: Path) -> Book | None:
    """The versions file at ``path`` as it is, recording nothing (None: there is none yet)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return parse_book(path, data)


def parse_book(path: Path, data: bytes) -> Book:
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


def write_book(path: Path, book: Book) -> None:
    """Write ``book`` to ``path`` whole (atomically: a reader sees the old file or the new one)."""
    text = json.dumps(book.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, text.encode("utf-8"))


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """The exact bytes of the version files as they are now (None: absent)."""
    found: dict[str, bytes | None] = {}
    for file in FILES:
        try:
            found[file] = (folder / file).read_bytes()
        except FileNotFoundError:
            found[file] = None
    return found


def restore(folder: Path, files: dict[str, bytes | None]) -> None:
    """Put the version files back as ``files`` (a ``snapshot``) has them, removing the absent ones."""
    for file, data in files.items():
        path = folder / file
        if data is None:
            path.unlink(missing_ok=True)
        elif not path.exists() or path.read_bytes() != data:
            write_atomic(path, data)


def keep_texts(book: Book, found: dict[str, bytes | None], folder: Path) -> dict[str, str | None]:
    """Keep the texts ``found`` (a ``snapshot``) in the book; the version's ``files`` entry."""
    files: dict[str, str | None] = {}
    for file, data in found.items():
        if data is None:
            files[file] = None
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInputError(
                f"{folder / file} is not UTF-8 text; a version can only keep text files"
            ) from None
        key = sha256_text(text)
        book.texts.setdefault(key, text)
        files[file] = key
    return files


def files_of(book: Book, version: Version) -> dict[str, bytes | None]:
    """The exact bytes of ``version``'s files from the texts ``book`` keeps, to write them back."""
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


_BOOKS: dict[Path, tuple[tuple[int, int, int], Book]] = {}
"""versions.json as last parsed, by path, with the file's inode, size and modification time: a run looks
the file up (one ``stat``) and reads it again only when it changed (a commit replaces it)."""


def version_label(machine: Machine, model: str | None = None) -> str | None:
    """What a run of ``machine`` (with ``model``) records as its version: ``v3``, ``unrecorded`` when the
    files match no recorded version, None when the machine has no versions.json (never versioned)."""
    if machine.source is None:
        return None
    path = machine.source.parent / VERSIONS_FILE
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    signature = (status.st_ino, status.st_size, status.st_mtime_ns)
    cached = _BOOKS.get(path)
    if cached is None or cached[0] != signature:
        read = read_book(path)
        if read is None:
            return None
        cached = _BOOKS[path] = (signature, read)
    found = cached[1].match(identity_of(machine, model))
    return found.label if found else UNRECORDED


def open_book(folder: Path, machine: Machine, *, note: str = "") -> Book:
    """The versions of ``machine`` (whose files are in ``folder``); the first call records the machine as
    it is now as v1 (live)."""
    name = machine.name
    path = folder / VERSIONS_FILE
    book = read_book(path)
    if book is not None:
        if book.machine != name:
            raise DefinitionError(f"{path} is the versions file of machine {book.machine!r}, not {name!r}")
        return book
    book = Book(machine=name)
    instructions_sha, model, rubric = identity_of(machine)
    book.versions.append(
        Version(
            number=1,
            status="live",
            model=model,
            instructions_sha=instructions_sha,
            rubric=rubric,
            files=keep_texts(book, snapshot(folder), folder),
            note=note or "the machine as it was when versions were first listed",
        )
    )
    book.live_history = [1]
    write_book(path, book)
    return book


def require_live(book: Book, machine: Machine, what: str) -> Version:
    """The live version, which the machine's files must match before ``what`` may go ahead."""
    live = book.live
    if identity_of(machine) != live.identity:
        found = book.match(identity_of(machine))
        now_is = f"match {found.label} ({found.status})" if found else "match no recorded version"
        raise BadInputError(
            f"machine {machine.name!r}: its files (own instructions, model, rubric) {now_is}, not the live "
            f"version {live.label}, so it cannot {what}: restore them to {live.label}, or record them as a "
            "new live version",
            fixes=[Fix(operation="record", machine=machine.name, purpose="records them")],
        )
    return live
