"""Which of a workspace's machine files a model wrote, and which of those the person has trusted.

``machine specialize`` and ``machine draft-rubric`` record every Python file the author model wrote, with
its sha256, as written by a model, and start the file with a line that says so (``MARK``). Such a file is
imported (by ``machine suite``, ``machine list``, the SDK, the MCP tools) only while its content is one the
person has trusted with ``machine trust NAME``, after reviewing it; an edit of any kind after that makes it
untrusted again until it is trusted anew. A file no model wrote is the person's own and needs no trust.

The record is ``trust.json`` in the workspace's ``.machine`` folder: beside the store, private to its owner,
hidden from every sandbox, out of reach of what a model writes (a machine's own folder) and kept out of git
(the folder gets a ``.gitignore``). The marking line fails closed where the record does not: a marked file
the record does not know (the record deleted or rolled back, the folder copied or cloned elsewhere, the
file renamed) is untrusted.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from machine.errors import DefinitionError, NotTrusted
from machine.runs import Model, write_atomic

from ._readable import foreign_name, hidden_character

TRUST_FILE = "trust.json"
"""The record's name in a workspace's data folder (``.machine``)."""
MARK = "# Written by a model"
"""How the first line of every Python file a model wrote for a machine starts."""
_DRAFT_MARK = MARK + " as a draft"
_MARKED = re.compile(re.escape(MARK) + r"(?P<draft> as a draft)?(?: \((?P<by>.*)\): )?")
TrustState = Literal["trusted", "untrusted", "changed", "missing"]


class Entry(Model):
    """One file a model wrote, as the record keeps it."""

    machine: str
    written: str
    """The sha256 of what the model wrote."""
    by: str
    """What wrote it (``specialize dev`` with the author's model, ``draft-rubric dev``)."""
    at: str
    trusted: list[str] = Field(default_factory=list)
    """Every content (sha256) the person has trusted, the newest last."""
    trusted_at: str | None = None
    draft: bool = False
    """A proposal beside the machine (rubric_draft.py), not one of its files: it keeps the machine from
    loading only if something imports it."""


class FileTrust(Model):
    """One model-written file now: where it is (relative to the machines folder), its state and hash."""

    path: str
    machine: str
    state: TrustState
    sha256: str | None = None
    """Its content's hash now (None where it is missing)."""
    by: str = ""
    at: str = ""
    draft: bool = False


class _Record(Model):
    version: int = 1
    files: dict[str, Entry] = Field(default_factory=dict)


def sha256_of(path: Path) -> str | None:
    """The file's sha256, or None where it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def unreviewable(text: str) -> str | None:
    """Why Python source ``text`` cannot be reviewed by reading it (what a reader is shown is not what
    Python runs), or None: a declared encoding other than UTF-8, a name (or other code outside strings
    and comments) that is not ASCII, or a character anywhere that a reader cannot see."""
    for line in text.splitlines()[:2]:
        declared = _CODING.match(line)
        if declared and declared.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
            encoding = declared.group(1)
            return f"it declares the source encoding {encoding!r}, so Python runs other text than is shown"
    return foreign_name(text) or hidden_character(text)


def marked(text: str, by: str, machine: str, *, draft: bool = False) -> str:
    """``text`` as a model's file is written: starting with its marking line, which says who wrote it and
    how to trust it."""
    head = _DRAFT_MARK if draft else MARK
    said = " ".join(by.split())
    return (
        f"{head} ({said}): nothing imports this file until you review and trust machine {machine}.\n" + text
    )


def _unrecorded(path: Path, key: str) -> Entry | None:
    """The entry of a file the record does not know whose marking line says a model wrote it; None for a
    file without one."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(1_000).decode("utf-8", "replace")
    except OSError:
        return None
    found = _MARKED.match(first)
    if found is None:
        return None
    by = found["by"] or "a model"
    return Entry(machine=key.rpartition("/")[0], written="", by=by, at="", draft=bool(found["draft"]))


def _empty() -> _Record:
    """A record of no files, built without validation: a workspace with no record (most of them) never
    builds the model's validator, which costs a tenth of ``machine list``."""
    return _Record.model_construct(version=1, files={})


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class TrustBook:
    """The record of model-written files of the machines folder ``machines_dir``, kept at ``path``."""

    def __init__(self, path: Path, machines_dir: Path) -> None:
        self.path = path
        self.machines_dir = machines_dir.resolve()
        self._seen: tuple[int, int] | None = None
        self._record = _empty()

    def _read(self) -> _Record:
        """The record as it is on disk now (re-read only when the file changed)."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            self._seen, self._record = None, _empty()
            return self._record
        except OSError as error:
            raise DefinitionError(f"{self.path} cannot be read: {error.strerror or error}") from None
        if self._seen != (info.st_mtime_ns, info.st_size):
            try:
                self._record = _Record.model_validate_json(self.path.read_bytes())
            except (OSError, ValidationError, ValueError) as error:
                raise DefinitionError(
                    f"{self.path} does not read as the record of trusted files ({error}); nothing a model "
                    "wrote is loaded until it does: restore it from a backup, or delete it and review and "
                    "trust each machine again (the list of files not trusted then shows every file a model "
                    "wrote)"
                ) from None
            self._seen = (info.st_mtime_ns, info.st_size)
        return self._record

    def _write(self, record: _Record) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        ignore = self.path.parent / ".gitignore"
        if not ignore.exists():  # the record, and the store beside it, are the person's, not the repository's
            write_atomic(ignore, b"*\n")
        data = json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        write_atomic(self.path, data.encode("utf-8"), private=True)
        self._seen = None

    def _key(self, path: Path) -> str:
        return path.resolve().relative_to(self.machines_dir).as_posix()

    def record(
        self, machine: str, files: Mapping[Path, str | bytes], *, by: str, draft: bool = False
    ) -> None:
        """Note that a model is writing ``files`` (path -> content, in machine ``machine``'s folder):
        untrusted until the person trusts them. Called before they are written, so that no crash in
        between leaves a model's file looking like the person's own. Contents trusted before stay trusted."""
        record = self._read().model_copy(deep=True)
        for path, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            key = self._key(path)
            earlier = record.files.get(key)
            record.files[key] = Entry(
                machine=machine,
                written=hashlib.sha256(data).hexdigest(),
                by=by,
                at=_now(),
                trusted=earlier.trusted if earlier else [],
                trusted_at=earlier.trusted_at if earlier else None,
                draft=draft,
            )
        self._write(record)

    def entries(self, machine: str | None = None) -> dict[str, Entry]:
        """Every model-written file (of ``machine``) by path relative to the machines folder: the record's
        entries, and the marked files it does not know, never trusted."""
        recorded = self._read().files
        found = {k: e for k, e in recorded.items() if machine is None or e.machine == machine}
        folder = self.machines_dir / machine if machine else self.machines_dir
        for path in folder.glob("*.py") if machine else folder.rglob("*.py"):
            try:
                key = self._key(path)
            except ValueError:  # a link that leads out of the machines folder: never imported from here
                continue
            entry = _unrecorded(path, key) if key not in recorded else None
            if entry is not None:
                found[key] = entry
        return dict(sorted(found.items()))

    def state(self, key: str, entry: Entry) -> FileTrust:
        digest = sha256_of(self.machines_dir / key)
        state: TrustState
        if digest is None:
            state = "missing"
        elif digest in entry.trusted:
            state = "trusted"
        else:
            state = "changed" if entry.trusted else "untrusted"
        return FileTrust(
            path=key,
            machine=entry.machine,
            state=state,
            sha256=digest,
            by=entry.by,
            at=entry.at,
            draft=entry.draft,
        )

    def files(self, machine: str | None = None) -> list[FileTrust]:
        """Every model-written file (of ``machine``, when given) and its state now, by path."""
        return [self.state(key, entry) for key, entry in self.entries(machine).items()]

    def pending(self, machine: str | None = None) -> list[FileTrust]:
        """The model-written files (of ``machine``) that may not be imported now: untrusted or changed."""
        return [f for f in self.files(machine) if f.state in ("untrusted", "changed")]

    def of_file(self, path: Path) -> FileTrust | None:
        """The state of the file at ``path`` when a model wrote it; None for a file of the person's own."""
        try:
            key = self._key(path)
        except ValueError:
            return None
        entry = self._read().files.get(key) or _unrecorded(path, key)
        return None if entry is None else self.state(key, entry)

    def trust(self, machine: str, reviewed: Mapping[str, str] | None = None) -> list[FileTrust]:
        """Trust the model-written files of ``machine`` as they are now; with ``reviewed`` (path -> the
        sha256 the person read), only if each is still what they read. Returns what was trusted."""
        record = self._read().model_copy(deep=True)
        done = []
        for key, known in self.entries(machine).items():
            entry = record.files.setdefault(key, known)
            digest = sha256_of(self.machines_dir / key)
            if digest is None:
                continue
            if reviewed is not None and reviewed.get(key) != digest:
                raise DefinitionError(
                    f"machines/{key} changed after it was shown for review, so nothing was trusted: "
                    "review it again"
                )
            entry.written = entry.written or digest
            if digest not in entry.trusted:
                entry.trusted.append(digest)
                entry.trusted_at = _now()
            done.append(self.state(key, entry))
        self._write(record)
        return done

    def blocking(self, machine: str) -> list[FileTrust]:
        """The files that keep machine ``machine`` from loading: its own model-written files that are
        untrusted or changed (a draft beside it blocks only what imports the draft)."""
        return [f for f in self.pending(machine) if not f.draft]

    def refuse(self, machine: str) -> None:
        """Raise NotTrusted when machine ``machine`` holds model-written files that may not be imported."""
        blocking = self.blocking(machine)
        if blocking:
            raise NotTrusted(untrusted_message(machine, blocking), machine=machine, files=blocking)


def untrusted_message(machine: str, pending: Iterable[FileTrust]) -> str:
    """What a refusal says: which files, in what state, and that nothing of the machine was imported."""

    def said(file: FileTrust) -> str:
        why = "changed since it was trusted" if file.state == "changed" else f"written by {file.by}"
        return f"{Path(file.path).name} ({why})"

    listed = ", ".join(said(file) for file in pending)
    return (
        f"machine {machine!r} holds code a model wrote that you have not trusted: {listed}; nothing of it "
        "was imported. Review what the model wrote and trust it"
    )
