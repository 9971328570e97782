"""Reviewing and trusting what a model wrote: ``machine trust NAME`` (and ``--list``), the SDK's
``machine.trust`` and the MCP ``trust_machine`` tool, which asks the person.

A review shows each model-written file of a machine as a diff: against the content the person last trusted
when there is one, else against the parent's file of the same name (a child), else whole (a draft). Trusting
records the files' hashes in the workspace's trust record and keeps a copy of each trusted content, so that
the next review of a changed file shows only what changed.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path

from pydantic import Field

from machine.errors import BadInputError, NotFoundError
from machine.runs import Model, write_atomic
from machine.spec import FileTrust, sha256_of, unreviewable
from machine.workspace import Workspace

from ._compose import open_workspace

TRUSTED_COPIES = "trusted"
"""The folder under the workspace's ``.machine`` holding a copy of each trusted content, by sha256."""


class FileReview(FileTrust):
    """One model-written file, with what to read before trusting it."""

    against: str | None = None
    """What the diff is against: ``trusted`` (the content trusted last), ``parent`` (the parent's file of
    the same name), or None (the whole file is shown)."""
    diff: str = ""
    unreviewable: str | None = None
    """Why what is shown is not what Python would run (a declared encoding, a character that hides
    text): such a file cannot be trusted as it is."""


class TrustReview(Model):
    """A machine's model-written files, each with its state and a diff to read."""

    machine: str
    files: list[FileReview] = Field(default_factory=list)

    @property
    def pending(self) -> list[FileReview]:
        return [f for f in self.files if f.state in ("untrusted", "changed")]


def _copies(ws: Workspace) -> Path:
    return ws.data_dir / TRUSTED_COPIES


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _text(path: Path) -> list[str]:
    try:
        return _lines(path.read_bytes())
    except OSError:
        return []


def _diff(ws: Workspace, state: FileTrust, last: str | None) -> FileReview:
    """The file's review, read once: its diff, its hash and whether its text is what Python runs are all
    of the same bytes, so what is shown is what is trusted."""
    path = ws.machines_dir / state.path
    parent = path.parent.parent / path.name
    try:
        data: bytes | None = path.read_bytes()
    except OSError:
        data = None  # missing: nothing to trust
    now = _lines(data) if data is not None else []
    if last is not None and (_copies(ws) / last).is_file():
        before, against, label = _text(_copies(ws) / last), "trusted", f"{state.path} (as trusted)"
    elif parent.is_file() and parent.parent != ws.machines_dir.parent:
        before, against = _text(parent), "parent"
        label = parent.relative_to(ws.machines_dir).as_posix()
    else:
        before, against, label = [], None, "/dev/null"
    lines = list(difflib.unified_diff(before, now, fromfile=label, tofile=state.path))
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    hidden, digest = None, state.sha256
    if data is not None:
        digest = hashlib.sha256(data).hexdigest()
        try:
            hidden = unreviewable(data.decode("utf-8"))
        except UnicodeDecodeError:
            hidden = "it is not UTF-8 text"
    seen = {**state.model_dump(), "sha256": digest}
    return FileReview(**seen, against=against, diff=diff, unreviewable=hidden)


def _workspace(workspace: str | Path | Workspace | None) -> Workspace:
    return workspace if isinstance(workspace, Workspace) else open_workspace(workspace)


def review(name: str, *, workspace: str | Path | Workspace | None = None) -> TrustReview:
    """What a model wrote for machine ``name`` of ``workspace`` (default: ``MACHINE_WORKSPACE``, else the
    current folder), as diffs to read before trusting it."""
    ws = _workspace(workspace)
    entries = ws.trust.entries(name)
    files = [ws.trust.state(key, entry) for key, entry in entries.items()]
    if not files:
        if not (ws.machines_dir / name).is_dir():
            raise NotFoundError(f"there is no machine folder machines/{name}")
        raise BadInputError(
            f"no model wrote any file of machine {name!r}: its files are your own, and need no trust"
        )
    return TrustReview(
        machine=name,
        files=[_diff(ws, f, entries[f.path].trusted[-1] if entries[f.path].trusted else None) for f in files],
    )


def untrustable(shown: TrustReview) -> BadInputError | None:
    """Why what ``shown`` shows cannot be trusted (a file whose text is not what Python runs), or None."""
    hiding = [f for f in shown.pending if f.unreviewable]
    if not hiding:
        return None
    return BadInputError(
        f"machines/{hiding[0].path} cannot be trusted as it is: {hiding[0].unreviewable}; nothing was "
        "trusted. Delete it, or rewrite it yourself as plain text and review it again"
    )


def trust(
    name: str,
    *,
    workspace: str | Path | Workspace | None = None,
    reviewed: TrustReview | None = None,
) -> TrustReview:
    """Trust the model-written files of machine ``name`` as they are now, once you have read them (with
    ``reviewed``, only if each is still what that review showed), keeping a copy of each content for the
    next review; returns the review of what was trusted (every file then ``trusted``)."""
    ws = _workspace(workspace)
    before = reviewed or review(name, workspace=ws)
    refused = untrustable(before)
    if refused is not None:
        raise refused
    ws.trust.trust(name, {f.path: f.sha256 for f in before.files if f.sha256 is not None})
    copies = _copies(ws)
    copies.mkdir(parents=True, exist_ok=True, mode=0o700)
    for state in before.files:
        path = ws.machines_dir / state.path
        digest = sha256_of(path)
        if digest is not None and not (copies / digest).exists():
            write_atomic(copies / digest, path.read_bytes(), private=True)
    ws.loader.unload()  # anything refused before is imported afresh
    return review(name, workspace=ws)


def pending(*, workspace: str | Path | Workspace | None = None) -> list[FileTrust]:
    """Every model-written file of the workspace that is not trusted as it is now."""
    return _workspace(workspace).trust.pending()
