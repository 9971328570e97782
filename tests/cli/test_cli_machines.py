"""``machine list``, ``show`` and ``tree`` on the test workspace."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from click.testing import Result

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def test_list_text(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("list", "--workspace", ws.root)).stdout
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["greet", "greet/loud", "plain"]
    assert "Qwen/Qwen3.8-27B" in lines[0]
    assert "3 criteria" in lines[0]
    assert "Greet the person named in the input." in lines[0]
    assert "4 criteria" in lines[1]
    assert "Repeat the input." in lines[2]


def test_list_json_shape(ws: WorkspaceFolder, invoke: Invoke) -> None:
    listed = as_json(invoke("list", "--json", "--workspace", ws.root))
    shown = ("name", "intent", "model", "criteria")  # each row is a MachineSummary; these are the listing's
    rows = [{key: row[key] for key in shown} for row in listed]
    assert all(row["error"] is None for row in listed)
    assert rows == [
        {
            "name": "greet",
            "intent": "Greet the person named in the input.",
            "model": "Qwen/Qwen3.8-27B",
            "criteria": ["greets", "brief", "warm"],
        },
        {
            "name": "greet/loud",
            "intent": "Greet the person loudly.",
            "model": "Qwen/Qwen3.8-27B",
            "criteria": ["greets", "brief", "warm", "capitals"],
        },
        {"name": "plain", "intent": "Repeat the input.", "model": "echo", "criteria": ["nonempty"]},
    ]


def test_list_reports_a_broken_machine_and_lists_the_rest(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write("machines/broken/machine.py", "import nothing_by_this_name\n")
    result = invoke("list", "--workspace", ws.root)
    assert result.exit_code == 1
    assert "machines/broken/machine.py:1" in result.stderr
    assert "nothing_by_this_name" in result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["greet", "greet/loud", "plain"]


def test_a_folder_whose_name_breaks_the_rule_is_named_with_the_rule(
    ws: WorkspaceFolder, invoke: Invoke
) -> None:
    ws.write("machines/My Bot/machine.py", (ws.root / "machines/plain/machine.py").read_text())
    result = invoke("list", "--workspace", ws.root)
    assert result.exit_code == 1
    assert "machines/My Bot holds a machine.py, but its name breaks the naming rule" in result.stderr
    assert (
        "lower-case letters, digits" in result.stderr
        and "rename the folder to machines/my-bot" in result.stderr
    )
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["greet", "greet/loud", "plain"]
    shown = invoke("show", "My Bot", "--workspace", ws.root)
    assert shown.exit_code == 2 and "rename the folder to machines/my-bot" in shown.stderr
    other = invoke("show", "bot", "--workspace", ws.root)
    assert (
        "there is no machine 'bot'" in other.stderr and "machines/My Bot holds a machine.py" in other.stderr
    )


def test_show_text_lists_criteria_weights_graders_and_tools(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("show", "greet", "--workspace", ws.root)).stdout
    assert out.splitlines()[0] == "greet"
    assert "intent: Greet the person named in the input." in out
    assert "model:  Qwen/Qwen3.8-27B" in out
    assert "greets  ×2  check:says_hello" in out
    assert "brief  ×1  check:at_most_20" in out
    assert "warm  ×1  judge:judge" in out
    assert "The reply says hello." in out
    assert "shout: Return the text in capital letters." in out
    assert "parent:" not in out
    assert "(from" not in out


def test_show_json(ws: WorkspaceFolder, invoke: Invoke) -> None:
    info = as_json(invoke("show", "greet", "--json", "--workspace", ws.root))
    assert info["name"] == "greet"
    assert info["parent"] is None
    assert info["max_steps"] == 8
    assert [(c["name"], c["weight"], c["grader"], c["from"]) for c in info["criteria"]] == [
        ("greets", 2.0, "check:says_hello", "greet"),
        ("brief", 1.0, "check:at_most_20", "greet"),
        ("warm", 1.0, "judge:judge", "greet"),
    ]
    assert info["tools"] == [
        {"name": "shout", "description": "Return the text in capital letters.", "from": "greet"}
    ]


def test_show_child_has_parent_criteria_and_tools(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("show", "greet/loud", "--workspace", ws.root)).stdout
    assert "parent: greet" in out
    for line in (
        "greets  ×2  check:says_hello",
        "brief  ×1  check:at_most_20",
        "capitals  ×3  check:all_caps",
    ):
        assert line in out
    assert "shout  (from greet): Return the text in capital letters." in out
    assert "count_letters: Count the letters in the text." in out
    info = as_json(invoke("show", "greet/loud", "--json", "--workspace", ws.root))
    assert info["parent"] == "greet"
    assert [c["name"] for c in info["criteria"]] == ["greets", "brief", "warm", "capitals"]
    assert [(t["name"], t["from"]) for t in info["tools"]] == [
        ("shout", "greet"),
        ("count_letters", "greet/loud"),
    ]
    assert next(c for c in info["criteria"] if c["name"] == "capitals")["from"] == "greet/loud"


def test_show_child_marks_inherited_criteria(ws: WorkspaceFolder, invoke: Invoke) -> None:
    info = as_json(invoke("show", "greet/loud", "--json", "--workspace", ws.root))
    assert {c["name"]: c["from"] for c in info["criteria"]} == {
        "greets": "greet",
        "brief": "greet",
        "warm": "greet",
        "capitals": "greet/loud",
    }
    out = ok(invoke("show", "greet/loud", "--workspace", ws.root)).stdout
    assert "greets  ×2  check:says_hello  (from greet)" in out


def test_tree_shows_the_family(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("tree", "greet", "--workspace", ws.root)).stdout
    lines = out.splitlines()
    assert lines[0] == "greet"
    assert "  greet/loud" in lines
    assert lines.index("  greet/loud") > 0
    assert "  adds:     greets, brief, warm" in lines
    assert "  tools:    shout" in lines
    assert "    tools:    count_letters" in lines
    assert "plain" not in out


def test_tree_child_inherits_and_adds(ws: WorkspaceFolder, invoke: Invoke) -> None:
    lines = ok(invoke("tree", "greet", "--workspace", ws.root)).stdout.splitlines()
    child = lines[lines.index("  greet/loud") :]
    assert "    inherits: greets, brief, warm" in child
    assert "    adds:     capitals" in child


def test_tree_of_a_child_starts_there(ws: WorkspaceFolder, invoke: Invoke) -> None:
    lines = ok(invoke("tree", "greet/loud", "--workspace", ws.root)).stdout.splitlines()
    assert lines[0] == "greet/loud"
    assert all(not line.startswith("greet ") for line in lines)


def test_show_unknown_machine_lists_the_known(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("show", "nope", "--workspace", ws.root)
    assert result.exit_code == 2
    assert "there is no machine 'nope'" in result.stderr
    assert "greet, greet/loud, plain" in result.stderr


def test_show_through_the_console_script(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("show", "greet/loud", "--json", "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["parent"] == "greet"
