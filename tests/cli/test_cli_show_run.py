"""What is stored, shown: ``machine show-run`` prints a run whole, ``runs`` has a header row, the tags and
why a run failed, and ``suite --json`` names each case's runs so a person can drill down."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

from machine import open_workspace
from machine.runs import Tag

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def scripted(ws: WorkspaceFolder) -> list[str]:
    return ["--harness", "scripted", "--script", str(ws.script), "--workspace", str(ws.root)]


def tag(ws: WorkspaceFolder, run_id: str, *tags: Tag) -> None:
    store = open_workspace(ws.root).store
    run = store.get(run_id)
    run.tags.extend(tags)
    store.put(run)


def test_show_run_prints_every_step_each_reason_and_the_tags(ws: WorkspaceFolder, invoke: Invoke) -> None:
    made = as_json(invoke("run", "greet", "greet ann", "--eval", "--json", *scripted(ws)))
    tag(ws, made["id"], Tag(kind="good", note="the tone is right", answer="hello ann!"))
    out = ok(invoke("show-run", made["id"], "--workspace", ws.root)).stdout
    lines = out.splitlines()
    assert lines[0] == f"run {made['id']} · greet · Qwen/Qwen3.8-27B via scripted"
    assert "input:" in lines and "    greet ann" in lines
    assert '  → shout({"text": "hello ann"})' in lines  # the tool call and its result, whole
    assert "  ← shout:" in lines and "    HELLO ANN" in lines
    card = out.split("scorecard:")[1]
    assert "  ✓ greets (×2, check:says_hello): 1.00" in card
    assert "? warm (×1, judge:thinkingmachines/Inkling-Small): UNSCORED — the judge call failed" in card
    tagged = out.split("tags:")[1]
    assert "  good (learn this answer: 'hello ann!'): the tone is right (at " in tagged


def test_show_run_json_is_the_stored_run_as_run_json_printed_it(ws: WorkspaceFolder, invoke: Invoke) -> None:
    made = as_json(invoke("run", "greet", "greet ann", "--eval", "--json", *scripted(ws)))
    shown = as_json(invoke("show-run", made["id"], "--json", "--workspace", ws.root))
    assert shown == made


def test_show_run_of_a_failed_run_says_why(ws: WorkspaceFolder, invoke: Invoke) -> None:
    assert invoke("run", "greet", "nobody matches this", *scripted(ws)).exit_code == 1
    (failed,) = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    out = ok(invoke("show-run", failed["id"], "--workspace", ws.root)).stdout
    assert f"  FAILED: {failed['error']}" in out.splitlines()
    assert "scorecard: not graded" in out


def test_show_run_of_an_unknown_id_names_it(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("show-run", "20260101-000000-0000000000000000", "--workspace", ws.root)
    assert result.exit_code == 2 and result.stdout == ""
    assert "20260101-000000-0000000000000000" in result.stderr


def test_runs_has_a_header_the_tags_and_why_each_run_failed(ws: WorkspaceFolder, invoke: Invoke) -> None:
    graded = as_json(invoke("run", "greet", "greet bob", "--eval", "--json", *scripted(ws)))
    tag(ws, graded["id"], Tag(kind="bad", note="too loud"))
    assert invoke("run", "greet", "nobody matches this", *scripted(ws)).exit_code == 1
    header, error_row, graded_row = ok(invoke("runs", "greet", "--workspace", ws.root)).stdout.splitlines()
    assert " ".join(header.split()) == "id started score cost model case tags input, or why it failed"
    assert graded_row.startswith(graded["id"]) and " fail " in graded_row
    assert "below full marks: brief" in graded_row and " bad " in graded_row
    assert "ERROR" in error_row and "error: " in error_row
    assert graded_row.split()[1].endswith("Z")  # one timestamp form: UTC, to the second
    listed = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    assert listed[1]["tags"] == ["bad"] and listed[1]["failing"] == ["brief"]
    assert listed[0]["tags"] == [] and listed[0]["failing"] == []


@pytest.mark.slow
def test_suite_json_names_each_cases_runs(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("suite", "greet", "--trials", "2", "--json", *scripted(ws))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for case in report["cases"]:
        assert len(case["runs"]) == case["trials"] == 2
        for run_id in case["runs"]:
            shown = machine_cmd("show-run", run_id, "--json", "--workspace", ws.root)
            assert json.loads(shown.stdout)["case_id"] == case["case_id"]
