"""The SDK handle: machine.load(...) and what it runs, streams, grades and keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import machine
from machine import BadInputError, Budget, open_workspace
from machine.clients.scripted import ScriptedHarness

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric
from machine.sandboxes.tools import read_file, write_file

rubric = define_rubric({"answered": "Says something."})
machine = define_machine(
    name="clerk",
    intent="Reads and writes notes.",
    instructions="Do what is asked with the files.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"answered": check("answered", lambda run: bool(run.output))}),
    tools=[read_file, write_file],
)
"""

SCRIPT = {
    "rules": [
        {
            "match": "^read",
            "turns": [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                {"text": "I read the notes."},
            ],
        },
        {
            "match": "^write",
            "turns": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "done"}}]},
                {"text": "Written."},
            ],
        },
        {"match": ".*", "turns": [{"text": "Hello."}]},
    ]
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "machines" / "clerk").mkdir(parents=True)
    (tmp_path / "machines" / "clerk" / "machine.py").write_text(MACHINE_PY)
    (tmp_path / "machines" / "clerk" / "cases.json").write_text(json.dumps([{"id": "hi", "input": "hi"}]))
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    return tmp_path


def clerk(root: Path) -> machine.MachineHandle:
    return machine.load("clerk", workspace=root, harness=ScriptedHarness(root / "script.json"), budget=1)


async def test_a_run_streams_its_messages_then_the_finished_run(root: Path) -> None:
    handle = clerk(root)
    seen = [m async for m in handle.run("read the notes", files={"notes.txt": "buy milk"})]
    assert [m.type for m in seen] == ["assistant", "tool_call", "tool_result", "assistant", "result"]
    assert seen[1].name == "read_file"
    assert "buy milk" in seen[2].text
    final = seen[-1].run
    assert final is not None and final.output == "I read the notes."
    assert handle.workspace.store.get(final.id).output == "I read the notes."


async def test_a_run_can_be_awaited_and_graded(root: Path) -> None:
    run = await clerk(root).run("hello", grade=True)
    assert run.output == "Hello." and run.passed is True


async def test_a_session_keeps_one_conversation_in_one_folder(root: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    session = clerk(root).session(cwd=project)
    first = await session.send("hello")
    second = await session.send("write it")
    await session.close()
    assert first.conversation_id == second.conversation_id
    assert [m.content for m in second.history if m.role == "user"] == ["hello"]
    assert (project / "out.txt").read_text() == "done"
    stored = clerk(root).workspace.store.latest_session("clerk")
    assert stored is not None and stored.conversation_id == first.conversation_id


async def test_grade_takes_the_runs_never_graded(root: Path) -> None:
    handle = clerk(root)
    await handle.run("hello")
    await handle.run("hello", grade=True)
    assert len(handle.pending()) == 1
    graded = await handle.grade()
    assert len(graded) == 1 and graded[0].passed is True
    assert handle.pending() == []


async def test_suite_from_the_handle(root: Path) -> None:
    report = await clerk(root).suite(trials=2)
    assert report.runs == 2 and report.pass_rate == 1.0


def test_load_takes_a_workspace_object(root: Path) -> None:
    ws = open_workspace(root, budget=Budget(None))
    assert machine.load("clerk", workspace=ws).workspace is ws


def test_load_refuses_settings_a_workspace_object_would_ignore(root: Path) -> None:
    ws = open_workspace(root, budget=Budget(None))
    with pytest.raises(BadInputError, match=r"given a Workspace.*harness, budget beside it would be ignored"):
        machine.load("clerk", workspace=ws, harness="echo", budget=1)


async def test_load_takes_what_the_command_line_takes(root: Path) -> None:
    handle = machine.load(
        "clerk", workspace=root, harness="scripted", script=root / "script.json", budget=1, effort="low",
        judge_model="openrouter/some/judge", judge_effort="high",
    )  # fmt: skip
    ws = handle.workspace
    assert ws.harness.name == "scripted" and ws.budget.usd == 1
    assert ws.judge_model == "openrouter/some/judge"
    assert (await handle.run("hello")).output  # the script replayed


VERSIONED_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, model_from

rubric = define_rubric({"answered": "Says something."})
machine = define_machine(
    name="keeper",
    intent="Answers.",
    instructions="Answer.",
    model=model_from(__file__, "model-one"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"answered": check("answered", lambda run: bool(run.output))}),
)
"""


def test_versions_update_and_revert_through_the_handle(tmp_path: Path) -> None:
    folder = tmp_path / "machines" / "keeper"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(VERSIONED_PY)
    handle = machine.load("keeper", workspace=tmp_path, harness="echo")
    assert [v.label for v in handle.versions()] == ["v1"]
    handle.update(model="model-two")
    assert handle.spec.model == "model-two"
    assert (folder / "model.json").exists()
    handle.revert()
    assert handle.spec.model == "model-one"
    assert not (folder / "model.json").exists()


async def test_train_passes_the_adapter_shape_and_a_trainer_that_cannot_take_it_refuses(
    tmp_path: Path,
) -> None:
    from helpers.training import make_caps

    from machine import BadInputError

    make_caps(tmp_path)
    handle = machine.load("caps", workspace=tmp_path, harness="echo")
    with pytest.raises(
        BadInputError, match="the tinker trainer does not take a LoRA dropout, target modules"
    ):
        await handle.train(lora_dropout=0.1, target_modules=["q_proj"])
    assert not (tmp_path / ".machine" / "training").exists()
