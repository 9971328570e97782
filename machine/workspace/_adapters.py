"""What a workspace takes from outside the core, as factories ``machine.ops`` composes by name, and which
harness its runs use, told without making one (a remote harness may need a key): what ``commit``
compares a candidate's report with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from machine.runs import Harness, ModelAccess, Sandboxes

if TYPE_CHECKING:
    from ._workspace import Workspace


@dataclass(frozen=True)
class Adapters:
    """Factories for what a workspace takes from outside the core, each called once, on first use: the
    harness, the judges' model access (given the harness, whose endpoint they may share) and sandboxes."""

    harness: Callable[[], Harness] | None = None
    models: Callable[[Harness | None], ModelAccess] | None = None
    sandboxes: Callable[[], Sandboxes] | None = None
    harness_name: Callable[[str | None], str] | None = None
    """The name of the harness ``harness`` would make for runs of a model, without making it."""


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
