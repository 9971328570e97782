"""Changes to a person's files from the SDK: a run in the workspace's ``project`` asks the program's
``approve_edit`` callback about each change (the diff it is given is the change made on a yes), a no
leaves the file as it was, ``edits = "deny"`` refuses every change, and a program that set a project and
no callback has its changes made unasked, as before."""

from __future__ import annotations

from pathlib import Path

import anyio
from helpers.dev_project import ORIGINAL, setup

from machine.clients.scripted import ScriptedHarness
from machine.ops import open_workspace
from machine.runs import EditAnswer, EditProposal, Run
from machine.workspace import Workspace


def opened(tmp_path: Path) -> tuple[Workspace, Path]:
    root, script, project = setup(tmp_path)
    ws = open_workspace(root, harness=ScriptedHarness(script))
    ws.project = project
    return ws, project


def changes(run: Run) -> list[tuple[str | None, str, str]]:
    return [(e.path, e.decision, e.by) for m in run.trajectory for e in m.edits]


def test_the_callback_is_asked_about_each_change(tmp_path: Path) -> None:
    ws, project = opened(tmp_path)
    asked: list[EditProposal] = []

    async def approve(proposal: EditProposal) -> EditAnswer:
        asked.append(proposal)
        return EditAnswer("yes" if proposal.path == "app.py" else "no")

    run = anyio.run(lambda: ws.run("dev", "change it", approve_edit=approve))
    assert [p.path for p in asked] == ["app.py", "notes/new.txt", "shown.txt"]
    assert asked[0].before == ORIGINAL and asked[0].after == (project / "app.py").read_text()
    assert "-    return 'hi'\n+    return 'hello'\n" in asked[0].diff
    assert asked[1].before is None and asked[1].diff.startswith("--- /dev/null\n+++ b/notes/new.txt\n")
    assert sorted(p.name for p in project.iterdir()) == [".git", "app.py"]
    assert changes(run) == [
        ("app.py", "approved", "sdk"),
        ("notes/new.txt", "declined", "sdk"),
        ("shown.txt", "declined", "sdk"),
    ]


def test_deny_refuses_and_no_callback_makes_them_as_before(tmp_path: Path) -> None:
    ws, project = opened(tmp_path)
    ws.edits = "deny"
    denied = anyio.run(lambda: ws.run("dev", "change it"))
    assert (project / "app.py").read_text() == ORIGINAL and not (project / "shown.txt").exists()
    assert {by for _, _, by in changes(denied)} == {"policy"}
    assert "refuses every change" in next(m.content for m in denied.trajectory if m.role == "tool")
    ws.edits = None
    made = anyio.run(lambda: ws.run("dev", "change it"))
    assert (project / "shown.txt").exists() and changes(made) == []


def test_a_fresh_sandbox_is_never_asked_about(tmp_path: Path) -> None:
    ws, project = opened(tmp_path)
    ws.project = None

    async def never(proposal: EditProposal) -> EditAnswer:
        raise AssertionError(f"asked about {proposal.path} in a fresh sandbox")

    run = anyio.run(lambda: ws.run("dev", "change it", approve_edit=never))
    assert run.status == "ok" and changes(run) == []
    assert (project / "app.py").read_text() == ORIGINAL
