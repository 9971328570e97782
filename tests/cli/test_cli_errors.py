"""Bad input gives one clear line naming what is at fault, exit status 2, and no row in the store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import Result

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]


def seeded(ws: WorkspaceFolder, invoke: Invoke) -> int:
    """Store one run first, so 'no new row' is checked against a store that exists."""
    result = invoke("run", "plain", "hi", "--harness", "echo", "--workspace", ws.root)
    assert result.exit_code == 0, result.stderr
    assert ws.count() == 1
    return 1


def refused(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: ")
    for fragment in fragments:
        assert fragment in result.stderr
    assert "Traceback" not in result.stderr


BROKEN_IMPORT = """\
from machine import define_machine

helper = 1
raise RuntimeError("the broken machine cannot start")
"""

BROKEN_SYNTAX = """\
from machine import define_machine

def broken(:
    pass
"""

MISSING_GRADER = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"correct": "Right answer.", "polite": "Polite."})
evaluator = define_evaluator(rubric, {"correct": check("correct", lambda run: True)})
"""

EXTRA_GRADER = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"correct": "Right answer."})
evaluator = define_evaluator(
    rubric,
    {"correct": check("correct", lambda run: True), "stylish": check("stylish", lambda run: True)},
)
"""


@pytest.mark.parametrize(
    ("source", "fragments"),
    [
        (BROKEN_IMPORT, ["machines/broken/machine.py:4", "RuntimeError: the broken machine cannot start"]),
        (BROKEN_SYNTAX, ["machines/broken/machine.py:3", "SyntaxError"]),
        (MISSING_GRADER, ["machines/broken/machine.py:4", "criterion 'polite' has no grader"]),
        (EXTRA_GRADER, ["machines/broken/machine.py:4", "grader for 'stylish' matches no criterion"]),
    ],
    ids=["raises", "syntax", "missing-grader", "extra-grader"],
)
@pytest.mark.parametrize("command", ["run", "suite", "show"])
def test_a_broken_machine_file_is_named_with_its_line(
    ws: WorkspaceFolder, invoke: Invoke, source: str, fragments: list[str], command: str
) -> None:
    before = seeded(ws, invoke)
    ws.write("machines/broken/machine.py", source)
    ws.write_json("machines/broken/cases.json", [{"id": "a", "input": "hi"}])
    args = {"run": ["hi", "--harness", "echo"], "suite": ["--harness", "echo"], "show": []}[command]
    refused(invoke(command, "broken", *args, "--workspace", ws.root), *fragments)
    assert ws.count() == before


def test_a_broken_machine_through_the_console_script(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    ws.write("machines/broken/machine.py", BROKEN_IMPORT)
    done = machine_cmd("run", "broken", "hi", "--harness", "echo", "--workspace", ws.root)
    assert done.returncode == 2
    assert f"{ws.machines}/broken/machine.py:4" in done.stderr
    assert "the broken machine cannot start" in done.stderr
    assert "Traceback" not in done.stderr
    assert ws.count() == 0


def test_a_broken_machine_does_not_stop_the_others(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write("machines/broken/machine.py", BROKEN_IMPORT)
    result = invoke("run", "plain", "hi", "--harness", "echo", "--workspace", ws.root)
    assert result.exit_code == 0, result.stderr
    assert ws.count() == 1


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        ('[{"id": "a", "input": "greet ann"}, {"id": "b"}]', ["case 1 is malformed", "input"]),
        (
            '[{"id": "a", "input": "greet ann"}, {"id": "a", "input": "greet bob"}]',
            ["case 1 repeats the id 'a'"],
        ),
        ('[{"input": "greet ann"}]', ["case 0 is malformed", "id"]),
        ('[{"id": "a", "input": "greet ann"},', ["is not valid JSON"]),
        ('{"id": "a"}', ["must hold a JSON list of cases"]),
        ("[]", ["holds no cases"]),
    ],
    ids=["missing-input", "repeated-id", "missing-id", "not-json", "not-a-list", "empty"],
)
def test_a_malformed_cases_file_names_the_file_and_case(
    ws: WorkspaceFolder, invoke: Invoke, content: str, fragments: list[str]
) -> None:
    before = seeded(ws, invoke)
    path = ws.write("machines/greet/bad.json", content)
    result = invoke(
        "suite",
        "greet",
        "--cases",
        "bad.json",
        "--harness",
        "scripted",
        "--script",
        ws.script,
        "--workspace",
        ws.root,
    )
    refused(result, f"cases file {path}", *fragments)
    assert ws.count() == before


def test_a_case_file_outside_the_sandbox_is_a_malformed_case(ws: WorkspaceFolder, invoke: Invoke) -> None:
    before = seeded(ws, invoke)
    path = ws.write_json(
        "machines/greet/escape.json",
        [
            {"id": "ann", "input": "greet ann"},
            {"id": "esc", "input": "greet bob", "files": {"../../escape.txt": "x"}},
        ],
    )
    args = ["--cases", "escape.json", "--harness", "echo", "--workspace", ws.root]
    try:
        result = invoke("suite", "greet", *args)
    except Exception as error:  # what happens now: the ValueError escapes the command
        pytest.fail(f"the command crashed: {type(error).__name__}: {error}")
    refused(result, f"cases file {path}", "case 1", "../../escape.txt")
    assert ws.count() == before
    assert not (ws.root / ".machine" / "sandboxes").exists()


def test_a_missing_cases_file_is_named(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("suite", "plain", "--harness", "echo", "--workspace", ws.root)
    refused(result, "cases file", "machines/plain/cases.json does not exist")
    result = invoke("suite", "greet", "--cases", "nowhere.json", "--harness", "echo", "--workspace", ws.root)
    refused(result, "cases file nowhere.json does not exist")
    assert ws.count() == 0


@pytest.mark.parametrize("command", ["run", "suite", "show", "runs", "tree"])
def test_an_unknown_machine_lists_the_known_ones(ws: WorkspaceFolder, invoke: Invoke, command: str) -> None:
    before = seeded(ws, invoke)
    args = {"run": ["hi", "--harness", "echo"], "suite": ["--harness", "echo"]}.get(command, [])
    result = invoke(command, "nope", *args, "--workspace", ws.root)
    refused(result, "there is no machine 'nope'", "the known machines are: greet, greet/loud, plain")
    assert ws.count() == before


def test_an_unknown_machine_in_an_empty_workspace(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "nope", "hi", "--harness", "echo", "--workspace", tmp_path)
    refused(result, "there is no machine 'nope'", "none (no machines/<name>/machine.py under")


@pytest.mark.parametrize("command", ["run", "suite"])
def test_an_unknown_harness_is_named_with_the_choices(
    ws: WorkspaceFolder, invoke: Invoke, command: str
) -> None:
    before = seeded(ws, invoke)
    args = ["greet", "hi"] if command == "run" else ["greet"]
    result = invoke(command, *args, "--harness", "nope", "--workspace", ws.root)
    refused(result, "unknown harness 'nope'", "echo, scripted")
    assert ws.count() == before


@pytest.mark.parametrize(
    ("script", "fragments"),
    [
        (None, ["the scripted harness needs a script", "--script"]),
        ("missing.json", ["script", "missing.json does not exist"]),
    ],
)
def test_scripted_harness_without_a_usable_script(
    ws: WorkspaceFolder, invoke: Invoke, script: str | None, fragments: list[str]
) -> None:
    args = ["--script", str(ws.root / script)] if script else []
    result = invoke("run", "greet", "hi", "--harness", "scripted", *args, "--workspace", ws.root)
    refused(result, *fragments)
    assert ws.count() == 0


def test_a_malformed_script_is_named(ws: WorkspaceFolder, invoke: Invoke) -> None:
    bad = ws.write_json("bad-script.json", {"rules": [{"match": "(", "turns": [{"text": "x"}]}]})
    result = invoke("run", "greet", "hi", "--harness", "scripted", "--script", bad, "--workspace", ws.root)
    refused(result, f"script {bad} is malformed", "rules.0.match")
    assert ws.count() == 0


@pytest.mark.parametrize("budget", ["-1", "abc", "nan", "inf"])
@pytest.mark.parametrize("command", ["run", "suite"])
def test_a_bad_budget_is_named(ws: WorkspaceFolder, invoke: Invoke, budget: str, command: str) -> None:
    before = seeded(ws, invoke)
    args = ["greet", "hi"] if command == "run" else ["greet"]
    result = invoke(command, *args, "--harness", "echo", "--budget", budget, "--workspace", ws.root)
    refused(result, f"budget {budget!r}", "--budget" if budget == "abc" else "non-negative")
    assert ws.count() == before


def test_continue_with_an_input_is_an_error(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("run", "greet", "hi", "--continue", "--harness", "echo", "--workspace", ws.root)
    refused(result, "--continue", "leave out INPUT")
    assert ws.count() == 0


def test_a_budget_spent_before_the_run_refuses_it(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("run", "greet", "hi", "--harness", "echo", "--budget", "0", "--workspace", ws.root)
    refused(result, "the budget of $0.0000 is spent", "--budget")
    assert ws.count() == 0


def test_default_harness_tinker_needs_its_key(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    # machine_cmd runs without TINKER_API_KEY and without MACHINE_HARNESS, so the default is tinker.
    for args in (["run", "greet", "hi"], ["suite", "greet"]):
        done = machine_cmd(*args, "--workspace", ws.root)
        assert done.returncode == 2, done.stdout
        assert "the tinker harness needs TINKER_API_KEY" in done.stderr
        assert "set it" in done.stderr
        assert "--harness echo" in done.stderr
        assert "Traceback" not in done.stderr
    assert ws.count() == 0


def test_machine_harness_env_picks_the_harness(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("run", "plain", "hello", "--workspace", ws.root, env={"MACHINE_HARNESS": "echo"})
    assert done.returncode == 0, done.stderr
    assert "via echo" in done.stdout


def test_an_unknown_run_id_through_the_console_script(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("run", "plain", "hi", "--harness", "echo", "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    done = machine_cmd("eval", "plain", "20990101-000000-00000000", "--workspace", ws.root)
    assert done.returncode == 2
    assert "there is no run '20990101-000000-00000000'" in done.stderr
    assert "machine runs NAME" in done.stderr
    assert ws.count() == 1


def test_price_as_a_model_without_a_price_is_an_error(ws: WorkspaceFolder, invoke: Invoke) -> None:
    before = seeded(ws, invoke)
    result = invoke(
        "run", "greet", "hi", "--harness", "echo", "--price-as", "my/base", "--workspace", ws.root
    )
    refused(result, "--price-as 'my/base' has no listed price")
    assert ws.count() == before
