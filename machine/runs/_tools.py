"""Tools: functions a machine's model may call, with a JSON schema taken from their type hints."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from machine.errors import DefinitionError

if TYPE_CHECKING:
    from pathlib import Path

    from machine.budget import Budget

    from ._approval import Approver
    from ._edits import EditGate
    from ._sandbox import Sandbox


@dataclass(frozen=True)
class ToolContext:
    """What a tool may act on: the run's sandbox, its run id, the budget, whether a person is talking to
    the machine right now, who approves a call that spends or changes (``approver``: None where nobody
    can, as in a suite), the workspace's root, and the gate on changes to a person's own files (``edits``:
    None in a fresh sandbox, where nothing real is touched)."""

    run_id: str
    sandbox: Sandbox | None = None
    budget: Budget | None = None
    interactive: bool = False
    approver: Approver | None = None
    root: Path | None = None
    edits: EditGate | None = None


class ToolFailure(Exception):
    """Raise from a tool to give the model a clear error message instead of a result."""


@dataclass(frozen=True)
class Tool:
    """A function the model may call: its name, description, JSON schema and how to invoke it."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    arguments_model: type[BaseModel]
    wants_context: bool

    async def invoke(self, arguments: dict[str, Any] | None, ctx: ToolContext) -> str:
        """Validate the arguments and call the tool; raises ToolFailure with a message for the model."""
        if arguments is None:
            raise ToolFailure(f"the arguments of {self.name} were not valid JSON; send a JSON object")
        try:
            parsed = self.arguments_model.model_validate(arguments)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
            )
            raise ToolFailure(f"invalid arguments for {self.name}: {problems}") from None
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        result = self.fn(ctx, **kwargs) if self.wants_context else self.fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result if isinstance(result, str) else json.dumps(result, default=str)

    def function(self) -> dict[str, Any]:
        """The OpenAI-style function spec a model sees."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Any:
    """Make a Tool of a function. A first parameter annotated ``ToolContext`` receives the context;
    the other parameters, with their type hints, become the JSON schema the model sees."""

    def build(f: Callable[..., Any]) -> Tool:
        tool_name = name or f.__name__
        doc = description or inspect.getdoc(f) or ""
        if not doc:
            raise DefinitionError(f"tool {tool_name!r} needs a description: give it a docstring")
        hints = get_type_hints(f)
        params = list(inspect.signature(f).parameters.values())
        wants_context = bool(params) and hints.get(params[0].name) is ToolContext
        if wants_context:
            params = params[1:]
        fields: dict[str, Any] = {}
        for p in params:
            if p.name not in hints:
                raise DefinitionError(f"tool {tool_name!r}: parameter {p.name!r} needs a type hint")
            fields[p.name] = (hints[p.name], ... if p.default is p.empty else p.default)
        model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return Tool(tool_name, doc, schema, f, model, wants_context)

    return build(fn) if fn is not None else build
