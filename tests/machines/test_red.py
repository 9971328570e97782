"""The red machine: its discrete-word rule, its one check, and its whole suite through real harnesses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from machine import Message, Run, ToolCall, ToolContext, Workspace, run_suite
from machine.clients.echo import EchoHarness
from machine.clients.scripted import ScriptedHarness
from machine.grade import CheckGrader

REPO = Path(__file__).resolve().parents[2]
RED = REPO / "machines" / "red"

# (text, mentions red as a discrete word)
TABLE = [
    ("red", True),
    ("RED", True),
    ("Red sky at night", True),
    ("RED!", True),
    ("caught red-handed", True),
    ("(red)", True),
    ("it was red.", True),
    ('type "red"', True),
    ("#red", True),
    ("red_zone", True),  # an underscore is neither a letter nor a digit
    ("first line\nred\nlast line", True),
    ("red, red and red", True),
    ("bored", False),
    ("redo", False),
    ("Fred", False),
    ("I read it", False),
    ("red2", False),
    ("2red", False),
    ("infrared", False),
    ("credit", False),
    ("shred", False),
    ("hundred", False),
    ("reddish", False),
    ("éred", False),  # a letter from any script touches it
    ("rеd", False),  # Cyrillic "е": not the word red at all
    ("", False),
    ("   ", False),
]


def red_module(ws: Workspace) -> ModuleType:
    grader = ws.load("red").evaluator.graders["calls_when_red"]
    assert isinstance(grader, CheckGrader)
    return sys.modules[grader.fn.__module__]


def make_run(text: str, calls: int = 0, other_calls: int = 0) -> Run:
    tool_calls = [ToolCall(id=f"c{i}", name="red_mentioned", arguments={}) for i in range(calls)]
    tool_calls += [ToolCall(id=f"o{i}", name="something_else", arguments={}) for i in range(other_calls)]
    trajectory = [Message(role="user", content=text)]
    if tool_calls:
        trajectory.append(Message(role="assistant", tool_calls=tool_calls))
    trajectory.append(Message(role="assistant", content="ok"))
    return Run(machine="red", model="echo", harness="echo", input=text, output="ok", trajectory=trajectory)


@pytest.mark.parametrize(("text", "expected"), TABLE)
def test_discrete_word_rule(ws: Workspace, text: str, expected: bool) -> None:
    assert red_module(ws).mentions_red(text) is expected


def test_cases_are_labelled_by_the_rule(ws: Workspace) -> None:
    mentions_red = red_module(ws).mentions_red
    for file in ("cases.json", "holdout.json"):
        cases = ws.cases("red", file)
        assert len(cases) >= 6
        for case in cases:
            assert mentions_red(case.input) is case.data()["red"], (file, case.id)
    labels = [c.data()["red"] for c in ws.cases("red")]
    assert 5 <= labels.count(True) <= len(labels) - 5


def test_script_uses_the_graders_pattern(ws: Workspace) -> None:
    rules = json.loads((RED / "script.json").read_text(encoding="utf-8"))["rules"]
    assert rules[0]["match"] == red_module(ws).RED_WORD
    assert rules[-1]["match"] in (".*", "(?s).*")
    assert [c["name"] for c in rules[0]["turns"][0]["tool_calls"]] == ["red_mentioned"]
    assert all(not turn.get("tool_calls") for turn in rules[-1]["turns"])


@pytest.mark.parametrize(
    ("text", "calls", "score", "reason"),
    [
        ("The sky is red.", 1, 1.0, "called red_mentioned once"),
        ("The sky is red.", 0, 0.0, "called red_mentioned 0 times; the message mentions red"),
        ("The sky is red.", 2, 0.0, "called red_mentioned 2 times; the message mentions red"),
        ("I was bored.", 0, 1.0, "did not call red_mentioned"),
        ("I was bored.", 1, 0.0, "called red_mentioned once; the message does not mention red"),
    ],
)
async def test_check_counts_calls(ws: Workspace, text: str, calls: int, score: float, reason: str) -> None:
    graded = await ws.grade(make_run(text, calls), store=False)
    assert graded.scorecard is not None
    result = graded.scorecard.criteria["calls_when_red"]
    assert result.score == score
    assert result.reason.startswith(reason)
    assert graded.passed is (score == 1.0)


async def test_other_tools_do_not_count(ws: Workspace) -> None:
    graded = await ws.grade(make_run("Fred", calls=0, other_calls=2), store=False)
    assert graded.score == 1.0
    graded = await ws.grade(make_run("red", calls=1, other_calls=1), store=False)
    assert graded.score == 1.0


async def test_tool_returns_a_short_confirmation(ws: Workspace) -> None:
    tool = ws.load("red").tool("red_mentioned")
    assert tool is not None
    result = await tool.invoke({}, ToolContext(run_id="r"))
    assert 0 < len(result) <= 60


async def test_scripted_suite_passes_every_case(ws: Workspace) -> None:
    red = ws.load("red")
    report = await run_suite(ws, red, ws.cases("red"), harness=ScriptedHarness(RED / "script.json"))
    assert report.errors == 0
    assert report.pass_rate == 1.0
    assert all(case.mean == 1.0 for case in report.cases)
    assert report.runs == len(ws.cases("red"))
    stored = {run.case_id: run for run in ws.store.runs("red", limit=100)}
    flagged = stored["multiline"]
    assert [call.name for call in flagged.tool_calls] == ["red_mentioned"]
    assert [m.is_error for m in flagged.tool_results] == [False]
    assert stored["fred"].tool_calls == []
    assert not list((ws.data_dir / "sandboxes").glob("*"))  # each run's sandbox was removed


async def test_scripted_harness_passes_the_holdout_too(ws: Workspace) -> None:
    red = ws.load("red")
    holdout = ws.cases("red", "holdout.json")
    report = await run_suite(ws, red, holdout, harness=ScriptedHarness(RED / "script.json"))
    assert report.pass_rate == 1.0


async def test_echo_fails_exactly_the_positive_cases(ws: Workspace) -> None:
    red = ws.load("red")
    cases = ws.cases("red")
    report = await run_suite(ws, red, cases, harness=EchoHarness())
    assert report.errors == 0
    means = {result.case_id: result.mean for result in report.cases}
    expected = {case.id: 0.0 if case.data()["red"] else 1.0 for case in cases}
    assert means == expected
    stored = ws.store.runs("red", limit=100)
    assert len(stored) == len(cases)
    plain = next(run for run in stored if run.case_id == "plain")
    assert plain.scorecard is not None
    assert plain.scorecard.criteria["calls_when_red"].reason.startswith("called red_mentioned 0 times")


def test_the_generated_training_cases_are_labelled_by_the_rule_and_keep_off_the_held_out(
    ws: Workspace,
) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import red_cases
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    plain = red_cases.generated(len(red_cases.PAIRS) * len(red_cases.NOUNS))
    named = {side.format(n=n) for pair in red_cases.NAMES for side in pair for n in red_cases.NOUNS}
    assert not named & {c["input"] for c in plain}  # the pairs with a proper name only when asked for
    every = (len(red_cases.PAIRS) + len(red_cases.NAMES)) * len(red_cases.NOUNS)
    made = red_cases.generated(every, names=True)
    assert named <= {c["input"] for c in made}
    red_cases.checked(made, RED / "script.json", RED / "holdout.json")  # the teacher's pattern agrees
    mentions_red = red_module(ws).mentions_red
    assert [c["input"] for c in made if mentions_red(c["input"]) is not c["red"]] == []
    assert sum(c["red"] for c in made) * 2 == len(made) and len({c["input"] for c in made}) == len(made)
    held = {c.input for c in ws.cases("red", "holdout.json")}
    assert not held & {c["input"] for c in made}
    with pytest.raises(SystemExit, match="disagree"):
        red_cases.checked(
            [{"id": "x", "input": "Fred", "red": True}], RED / "script.json", RED / "holdout.json"
        )
    with pytest.raises(SystemExit, match="held-out"):
        red_cases.checked(
            [{"id": "x", "input": "#red", "red": True}], RED / "script.json", RED / "holdout.json"
        )
