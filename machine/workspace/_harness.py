"""Which harness a workspace's runs use, told without making one (a remote harness may need a key): what
``commit`` compares a candidate's report with."""

from __future__ import annotations

from machine.runs import Harness

from ._workspace import Workspace


def made_harness(ws: Workspace) -> Harness | None:
    """The harness ``ws`` was given or has made (None: it makes one on its first run, not yet)."""
    return ws._harness


def harness_name(ws: Workspace, model: str | None = None) -> str | None:
    """The name of the harness runs of ``model`` use in ``ws``: the one it holds, else the default for
    the model; None when it has none."""
    made = made_harness(ws)
    if made is not None:
        return made.name
    return None if ws.adapters.harness_name is None else ws.adapters.harness_name(model)
