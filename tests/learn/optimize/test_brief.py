"""The brief the optimizer reads, from real runs of a machine with a tool: the machine, its rubric with
weights and graders, its tools, each run within its share of the token budget, and a run that begins
the way one already shown did said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from machine import (
    Case,
    HarnessRequest,
    HarnessResult,
    Machine,
    Message,
    Run,
    ToolCall,
    Workspace,
    check,
    define_child,
    define_evaluator,
    define_machine,
    define_rubric,
    open_workspace,
    tool,
)
from machine.learn.optimize._brief import CHARS_PER_TOKEN, RUN_TOKENS, Example, brief
from machine.runs import Turn, run_loop

HUGE = 100_000
NOTES = "Notes of the meeting, item by item: " + "the plan is agreed, " * 20


@tool
def read(path: str) -> str:
    """Read a file of the project."""
    if path.startswith("huge"):
        return f"{path} line\n" * (HUGE // 9)
    return NOTES if path == "notes" else "a short file"


rubric = define_rubric(
    {
        "found": {"description": "The reply quotes the file it was asked about.", "weight": 3},
        "tidy": {"description": "The reply is one line.", "weight": 1},
    }
)


def found(run: Run) -> tuple[bool, str]:
    return False, f"the reply {run.output!r} quotes no file"


def tidy(run: Run) -> bool:
    if "?" in run.output:
        raise ValueError("a question is neither tidy nor untidy")
    return True


MACHINE = define_machine(
    name="reader",
    intent="Answer questions about the project's files.",
    instructions="Read the file, then answer.",
    model="m",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"found": check("quotes", found), "tidy": check("one_line", tidy)}),
    tools=[read],
    max_steps=20,
)


class Reading:
    """Reads the file the input names (``huge.log`` and ``notes`` take many steps), then answers."""

    name = "reading"

    async def run(self, request: HarnessRequest) -> HarnessResult:
        path, _, final = request.input.partition(":")
        steps = 12 if path == "many" else 1

        async def reply(messages: list[Message], step: int) -> Turn:
            if step < steps:
                name = "notes" if path == "many" else path
                call = ToolCall(id=f"c{step}", name="read", arguments={"path": name})
                return Turn(Message(role="assistant", content=f"Reading {name}.", tool_calls=[call]))
            return Turn(Message(role="assistant", content=final or "done"))

        return await run_loop(request, reply)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return open_workspace(tmp_path, harness=Reading())


async def example(ws: Workspace, spec: Machine, case_id: str, text: str) -> Example:
    case = Case(id=case_id, input=text, expected="the notes")
    run = await ws.run(spec, text, case=case, grade=True, store=False)
    return Example(case, run, trials=3, passed=0)


async def test_the_machine_its_tools_and_its_rubric_with_weights_and_graders(ws: Workspace) -> None:
    shown = await example(ws, MACHINE, "one", "notes:it says the plan is agreed?")
    text = brief(MACHINE, MACHINE.own_instructions, [shown], [])
    assert text.startswith("# The machine: reader\n\n## What it is for\nAnswer questions about the project's")
    assert "## Its tools\n- read: Read a file of the project.\n" in text
    assert "- found (weight 3, graded by check quotes): The reply quotes the file it was asked about." in text
    assert "- tidy (weight 1, graded by check one_line): The reply is one line." in text
    assert "## Its current instructions (what you rewrite)\nRead the file, then answer.\n" in text
    assert "Fixed instructions" not in text
    assert (
        "### Case 'one': score 0.00; 0 of 3 trials passed\nInput:\nnotes:it says the plan is agreed?\n"
        in text
    )
    assert 'Case data the graders use: {"expected": "the notes"}' in text
    assert '[tool call] read({"path": "notes"})' in text
    assert f"[tool result read] {NOTES}" in text
    assert "- found: 0.00: the reply 'it says the plan is agreed?' quotes no file" in text
    assert (
        "- tidy: UNSCORED (the grader could not decide: check 'one_line' raised ValueError: a question is"
        in text
    )
    assert text.endswith("Put the whole new text between <instructions> and </instructions>.")


async def test_a_huge_tool_result_is_cut_to_the_runs_share(ws: Workspace) -> None:
    shown = await example(ws, MACHINE, "big", "huge.log:nothing found")
    assert len(shown.run.trajectory[2].content) > 60_000  # what a run keeps of a tool's result
    text = brief(MACHINE, MACHINE.own_instructions, [shown], [])
    assert len(text) < RUN_TOKENS * CHARS_PER_TOKEN
    assert "characters left out ...]" in text
    assert "huge.log line" in text and "[assistant] nothing found" in text  # its start and what came after


async def test_a_long_run_keeps_its_first_and_last_steps_within_its_share(ws: Workspace) -> None:
    shown = await example(ws, MACHINE, "long", "many:the plan is agreed")
    assert len(shown.run.trajectory) == 2 + 12 * 2
    text = brief(MACHINE, MACHINE.own_instructions, [shown], [])
    part = text.split("What the machine did:\n", 1)[1].split("Grades:", 1)[0]
    assert len(part) <= RUN_TOKENS * CHARS_PER_TOKEN + 200
    assert part.startswith("[assistant] Reading notes.\n")
    assert part.rstrip().endswith("[assistant] the plan is agreed")
    assert part.count("steps left out ...]") == 1


async def test_a_run_that_begins_like_an_earlier_one_says_so_once(ws: Workspace) -> None:
    first = await example(ws, MACHINE, "first", "notes:the plan is agreed?")
    second = await example(ws, MACHINE, "second", "notes:agreed, it says?")
    third = await example(ws, MACHINE, "third", "other:a short answer?")
    text = brief(MACHINE, MACHINE.own_instructions, [first, second, third], [])
    said = "(its first 3 steps were the same as in case 'first', above)"
    assert text.count(said) == 1
    assert text.count(NOTES) == 1  # the shared tool result is shown once
    assert "[assistant] agreed, it says?" in text.split(said, 1)[1]
    assert "the same as in" not in text.split("### Case 'third'", 1)[1]  # short steps are said again


async def test_examples_past_the_budget_are_counted_not_shown(ws: Workspace) -> None:
    shown = [await example(ws, MACHINE, f"c{i}", f"huge{i}.log:answer {i}") for i in range(4)]
    text = brief(MACHINE, MACHINE.own_instructions, shown, [], tokens=1_000)
    assert "### Case 'c0'" in text and "### Case 'c1'" in text
    assert "### Case 'c2'" not in text and "(2 more not shown, to keep this brief)" in text


async def test_passing_runs_follow_the_failures(ws: Workspace) -> None:
    bad = await example(ws, MACHINE, "bad", "other:no")
    good = Example(bad.case.model_copy(update={"id": "good"}), bad.run, trials=2, passed=2)
    text = brief(MACHINE, MACHINE.own_instructions, [bad], [good])
    assert text.index("## Runs that fell short") < text.index("## Runs that passed")
    assert "### Case 'good': score 0.25; 2 of 2 trials passed" in text
    assert "Grades (all met):" in text.split("## Runs that passed", 1)[1]


async def test_a_childs_brief_shows_its_parents_instructions_as_fixed(ws: Workspace) -> None:
    child_rubric = define_rubric({"brief": "The reply is brief."})
    child = define_child(
        MACHINE,
        name="reader/terse",
        intent="Answer in few words.",
        instructions="Use five words.",
        rubric=child_rubric,
        evaluator=define_evaluator(child_rubric, {"brief": check("few_words", lambda r: True)}),
    )
    shown = await example(ws, child, "one", "other:no")
    text = brief(child, child.own_instructions, [shown], [])
    assert (
        "## Fixed instructions from its parent reader (read first; you cannot change them)\n"
        "Read the file, then answer.\n\n## Its current instructions (what you rewrite)\nUse five words.\n"
    ) in text
    assert "- found (weight 3, graded by check quotes, inherited from reader)" in text
    assert "- brief (weight 1, graded by check few_words): The reply is brief." in text
