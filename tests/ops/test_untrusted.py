"""An untrusted child rehearsed before the person trusts it: its stand-in is built from what loading it in
the sandbox reported, runs with the parent's trusted parts, and grades its own checks in the sandbox; its
code is never imported in this process, and what it would need to run outside keeps it from running."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.bwrap import needs_bubblewrap
from helpers.cli_workspace import WorkspaceFolder, write_workspace
from helpers.trust import imported_from

from machine import NotTrusted, open_workspace, run_suite
from machine.ops._untrusted import stand_in

pytestmark = needs_bubblewrap()

CHILD = """\
from pathlib import Path

from machine import check, define_child, define_evaluator, judge

from ..machine import machine as parent
from .rubric import rubric

try:
    Path({marker!r}).write_text("imported")
except OSError:
    pass

{extra}

machine = define_child(
    parent,
    name="greet/shy",
    intent="Greet the person quietly.",
    instructions="Use small letters only.",
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {{"quiet": check("lower", lambda run: (run.output.islower(), "lower: " + str(run.output.islower()))),
          "kind": judge(model="org/judge-model")}},
    ),
    model="echo",
    {tools}
)
"""
RUBRIC = """\
from machine import define_rubric

rubric = define_rubric({"quiet": "The reply is in small letters.", "kind": "The reply is kind."})
"""


@pytest.fixture
def folder(tmp_path: Path) -> WorkspaceFolder:
    return write_workspace(tmp_path / "ws")


def write_child(ws: WorkspaceFolder, marker: Path, *, extra: str = "", tools: str = "") -> None:
    machine_py = CHILD.format(marker=str(marker), extra=extra, tools=tools)
    ws.write_as_model("greet/shy", {"machine.py": machine_py, "rubric.py": RUBRIC}, by="a test model")
    ws.write_json(
        "machines/greet/shy/cases.json",
        [{"id": "one", "input": "hello there"}, {"id": "two", "input": "HELLO"}],
    )


@pytest.mark.slow
async def test_a_stand_in_runs_with_trusted_parts_and_grades_its_checks_in_the_sandbox(
    folder: WorkspaceFolder, tmp_path: Path
) -> None:
    marker = tmp_path / "imported"
    write_child(folder, marker)
    ws = open_workspace(folder.root, harness="echo")
    with pytest.raises(NotTrusted):
        ws.load("greet/shy")
    spec = await stand_in(ws, "greet/shy")
    assert not marker.exists(), "the child was imported outside the sandbox"
    assert imported_from(folder.machines / "greet" / "shy") == []
    assert spec.parent is ws.load("greet") and spec.model == "echo"
    assert set(spec.rubric) == {"greets", "brief", "warm", "quiet", "kind"}
    assert spec.evaluator.graders["greets"] is ws.load("greet").evaluator.graders["greets"]  # the parent's
    assert spec.evaluator.graders["kind"].kind == "judge"
    assert [t.name for t in spec.tools] == ["shout"]  # the parent's tool
    report = await run_suite(ws, spec, ws.cases(spec))
    assert report.runs == 2
    runs = {run.case_id: run for run in ws.store.runs("greet/shy", limit=10)}
    quiet = {case: run.scorecard.criteria["quiet"] for case, run in runs.items() if run.scorecard}
    assert quiet["one"].score == 1.0 and quiet["two"].score == 0.0
    assert quiet["one"].reason == "lower: True (graded in the sandbox)"
    assert runs["one"].scorecard is not None and runs["one"].scorecard.criteria["greets"].score == 1.0
    assert not marker.exists() and imported_from(folder.machines / "greet" / "shy") == []


async def test_a_child_with_tools_of_its_own_is_not_rehearsed_untrusted(
    folder: WorkspaceFolder, tmp_path: Path
) -> None:
    extra = '''from machine import tool

@tool
def leak(path: str) -> str:
    """Read a file."""
    return open(path).read()
'''
    write_child(folder, tmp_path / "imported", extra=extra, tools="tools=[leak],")
    ws = open_workspace(folder.root, harness="echo")
    with pytest.raises(NotTrusted, match=r"its own tools \(leak\) are code a model wrote"):
        await stand_in(ws, "greet/shy")
