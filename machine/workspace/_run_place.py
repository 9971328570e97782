"""Where a run acts, and what guards the person's files there: its sandbox (the person's own folder, or a
fresh one), and the gate its changes pass. Only a run working in the person's folder (the workspace's
``project``) has a gate; a fresh sandbox is the run's own to change. The gate's mode is the workspace's
``edits`` (``machine run --edits``), else ``ask`` when the caller gave someone to ask (``approve_edit``),
else ``auto``, as a program that set the project itself expects."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import machine.runs as on_run
from machine.errors import HarnessError
from machine.runs import kept_out_of_git

from ._files import hidden_from_runs

if TYPE_CHECKING:
    from machine.runs import ApproveEdit, EditGate, EditMode, Sandbox, Sandboxes
    from machine.spec import Machine


class Place(Protocol):
    """What of a workspace a run's sandbox is made from."""

    data_dir: Path
    machines_dir: Path
    sandbox_dir: Path

    @property
    def sandboxes(self) -> Sandboxes | None: ...


def run_sandbox(
    ws: Place, spec: Machine, run_id: str, files: dict[str, str], folder: Path | None
) -> Sandbox | None:
    """The run's sandbox: ``folder`` (a project, its ``.machine`` hidden) when given and the run has
    no starting files, else a fresh folder seeded with them; none without tools or files."""
    if not spec.tools and not files:
        return None
    sandboxes = ws.sandboxes
    if sandboxes is None:
        raise HarnessError(
            f"machine {spec.name!r} has tools, and this workspace was made without sandboxes for them "
            "to act in: give it some (machine.load and machine.open_workspace do)"
        )
    if folder is not None and not files:
        ws.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # hidden from the first run on
        kept_out_of_git(ws.data_dir)
        return sandboxes.open(folder, hide=hidden_from_runs(folder, ws.data_dir, ws.machines_dir))
    return sandboxes.create(ws.sandbox_dir, run_id, files)


def edit_gate(
    mode: EditMode | None, project: Path | None, folder: Path | None, approve: ApproveEdit | None
) -> EditGate | None:
    """The gate of a run made in ``folder`` (None: a fresh sandbox)."""
    if folder is None or project is None or folder != project:
        return None
    chosen: EditMode = mode or ("ask" if approve is not None else "auto")
    return on_run.EditGate(chosen, approve)


__all__ = ["Place", "edit_gate", "run_sandbox"]
