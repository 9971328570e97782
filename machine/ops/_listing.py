"""The listing of a workspace's machines (``machine list``, ``list_machines``), as the model every face
prints; apart from ``machine show``'s models, so a listing builds only its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from machine.errors import MachineError
from machine.runs import Model

if TYPE_CHECKING:
    from machine.workspace import Workspace


class MachineSummary(Model):
    """One line of the listing: a machine that loads, or the error that keeps it from loading."""

    name: str
    intent: str | None = None
    model: str | None = None
    parent: str | None = None
    criteria: list[str] = Field(default_factory=list)
    error: str | None = Field(
        default=None, description="Why the machine could not be loaded, if it could not."
    )
    untrusted: list[str] = Field(
        default_factory=list,
        description="Its files a model wrote that are not trusted as they are: it was not imported (it is "
        "once the person reviews and trusts them).",
    )


def list_machines(ws: Workspace) -> list[MachineSummary]:
    """Every machine of the workspace, sorted; one that fails to load is listed with its error. The rows
    are built from loaded machines, so they are not checked again (``machine list`` starts faster); every
    field is given, since pydantic's ``model_construct`` inspects each default factory it has to call."""
    listed: list[MachineSummary] = []
    for name in ws.names():
        waiting = [f.path.rsplit("/", 1)[-1] for f in ws.trust.blocking(name)]
        if waiting:  # listed from its folder alone: nothing of it is imported
            parent = name.rsplit("/", 1)[0] if "/" in name else None
            listed.append(
                MachineSummary.model_construct(name=name, parent=parent, criteria=[], untrusted=waiting)
            )
            continue
        try:
            spec = ws.load(name)
        except MachineError as error:
            listed.append(
                MachineSummary.model_construct(name=name, error=str(error), criteria=[], untrusted=[])
            )
            continue
        listed.append(
            MachineSummary.model_construct(
                name=name,
                intent=spec.intent,
                model=spec.model,
                parent=spec.parent.name if spec.parent else None,
                criteria=list(spec.rubric),
                untrusted=[],
            )
        )
    for folder, why in ws.loader.misnamed().items():  # never loaded: said, not skipped in silence
        listed.append(MachineSummary.model_construct(name=folder, error=why, criteria=[], untrusted=[]))
    return listed
