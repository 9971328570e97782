"""``machine converse`` (and ``suite`` on conversations) on the test workspace, with a machine ``talker``
whose counterpart is ``asker``, both added to the workspace of conftest."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]

ASKER_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"done": "Says it is done."})

machine = define_machine(
    name="asker",
    intent="Ask what the scenario wants to know.",
    instructions="Play the scenario; say [done] when satisfied.",
    model="Qwen/Qwen3.6-35B-A3B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"done": check("marker", lambda run: "[done]" in run.output)}),
)
"""

TALKER_PY = """\
from machine import Counterpart, check, define_evaluator, define_machine, define_rubric, tool

from ..asker.machine import machine as asker


@tool
def lookup(q: str) -> str:
    \"\"\"Look the question up.\"\"\"
    return f"{q} = 4"


rubric = define_rubric({"short": "At most ten characters."})

machine = define_machine(
    name="talker",
    intent="Answer the asker.",
    instructions="Answer briefly.",
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"short": check("ten", lambda run: len(run.output) <= 10)}),
    tools=[lookup],
    counterpart=Counterpart(
        machine=asker, until=lambda run: run.machine == "asker" and "[done]" in run.output, max_turns=6
    ),
)
"""

CASES = [
    {"id": "one", "input": "scenario one: you want to add two and two"},
    {"id": "two", "input": "scenario two: you want a capital"},
    {"id": "broken", "input": "scenario broken: nothing answers you"},
]

SCRIPT = {
    "rules": [
        {"match": "^scenario one", "turns": [{"text": "what is two plus two"}]},
        {
            "match": "^what is two plus two",
            "turns": [{"tool_calls": [{"name": "lookup", "arguments": {"q": "2+2"}}]}, {"text": "four"}],
        },
        {"match": "^scenario two", "turns": [{"text": "what is the capital of France"}]},
        {"match": "^what is the capital", "turns": [{"text": "Paris, the city of light"}]},
        {"match": "^scenario broken", "turns": [{"text": "a question nobody answers"}]},
        {"match": "^(four|Paris)", "turns": [{"text": "thanks [done]"}]},
    ]
}


@pytest.fixture
def talk(ws: WorkspaceFolder) -> WorkspaceFolder:
    ws.write("machines/asker/machine.py", ASKER_PY)
    ws.write("machines/talker/machine.py", TALKER_PY)
    ws.write_json("machines/talker/cases.json", CASES)
    ws.write_json("talk.json", SCRIPT)
    return ws


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def scripted(ws: WorkspaceFolder) -> list[str]:
    return ["--harness", "scripted", "--script", str(ws.root / "talk.json"), "--workspace", str(ws.root)]


def in_order(text: str, *pieces: str) -> None:
    at = -1
    for piece in pieces:
        found = text.find(piece, at + 1)
        assert found > at, f"{piece!r} is missing or out of order in:\n{text}"
        at = found


def test_converse_prints_each_turn_with_who_spoke(talk: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke("converse", "talker", *scripted(talk)))
    in_order(
        result.stdout,
        "talker ⇄ asker · case one · at most 6 turns",
        "[1] asker",
        "what is two plus two",
        "[2] talker",
        '→ lookup({"q": "2+2"})',
        "← 2+2 = 4",
        "four",
        "[3] asker",
        "thanks [done]",
        "3 turns, ended because its counterpart's until held",
    )
    assert "✓" not in result.stdout  # nothing graded without --eval
    assert "spent $0.0000" in result.stderr
    assert talk.count() == 3


def test_converse_runs_the_case_named(talk: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("converse", "talker", "two", *scripted(talk))).stdout
    in_order(out, "case two", "what is the capital of France", "Paris, the city of light", "thanks [done]")
    assert "two plus two" not in out


