"""What a workspace's machines are: the listing (``machine list``, ``list_machines``) and one machine
described (``machine show``, ``show_machine``), as the models every face prints."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from machine.errors import MachineError
from machine.runs import Model
from machine.spec import Machine
from machine.workspace import Workspace
from machine.workspace import cases_files as cases_files  # shown by `machine show`


class CriterionInfo(Model):
    """One criterion of a machine: what it asks, its weight, its grader, and the machine declaring it."""

    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    weight: float
    grader: str
    origin: str = Field(alias="from", description="The machine that declares the criterion.")


class ToolInfo(Model):
    """One tool of a machine, and the machine that declares it."""

    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    origin: str = Field(alias="from", description="The machine that declares the tool.")


class MachineInfo(Model):
    """One machine described: intent, model, family, criteria with their graders, tools, cases files."""

    name: str
    intent: str
    model: str
    parent: str | None = None
    counterpart: str | None = None
    max_steps: int
    criteria: list[CriterionInfo]
    tools: list[ToolInfo]
    cases_files: list[str] = Field(description="Cases files in the machine's folder.")
    instructions: str = Field(default="", description="The instructions its runs are given.")
    builtin: str | None = Field(
        default=None,
        description="For a machine the library ships (the optimizer): the folder its files are in.",
    )


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
    return listed


def describe(ws: Workspace, name: str) -> MachineInfo:
    """The machine ``name`` described; a missing or broken machine raises with what is wrong."""
    spec = ws.load(name)
    return MachineInfo(
        name=spec.name,
        intent=spec.intent,
        model=spec.model,
        parent=spec.parent.name if spec.parent else None,
        counterpart=spec.counterpart.machine.name if spec.counterpart else None,
        max_steps=spec.max_steps,
        criteria=[
            CriterionInfo(
                name=c,
                description=spec.rubric[c].description,
                weight=spec.rubric[c].weight,
                grader=f"{spec.evaluator.graders[c].kind}:{spec.evaluator.graders[c].name}",
                origin=spec.origin(c),
            )
            for c in spec.rubric
        ],
        tools=[
            ToolInfo(name=t.name, description=t.description, origin=_tool_origin(spec, t.name))
            for t in spec.tools
        ],
        cases_files=cases_files(ws.machines_dir / name),
        instructions=spec.instructions,
        builtin=str(spec.source.parent) if ws.loader.is_builtin(name) and spec.source else None,
    )


def _tool_origin(spec: Machine, tool: str) -> str:
    node: Machine | None = spec
    while node is not None:
        if tool in node.own_tools:
            return node.name
        node = node.parent
    return spec.name
