"""The hidden-tests grader on real runs: a child of dev graded by test files it never saw, run alone in
real bubblewrap sandboxes against the files each scripted run's successful edits left."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.bwrap import needs_bubblewrap

from machine import Case, Message, Run, ToolCall, Workspace, open_workspace
from machine.clients.scripted import ScriptedHarness
from machine.sandboxes import HiddenTests, LocalSandbox, final_files, hidden_tests
from machine.sandboxes import _hidden_tests as hidden_module

REPO = Path(__file__).resolve().parents[2]

CALC = (
    "def add(a, b):\n    return a - b\n\n\n"
    "def subtract(a, b):\n    return a - b\n\n\n"
    "def multiply(a, b):\n    return a + b\n"
)
FIXED = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def subtract(a, b):\n    return a - b\n\n\n"
    "def multiply(a, b):\n    return a * b\n"
)
VISIBLE = (
    "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(1, 1), 2)\n"
)


def edge(name: str, expression: str, expected: str) -> str:
    return (
        f"import unittest\n\nfrom calc import {name}\n\n\nclass Edge(unittest.TestCase):\n"
        f"    def test_edge(self):\n        self.assertEqual({expression}, {expected})\n"
    )


HIDDEN = {
    "calc-edges": {
        "files": {
            "test_edge_add.py": edge("add", "add(-2, -3)", "-5"),
            "test_edge_multiply.py": edge("multiply", "multiply(-2, 3)", "-6"),
        }
    }
}
MACHINE = '''"""dev/edge: dev graded by held-back edge-case tests."""

from machine import define_child, define_evaluator, define_rubric
from machine.sandboxes import hidden_tests

from ..machine import machine as parent

rubric = define_rubric(
    {"hidden_tests": {"description": "The project passes held-back edge-case tests.", "weight": 1}}
)
machine = define_child(
    parent,
    name="dev/edge",
    intent="Fix arithmetic bugs in small projects, edge cases included.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"hidden_tests": hidden_tests(__file__, timeout_s=30)}),
)
'''


def edit(old: str, new: str, path: str = "calc.py") -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old": old, "new": new}}


ADD = edit("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")
MULTIPLY = edit("def multiply(a, b):\n    return a + b", "def multiply(a, b):\n    return a * b")
RULES = {
    "fix both": [ADD, MULTIPLY],
    "fix add only": [ADD],
    "ambiguous edit": [edit("return a - b", "return a + b")],  # twice in the file: the tool refuses it
    "rewrite": [{"name": "write_file", "arguments": {"path": "/work/calc.py", "content": FIXED}}],
}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    for setting in ("MACHINE_JUDGE_MODEL", "TINKER_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(setting, raising=False)  # the inherited judges stay UNSCORED
    root = tmp_path / "ws"
    for name in ("dev", "coder"):
        shutil.copytree(REPO / "machines" / name, root / "machines" / name)
    child = root / "machines" / "dev" / "edge"
    child.mkdir()
    (child / "machine.py").write_text(MACHINE, encoding="utf-8")
    (child / "hidden.json").write_text(json.dumps(HIDDEN), encoding="utf-8")
    rules = [
        {
            "match": f"^{what}$",
            "turns": [*({"tool_calls": [call]} for call in calls), {"text": "Done."}],
        }
        for what, calls in RULES.items()
    ]
    (tmp_path / "script.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return open_workspace(
        root, data_dir=tmp_path / ".machine", harness=ScriptedHarness(tmp_path / "script.json")
    )


async def graded(ws: Workspace, request: str, case_id: str = "calc-edges") -> tuple[Run, float | None, str]:
    case = Case(id=case_id, input=request, files={"calc.py": CALC, "test_calc.py": VISIBLE})
    run = await ws.run("dev/edge", request, case=case, grade=True)
    assert run.status == "ok" and run.scorecard is not None, run.error
    found = run.scorecard.criteria["hidden_tests"]
    return run, found.score, found.reason


def sandboxed(test: Any) -> Any:
    """Skips off CI where bubblewrap does not work, fails on CI; runs under anyio."""
    for mark in needs_bubblewrap():
        test = mark(test)
    return test


@sandboxed
async def test_edits_that_fix_every_hidden_test_score_one(ws: Workspace) -> None:
    run, score, reason = await graded(ws, "fix both")
    assert [c.name for c in run.tool_calls] == ["edit_file", "edit_file"]
    assert (score, reason) == (1.0, "2 of 2 hidden test files pass alone on the run's files")
    assert not any(Path(ws.sandbox_dir).glob("*"))


@sandboxed
async def test_a_whole_file_written_through_the_sandbox_path_counts(ws: Workspace) -> None:
    _, score, reason = await graded(ws, "rewrite")
    assert score == 1.0, reason


@sandboxed
async def test_a_fraction_when_some_hidden_tests_fail_with_the_failures_named(ws: Workspace) -> None:
    _, score, reason = await graded(ws, "fix add only")
    assert score == 0.5
    assert reason.startswith(
        "1 of 2 hidden test files fail alone on the run's files: test_edge_multiply.py (1 of 1 failed: "
        "FAIL: test_edge"
    ), reason
    assert "AssertionError: 1 != -6" in reason


@sandboxed
async def test_an_edit_the_tool_refused_does_not_count(ws: Workspace) -> None:
    run, score, reason = await graded(ws, "ambiguous edit")
    [result] = run.tool_results
    assert result.is_error and "2" in result.content  # the old text is in the file twice
    assert score == 0.0, reason  # replayed anyway, it would have fixed add and scored 0.5


@sandboxed
async def test_unscored_when_hidden_json_lacks_the_case_or_is_missing(ws: Workspace) -> None:
    _, score, reason = await graded(ws, "fix both", case_id="another")
    hidden_file = ws.machines_dir / "dev" / "edge" / "hidden.json"
    assert (score, reason) == (None, f"{hidden_file} has no hidden tests for case 'another'")
    hidden_file.unlink()
    _, score, reason = await graded(ws, "fix both")
    assert (score, reason) == (
        None,
        f"{hidden_file} does not exist, so case 'calc-edges' has no hidden tests",
    )


async def test_unscored_when_the_run_has_no_case_or_hidden_json_is_malformed(tmp_path: Path) -> None:
    grader = hidden_tests(str(tmp_path / "machine.py"))
    assert isinstance(grader, HiddenTests) and grader.name == "hidden_tests" and grader.kind == "check"
    run = Run(machine="dev/edge", model="echo", harness="echo", input="hi")
    with pytest.raises(LookupError, match="the run has no case"):
        await grader.fn(run, {})
    (tmp_path / "hidden.json").write_text('{"c": {"files": {"../x.py": "x"}}}', encoding="utf-8")
    with pytest.raises(LookupError, match=re.escape("'../x.py', which is not a test_*.py file name")):
        await grader.fn(run, {"id": "c"})


# --- final_files ------------------------------------------------------------------------------------------


def replayed(calls: list[tuple[str, dict[str, Any], bool]]) -> Run:
    trajectory = [Message(role="user", content="go")]
    for index, (name, arguments, is_error) in enumerate(calls):
        call = ToolCall(id=f"c{index}", name=name, arguments=arguments)
        trajectory.append(Message(role="assistant", tool_calls=[call]))
        trajectory.append(
            Message(role="tool", tool_call_id=call.id, name=name, content="r", is_error=is_error)
        )
    trajectory.append(
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="unanswered", name="write_file", arguments={"path": "late.py", "content": "x"})
            ],
        )
    )
    return Run(machine="dev", model="echo", harness="echo", input="go", trajectory=trajectory)


def test_final_files_replays_only_the_successful_writes_and_edits_in_order() -> None:
    run = replayed(
        [
            ("write_file", {"path": "./new.py", "content": "a = 1\n"}, False),
            ("edit_file", {"path": "/work/new.py", "old": "a = 1", "new": "a = 2"}, False),
            ("edit_file", {"path": "calc.py", "old": "x", "new": "REFUSED"}, True),
            ("write_file", {"path": "../outside.py", "content": "x"}, False),
            ("run", {"command": "echo > made.py"}, False),
            ("edit_file", {"path": "src/../calc.py", "old": "x", "new": "y"}, False),
            ("edit_file", {"path": "gone.py", "old": "x", "new": "y"}, False),
        ]
    )
    assert final_files(run, {"./calc.py": "x x\n"}) == {"calc.py": "y x\n", "new.py": "a = 2\n"}


class _Unisolated(LocalSandbox):
    """A LocalSandbox as it is where bubblewrap does not work."""

    @classmethod
    def create(cls, root: Path, run_id: str, files: Any = None, **options: Any) -> LocalSandbox:
        return LocalSandbox.create(root, run_id, files, isolate=False)


@sandboxed
async def test_unscored_where_the_sandbox_is_not_isolated_and_nothing_of_the_run_runs(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hidden_module, "LocalSandbox", _Unisolated)
    _, score, reason = await graded(ws, "fix both")
    assert score is None and "not isolated" in reason and "bubblewrap" in reason
