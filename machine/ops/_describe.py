"""One machine described (``machine show``, ``show_machine``), as the models every face prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field

from machine.runs import Model
from machine.workspace import cases_files as cases_files  # shown by `machine show`

if TYPE_CHECKING:
    from machine.spec import Machine
    from machine.workspace import Workspace


class CriterionInfo(Model):
    """One criterion of a machine: what it asks, its weight, its grader, and the machine declaring it."""

    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    weight: float
    grader: str
    origin: str = Field(alias="from", description="The machine that declares the criterion.")
    required: bool = Field(
        default=False, description="Whether the promotion gate refuses a candidate worse on it."
    )


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
                required=spec.rubric[c].required,
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
