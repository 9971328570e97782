from typing import Any

import pytest

from machine import Budget, DefinitionError, ToolContext, ToolFailure, tool

CTX = ToolContext(run_id="r1")


@tool
def add(a: int, b: int = 2, note: str | None = None) -> int:
    """Add two numbers."""
    return a + b


def test_schema_from_type_hints() -> None:
    assert add.name == "add"
    assert add.description == "Add two numbers."
    params = add.parameters
    assert params["type"] == "object"
    assert params["required"] == ["a"]
    assert params["properties"]["a"] == {"type": "integer"}
    assert params["properties"]["b"] == {"type": "integer", "default": 2}
    assert params["additionalProperties"] is False
    assert "title" not in params
    assert all("title" not in p for p in params["properties"].values())


def test_spec_is_openai_function_shape() -> None:
    assert add.function() == {"name": "add", "description": "Add two numbers.", "parameters": add.parameters}


def test_name_and_description_overrides() -> None:
    @tool(name="plus", description="Sum.")
    def f(a: int) -> int:
        return a

    assert (f.name, f.description) == ("plus", "Sum.")


def test_missing_docstring_raises_naming_tool() -> None:
    with pytest.raises(DefinitionError, match="tool 'nodoc' needs a description"):

        @tool
        def nodoc(a: int) -> int:
            return a


def test_missing_type_hint_raises_naming_parameter() -> None:
    with pytest.raises(DefinitionError, match="tool 'f': parameter 'a' needs a type hint"):

        @tool
        def f(a) -> int:  # type: ignore[no-untyped-def]
            """Doc."""
            return 1


def test_context_parameter_is_injected_and_hidden_from_schema() -> None:
    @tool
    def where(ctx: ToolContext, path: str) -> str:
        """Where."""
        return f"{ctx.run_id}:{path}"

    assert where.wants_context
    assert list(where.parameters["properties"]) == ["path"]
    assert where.parameters["required"] == ["path"]


async def test_invoke_passes_context() -> None:
    budget = Budget(None)

    @tool
    def where(ctx: ToolContext, path: str) -> str:
        """Where."""
        assert ctx.budget is budget
        return f"{ctx.run_id}:{path}"

    assert await where.invoke({"path": "a.txt"}, ToolContext(run_id="r1", budget=budget)) == "r1:a.txt"


async def test_invoke_applies_defaults_and_serializes_non_string_results() -> None:
    assert await add.invoke({"a": 1}, CTX) == "3"


async def test_invoke_awaits_async_tool_and_keeps_strings() -> None:
    @tool
    async def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    assert await shout.invoke({"text": "hi"}, CTX) == "HI"


async def test_invoke_serializes_dict_as_json() -> None:
    @tool
    def info() -> dict[str, Any]:
        """Info."""
        return {"ok": True, "n": [1]}

    assert await info.invoke({}, CTX) == '{"ok": true, "n": [1]}'


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": "x"}, "a: Input should be a valid integer"),
        ({}, "a: Field required"),
        ({"a": 1, "c": 2}, "c: Extra inputs are not permitted"),
    ],
)
async def test_invalid_arguments_raise_tool_failure_naming_field(
    arguments: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ToolFailure, match="invalid arguments for add") as info:
        await add.invoke(arguments, CTX)
    assert expected in str(info.value)


async def test_none_arguments_ask_for_json_object() -> None:
    with pytest.raises(ToolFailure, match="arguments of add were not valid JSON; send a JSON object"):
        await add.invoke(None, CTX)


async def test_optional_argument_accepts_explicit_none() -> None:
    seen: list[object] = []

    @tool
    def f(note: str | None = "x") -> str:
        """F."""
        seen.append(note)
        return "ok"

    assert await f.invoke({"note": None}, CTX) == "ok"
    assert seen == [None]
