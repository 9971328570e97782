"""Family suites: a parent with two children on disk, each run on its own cases, and the criteria the
parent declares put together across all of them (figures checked by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from machine import Workspace, open_workspace
from machine.clients.scripted import Script, ScriptedHarness
from machine.measure import run_family

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric(
    {
        "greets": {"description": "Says hello.", "weight": 2},
        "brief": "At most 20 characters.",
        "warm": "Sounds friendly.",
    }
)
"""

PARENT_PY = """\
from machine import check, define_evaluator, define_machine, judge

from .rubric import rubric

machine = define_machine(
    name="greet",
    intent="Greet people.",
    instructions="Say hello briefly.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "greets": check("says_hello", lambda run: "hello" in run.output.lower()),
            "brief": check("at_most_20", lambda run: 1.0 if len(run.output) <= 20 else 0.5),
            "warm": judge(),
        },
    ),
)
"""

CHILD_PY = """\
from machine import check, define_child, define_evaluator, define_rubric

from ..machine import machine as parent

rubric = define_rubric({{"{criterion}": "{description}"}})

machine = define_child(
    parent,
    name="greet/{name}",
    intent="Greet people, {name}.",
    instructions="Be {name}.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {{"{criterion}": check("{criterion}", {check})}}),
)
"""

GRANDCHILD_PY = """\
from machine import define_child

from ..machine import machine as parent

machine = define_child(parent, name="greet/loud/quiet", intent="Whisper.", instructions="Whisper.")
"""

SCRIPT = {
    "rules": [
        {"match": "ann", "turns": [{"text": "hello ann"}]},  # greets 1, brief 1
        {"match": "bob", "turns": [{"text": "hello bob, what a long and lovely day it is"}]},  # 1, 0.5
        {"match": "dan", "turns": [{"text": "HELLO DAN"}]},  # 1, 1; capitals 1
        {"match": "fay", "turns": [{"text": "go away"}]},  # 0, 1; capitals 0
        {"match": "eve", "turns": [{"text": "hello eve, lovely to see you"}]},  # 1, 0.5; kind 1
    ]
}


def write(root: Path, relative: str, text: str) -> None:
    path = root / "machines" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def cases(*names: str) -> str:
    return json.dumps([{"id": n, "input": f"greet {n}"} for n in names])


def make_family(root: Path) -> Workspace:
    write(root, "greet/rubric.py", RUBRIC_PY)
    write(root, "greet/machine.py", PARENT_PY)
    write(root, "greet/cases.json", cases("ann", "bob"))
    loud = {
        "name": "loud",
        "criterion": "capitals",
        "description": "In capitals.",
        "check": "lambda r: r.output.isupper()",
    }
    kind = {
        "name": "kind",
        "criterion": "kind",
        "description": "Kind.",
        "check": "lambda r: 'lovely' in r.output",
    }
    write(root, "greet/loud/machine.py", CHILD_PY.format(**loud))
    write(root, "greet/loud/cases.json", cases("dan", "fay"))
    write(root, "greet/kind/machine.py", CHILD_PY.format(**kind))
    write(root, "greet/kind/cases.json", cases("eve"))
    write(root, "greet/loud/quiet/machine.py", GRANDCHILD_PY)  # no cases.json: skipped
    write(
        root,
        "greeter/machine.py",
        PARENT_PY.replace('name="greet"', 'name="greeter"').replace(".rubric", "..greet.rubric"),
    )
    return open_workspace(root, harness=ScriptedHarness(Script.model_validate(SCRIPT)))


def test_family_members_are_the_root_and_its_descendants(tmp_path: Path) -> None:
    ws = make_family(tmp_path)
    assert ws.family("greet") == ["greet", "greet/kind", "greet/loud", "greet/loud/quiet"]
    assert ws.family("greet/loud") == ["greet/loud", "greet/loud/quiet"]


async def test_family_suite_reports_each_machine_and_the_inherited_criteria(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MACHINE_JUDGE_MODEL", raising=False)
    ws = make_family(tmp_path)
    report = await run_family(ws, "greet", trials=2)
    assert [r.machine for r in report.machines] == ["greet", "greet/kind", "greet/loud"]
    assert [s.machine for s in report.skipped] == ["greet/loud/quiet"]
    assert "cases.json" in report.skipped[0].reason
    by_name = {r.machine: r for r in report.machines}
    assert [c.case_id for c in by_name["greet/loud"].cases] == ["dan", "fay"]
    assert by_name["greet/loud"].criteria["capitals"].mean == pytest.approx(0.5)
    assert by_name["greet/kind"].criteria["kind"].mean == pytest.approx(1.0)
    assert {r.runs for r in report.machines} == {2, 4}

    assert list(report.inherited) == ["greets", "brief", "warm"]  # the root's criteria only
    greets, brief, warm = (report.inherited[c] for c in ("greets", "brief", "warm"))
    # greets: ann 1, bob 1 (greet); dan 1, fay 0 (loud); eve 1 (kind); two trials each: 8 / 10.
    assert (greets.runs, greets.mean, greets.pass_rate, greets.unscored) == (10, pytest.approx(0.8), 0.8, 0)
    # brief: ann 1, bob 0.5; dan 1, fay 1; eve 0.5: (2 + 1 + 2 + 2 + 1) / 10; passes ann, dan, fay: 6 / 10.
    assert (brief.runs, brief.mean, brief.pass_rate) == (10, pytest.approx(0.8), pytest.approx(0.6))
    # warm is a judge with no model to call here: UNSCORED every time, out of the mean.
    assert (warm.runs, warm.mean, warm.unscored) == (0, None, 10)

    data = report.model_dump(mode="json", by_alias=True)
    assert set(data) >= {"machines", "inherited"}
    assert data["inherited"]["greets"] == {
        "mean": pytest.approx(0.8),
        "pass_rate": 0.8,
        "runs": 10,
        "unscored": 0,
        "raised": {},
    }
    assert [m["machine"] for m in data["machines"]] == ["greet", "greet/kind", "greet/loud"]
    assert data["skipped"][0]["machine"] == "greet/loud/quiet"
