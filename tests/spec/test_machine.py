from pathlib import Path

import pytest

from machine import (
    DefinitionError,
    Machine,
    Tool,
    define_child,
    define_evaluator,
    define_machine,
    define_rubric,
    instructions_from,
    judge,
    model_from,
    tool,
)


@tool
def lookup(word: str) -> str:
    """Look a word up."""
    return word


@tool
def count(text: str) -> int:
    """Count characters."""
    return len(text)


def parent_machine(**overrides: object) -> Machine:
    rubric = define_rubric({"correct": "Right answer."})
    args: dict[str, object] = {
        "name": "red",
        "intent": "Answer questions.",
        "instructions": "Answer briefly.",
        "model": "Qwen/Qwen3.6-27B",
        "rubric": rubric,
        "evaluator": define_evaluator(rubric, {"correct": judge()}),
        "tools": [lookup],
    }
    args.update(overrides)
    return define_machine(**args)  # type: ignore[arg-type]


def child_of(
    parent: Machine, name: str = "red/strict", criteria: dict[str, str] | None = None, **kw: object
) -> Machine:
    rubric = define_rubric(criteria or {"short": "Under ten words."})
    evaluator = define_evaluator(rubric, {c: judge() for c in rubric})
    return define_child(
        parent, name=name, intent="Answer strictly.", rubric=rubric, evaluator=evaluator, **kw
    )


def test_define_machine_keeps_fields() -> None:
    m = parent_machine(instructions="  Answer briefly.\n")
    assert (m.name, m.model, m.instructions, m.max_steps) == ("red", "Qwen/Qwen3.6-27B", "Answer briefly.", 8)
    assert m.tool("lookup") is lookup
    assert m.tool("nope") is None
    assert m.own_criteria == ["correct"]


@pytest.mark.parametrize("name", ["Red", "red//x", "", "-red", "red/"])
def test_define_machine_rejects_bad_name(name: str) -> None:
    with pytest.raises(DefinitionError, match="is not valid"):
        parent_machine(name=name)


@pytest.mark.parametrize("field", ["intent", "instructions", "model"])
def test_define_machine_needs_non_empty_text(field: str) -> None:
    with pytest.raises(DefinitionError, match=f"'red' needs a non-empty {field}"):
        parent_machine(**{field: "  "})


@pytest.mark.parametrize("steps", [0, -1, 2.5])
def test_define_machine_rejects_bad_max_steps(steps: object) -> None:
    with pytest.raises(DefinitionError, match="max_steps must be a positive integer"):
        parent_machine(max_steps=steps)


def test_define_machine_rejects_evaluator_of_another_rubric() -> None:
    other = define_rubric({"other": "x"})
    with pytest.raises(DefinitionError, match="evaluator was defined for another rubric"):
        parent_machine(evaluator=define_evaluator(other, {"other": judge()}))


def test_define_machine_rejects_non_tool_and_duplicate_tools() -> None:
    with pytest.raises(DefinitionError, match="is not a Tool; wrap the function with @tool"):
        parent_machine(tools=[lambda: 1])
    with pytest.raises(DefinitionError, match="two tools named 'lookup'"):
        parent_machine(tools=[lookup, lookup])


def test_child_inherits_every_parent_criterion_with_its_grader() -> None:
    parent = parent_machine()
    child = child_of(parent)
    assert list(child.rubric) == ["correct", "short"]
    assert child.evaluator.graders["correct"] is parent.evaluator.graders["correct"]
    assert child.rubric["correct"] == parent.rubric["correct"]


def test_child_appends_instructions() -> None:
    child = child_of(parent_machine(), instructions="  Never exceed ten words. ")
    assert child.instructions == "Answer briefly.\n\nNever exceed ten words."
    assert child.own_instructions == "Never exceed ten words."


def test_child_without_instructions_keeps_parents() -> None:
    assert child_of(parent_machine()).instructions == "Answer briefly."


def test_child_adds_tools_after_parents() -> None:
    child = child_of(parent_machine(), tools=[count])
    assert [t.name for t in child.tools] == ["lookup", "count"]
    assert child.own_tools == ("count",)


def test_child_inherits_model_unless_named() -> None:
    parent = parent_machine()
    assert child_of(parent).model == "Qwen/Qwen3.6-27B"
    assert child_of(parent, model="Qwen/Qwen3.6-35B-A3B").model == "Qwen/Qwen3.6-35B-A3B"


def test_child_inherits_max_steps_unless_given() -> None:
    parent = parent_machine(max_steps=3)
    assert child_of(parent).max_steps == 3
    assert child_of(parent, max_steps=5).max_steps == 5