def test_converse_eval_grades_the_last_turn_of_each_side(talk: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("converse", "talker", "two", "--eval", *scripted(talk))).stdout
    in_order(
        out,
        "talker's last turn (run ",
        "✗ short (×1, check:ten): 0.00",
        "score 0.00 → FAIL",
        "asker's last turn (run ",
        "✓ done (×1, check:marker): 1.00",
        "score 1.00 → PASS",
    )


def test_converse_json_stores_every_turn_and_swaps_only_the_machines_model(
    talk: WorkspaceFolder, invoke: Invoke
) -> None:
    result = ok(
        invoke("converse", "talker", "--json", "--eval", "--model", "Qwen/Qwen3.6-27B", *scripted(talk))
    )
    data: dict[str, Any] = json.loads(result.stdout)
    assert (data["machine"], data["counterpart"], data["case_id"], data["ended"]) == (
        "talker",
        "asker",
        "one",
        "until",
    )
    turns = data["turns"]
    assert [(t["machine"], t["model"]) for t in turns] == [
        ("asker", "Qwen/Qwen3.6-35B-A3B"),
        ("talker", "Qwen/Qwen3.6-27B"),
        ("asker", "Qwen/Qwen3.6-35B-A3B"),
    ]
    assert data["graded"] == turns[1]["id"] and data["counterpart_graded"] == turns[2]["id"]
    for turn in turns:
        stored = talk.get(turn["id"])
        assert (stored.conversation_id, stored.case_id) == (data["conversation_id"], "one")
    assert talk.get(turns[1]["id"]).score == 1.0
    assert talk.get(turns[0]["id"]).scorecard is None


def test_a_failed_turn_is_reported_and_nothing_graded(talk: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("converse", "talker", "broken", "--eval", *scripted(talk))).stdout
    in_order(out, "[1] asker", "[2] talker", "failed: no rule", "2 turns, ended because a turn failed")
    assert "nothing was graded: the conversation did not finish" in out
    assert talk.count() == 2


def test_an_unknown_case_lists_the_known_ones(talk: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("converse", "talker", "nine", *scripted(talk))
    assert result.exit_code == 2
    assert "machine 'talker' has no case 'nine'; its cases are: one, two, broken" in result.stderr
    assert talk.count() == 0


@pytest.mark.parametrize("name", ["greet", "plain"])
def test_a_machine_without_a_counterpart_is_refused(talk: WorkspaceFolder, invoke: Invoke, name: str) -> None:
    result = invoke("converse", name, *scripted(talk))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith(f"error: machine {name!r} has no counterpart")
    assert "counterpart=Counterpart(machine=OTHER" in result.stderr
    assert f"`machine run {name} INPUT` runs it alone" in result.stderr
    assert "Traceback" not in result.stderr
    assert talk.count() == 0


def test_an_unknown_price_is_refused_before_any_turn(talk: WorkspaceFolder, invoke: Invoke) -> None:
    endpoint = ["--harness", "openai", "--base-url", "http://127.0.0.1:9/v1"]  # never reached
    result = invoke("converse", "talker", *endpoint, "--model", "my/checkpoint", "--workspace", talk.root)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "my/checkpoint" in result.stderr and "--price-as" in result.stderr
    assert talk.count() == 0


def test_suite_runs_conversations_and_reports_them_as_runs(talk: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke("suite", "talker", "--json", "--trials", "2", *scripted(talk)))
    report = json.loads(result.stdout)
    assert [(c["case_id"], c["trials"], c["scores"]) for c in report["cases"]] == [
        ("one", 2, [1.0, 1.0]),
        ("two", 2, [0.0, 0.0]),
        ("broken", 2, []),
    ]
    assert (report["summary"]["runs"], report["summary"]["errors"]) == (6, 2)
    assert talk.count() == 2 * (3 + 3 + 2)  # every turn of every conversation


def test_converse_through_the_installed_command(talk: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("converse", "talker", "one", *scripted(talk))
    assert done.returncode == 0, done.stderr
    in_order(done.stdout, "[1] asker", "[2] talker", "four", "[3] asker", "thanks [done]")
    assert "converse" in machine_cmd("--help").stdout
