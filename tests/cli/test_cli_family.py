"""``machine tree`` and ``machine suite --tree`` on the test workspace's greet family: greet, its child
greet/loud (from conftest) and a second child greet/kind written here, each run on its own cases, and
the criteria greet declares put together across all of them (figures checked by hand)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from click.testing import Result

if TYPE_CHECKING:
    from conftest import WorkspaceFolder

Invoke = Callable[..., Result]

KIND_PY = """\
from machine import check, define_child, define_evaluator, define_rubric

from ..machine import machine as parent

rubric = define_rubric({"kind": "The reply says something kind."})

machine = define_child(
    parent,
    name="greet/kind",
    intent="Greet the person kindly.",
    instructions="Say something kind.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"kind": check("lovely", lambda run: "lovely" in run.output)}),
)
"""

GENTLE_PY = """\
from machine import define_child

from ..machine import machine as parent

machine = define_child(parent, name="greet/kind/gentle", intent="Greet gently.", instructions="Be gentle.")
"""

FAMILY_SCRIPT = {
    "rules": [
        {"match": "ann", "turns": [{"text": "hello ann"}]},  # greets 1, brief 1
        {"match": "bob", "turns": [{"text": "hello bob, what a long and lovely day it is"}]},  # 1, 0.5
        {"match": "cat", "turns": [{"text": "go away"}]},  # 0, 1
        {"match": "dan", "turns": [{"text": "HELLO DAN"}]},  # 1, 1; capitals 1
        {"match": "eve", "turns": [{"text": "hello eve, lovely to see you"}]},  # 1, 0.5; kind 1
    ]
}


def family(ws: WorkspaceFolder) -> list[str]:
    ws.write("machines/greet/kind/machine.py", KIND_PY)
    ws.write("machines/greet/kind/gentle/machine.py", GENTLE_PY)  # no cases.json: skipped with a note
    ws.write_json("machines/greet/loud/cases.json", [{"id": "dan", "input": "greet dan"}])
    ws.write_json("machines/greet/kind/cases.json", [{"id": "eve", "input": "greet eve"}])
    script = ws.write_json("family.json", FAMILY_SCRIPT)
    return ["--harness", "scripted", "--script", str(script), "--workspace", str(ws.root)]


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def test_tree_shows_each_member_with_what_it_inherits_and_adds(ws: WorkspaceFolder, invoke: Invoke) -> None:
    family(ws)
    out = ok(invoke("tree", "greet", "--workspace", ws.root)).stdout
    lines = out.splitlines()
    assert [
        line.strip() for line in lines if not line.strip().startswith(("inherits", "adds", "tools", "model"))
    ] == [
        "greet",
        "greet/kind",
        "greet/kind/gentle",
        "greet/loud",
    ]
    assert "  inherits: greets, brief, warm" in out
    assert "    inherits: greets, brief, warm, kind" in out  # the grandchild inherits its parent's too
    assert "adds:     kind" in out and "adds:     capitals" in out and "adds:     no criteria" in out


def test_suite_tree_json_per_machine_and_inherited(ws: WorkspaceFolder, invoke: Invoke) -> None:
    args = family(ws)
    report = json.loads(ok(invoke("suite", "greet", "--tree", "--trials", "2", "--json", *args)).stdout)
    assert set(report) >= {"machines", "inherited"}
    assert [m["machine"] for m in report["machines"]] == ["greet", "greet/kind", "greet/loud"]
    assert [[c["case_id"] for c in m["cases"]] for m in report["machines"]] == [
        ["ann", "bob", "cat"],
        ["eve"],
        ["dan"],
    ]
    assert [m["summary"]["runs"] for m in report["machines"]] == [6, 2, 2]
    assert report["machines"][2]["criteria"]["capitals"]["mean"] == 1.0
    assert report["skipped"] == [
        {"machine": "greet/kind/gentle", "reason": pytest.approx(report["skipped"][0]["reason"])}
    ]
    assert "cases.json" in report["skipped"][0]["reason"]
    inherited = report["inherited"]
    assert list(inherited) == ["greets", "brief", "warm"]
    # greets: ann 1, bob 1, cat 0, eve 1, dan 1 (twice each): 8 / 10, and 8 of 10 pass.
    assert inherited["greets"] == {
        "mean": pytest.approx(0.8),
        "pass_rate": pytest.approx(0.8),
        "runs": 10,
        "unscored": 0,
        "raised": {},
    }
    # brief: ann 1, bob 0.5, cat 1, eve 0.5, dan 1: 4 / 5; ann, cat, dan pass: 6 of 10.
    assert inherited["brief"] == {
        "mean": pytest.approx(0.8),
        "pass_rate": pytest.approx(0.6),
        "runs": 10,
        "unscored": 0,
        "raised": {},
    }
    # warm is a judge with no model to reach here: UNSCORED on every run, so no mean.
    assert inherited["warm"] == {"mean": None, "pass_rate": None, "runs": 0, "unscored": 10, "raised": {}}


def test_suite_tree_text_report(ws: WorkspaceFolder, invoke: Invoke) -> None:
    args = family(ws)
    out = ok(invoke("suite", "greet", "--tree", *args)).stdout
    assert "greet: 3 runs" in out and "greet/kind: 1 run," in out and "greet/loud: 1 run," in out
    assert "greet/kind/gentle: skipped" in out
    assert "inherited from greet, across 3 machines:" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[-4:] if line.strip()}
    assert rows["greets"] == ["0.80", "80%", "5", "0"]
    assert rows["brief"] == ["0.80", "60%", "5", "0"]
    assert rows["warm"] == ["UNSCORED", "-", "0", "5"]


def test_suite_tree_refuses_cases_and_resume(ws: WorkspaceFolder, invoke: Invoke) -> None:
    args = family(ws)
    refused = invoke("suite", "greet", "--tree", "--cases", "other.json", *args)
    assert refused.exit_code != 0 and "own cases.json" in refused.stderr


def test_suite_tree_replays_each_members_own_script_from_a_folder(
    ws: WorkspaceFolder, invoke: Invoke
) -> None:
    args = family(ws)
    per_member = {"greet": "hello", "greet/kind": "hello, lovely", "greet/loud": "HELLO"}
    for member, reply in per_member.items():  # the same inputs, a reply of each member's own
        ws.write_json(
            f"machines/{member}/script.json", {"rules": [{"match": ".", "turns": [{"text": reply}]}]}
        )
    args[args.index("--script") + 1] = str(ws.machines)  # a folder: machines/<member>/script.json
    report = json.loads(ok(invoke("suite", "greet", "--tree", "--json", *args)).stdout)
    assert [m["machine"] for m in report["machines"]] == ["greet", "greet/kind", "greet/loud"]
    outputs = {member: {r.output for r in ws.runs(member)} for member in per_member}
    assert outputs == {member: {reply} for member, reply in per_member.items()}


def test_a_folder_script_without_a_members_file_names_it(ws: WorkspaceFolder, invoke: Invoke) -> None:
    args = family(ws)
    args[args.index("--script") + 1] = str(ws.machines)
    done = invoke("run", "greet", "greet ann", *args)
    assert done.exit_code == 1
    assert f"{ws.machines / 'greet' / 'script.json'} does not exist" in done.stdout + done.stderr