def test_child_keeps_parent_link() -> None:
    parent = parent_machine()
    assert child_of(parent).parent is parent


def test_child_redefining_parent_criterion_raises_naming_it() -> None:
    with pytest.raises(DefinitionError, match="redefines criterion 'correct' of 'red'"):
        child_of(parent_machine(), criteria={"correct": "Mine."})


def test_child_redefining_parent_tool_raises() -> None:
    with pytest.raises(DefinitionError, match="redefines the tool 'lookup' it inherits from 'red'"):
        child_of(parent_machine(), tools=[lookup])


@pytest.mark.parametrize("name", ["strict", "red-strict", "redx/strict", "blue/strict"])
def test_child_name_must_be_under_parent(name: str) -> None:
    with pytest.raises(DefinitionError, match="must be named red/<something>"):
        child_of(parent_machine(), name=name)


def test_child_parent_must_be_machine() -> None:
    with pytest.raises(DefinitionError, match="the parent must be a Machine, got str"):
        define_child("red", name="red/x", intent="x")  # type: ignore[arg-type]


def test_child_with_no_rubric_has_parents_criteria() -> None:
    child = define_child(parent_machine(), name="red/plain", intent="Plain.")
    assert list(child.rubric) == ["correct"]


def test_child_is_origin_of_its_own_criteria() -> None:
    child = child_of(parent_machine())
    assert child.origin("short") == "red/strict"
    assert "short" in child.own_criteria


def test_inherited_criterion_origin_is_the_parent() -> None:
    child = child_of(parent_machine())
    assert child.origin("correct") == "red"
    assert child.own_criteria == ["short"]


def test_grandchild_redefinition_names_declaring_ancestor() -> None:
    child = child_of(parent_machine())
    with pytest.raises(DefinitionError, match="redefines criterion 'correct' of 'red'"):
        child_of(child, name="red/strict/x", criteria={"correct": "Mine."})


def test_child_rejects_non_tool_with_definition_error() -> None:
    with pytest.raises(DefinitionError, match="is not a Tool"):
        child_of(parent_machine(), tools=[lambda: 1])


@pytest.mark.parametrize("steps", [0, -2])
def test_child_rejects_bad_max_steps(steps: int) -> None:
    with pytest.raises(DefinitionError, match="max_steps must be a positive integer"):
        child_of(parent_machine(), max_steps=steps)


def test_instructions_from_reads_file_beside(tmp_path: Path) -> None:
    (tmp_path / "instructions.md").write_text("\n  Be brief.  \n", encoding="utf-8")
    assert instructions_from(str(tmp_path / "machine.py")) == "Be brief."


def test_instructions_from_missing_names_path(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"instructions\.md does not exist") as info:
        instructions_from(tmp_path / "machine.py")
    assert str(tmp_path.resolve()) in str(info.value)


def test_instructions_from_empty_file_raises(tmp_path: Path) -> None:
    (tmp_path / "instructions.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(DefinitionError, match="is empty"):
        instructions_from(tmp_path / "machine.py")


def test_instructions_from_other_name(tmp_path: Path) -> None:
    (tmp_path / "system.md").write_text("Other.", encoding="utf-8")
    assert instructions_from(tmp_path / "machine.py", "system.md") == "Other."


def test_model_from_default_without_file(tmp_path: Path) -> None:
    assert model_from(tmp_path / "machine.py", "Qwen/Qwen3.6-27B") == "Qwen/Qwen3.6-27B"


def test_model_from_reads_model_json(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text('{"model": "tinker://run/sampler_weights/1"}', encoding="utf-8")
    assert model_from(tmp_path / "machine.py", "default") == "tinker://run/sampler_weights/1"


def test_model_from_malformed_json_names_file(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DefinitionError, match=r"model\.json is not valid JSON.*fix it or delete it"):
        model_from(tmp_path / "machine.py", "default")


@pytest.mark.parametrize("content", ['["x"]', '{"name": "x"}', '{"model": ""}', '{"model": 3}'])
def test_model_from_wrong_shape_says_what_it_must_hold(tmp_path: Path, content: str) -> None:
    (tmp_path / "model.json").write_text(content, encoding="utf-8")
    with pytest.raises(DefinitionError, match=r'model\.json must hold \{"model": "<model id>"\}'):
        model_from(tmp_path / "machine.py", "default")


def test_tool_values_are_tools() -> None:
    assert isinstance(lookup, Tool)
