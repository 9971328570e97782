"""``machine specialize dev`` through the real console script, on a copy of this repository's ``dev`` (and
``coder``, whose steps it reads). One script plays both sides: the author's rules come first (each of its
briefs says what it asks for), then dev's own rules, which make the sample runs. The author writes a
child graded with hidden tests and five project cases, of which only two hold up when their tests are
run in the sandbox: what is kept, what is discarded and why is known exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.bwrap import bubblewrap_or_fail as bubblewrap_or_fail  # the fixture of needs_bubblewrap
from helpers.bwrap import needs_bubblewrap

if TYPE_CHECKING:
    from conftest import Command

REPO = Path(__file__).resolve().parents[2]
pytestmark = [m for m in needs_bubblewrap() if m.name != "anyio"]  # a plain test, not async

CHILD = '''\
"""dev/edge: fixes that hold on the edge cases too."""

from machine import define_child, define_evaluator, instructions_from
from machine.sandboxes import hidden_tests

from ..machine import machine as parent
from .rubric import rubric

machine = define_child(
    parent,
    name="dev/edge",
    intent="Fix bugs so that the edge cases pass too, not only the tests in view.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"edge_cases": hidden_tests(__file__)}),
)
'''
RUBRIC = """\
from machine import define_rubric

rubric = define_rubric(
    {"edge_cases": {"description": "Held-back edge-case tests pass on the files it left.", "weight": 1}}
)
"""
TEST = (
    "import unittest\n\nfrom calc import {name}\n\n\nclass T(unittest.TestCase):\n"
    "    def test_it(self):\n        self.assertEqual({call}, {want})\n"
)


def project(
    name: str, body: str, fixed: str, seen: tuple[str, str], hidden: tuple[str, str]
) -> dict[str, Any]:
    """A case: calc.py defines ``name`` as ``body``; ``fixed`` is the reference; the tests and the hidden
    test each assert a (call, result) pair."""
    return {
        "id": f"{name}-case",
        "input": f"The tests fail. Please fix {name} in calc.py.",
        "kind": "fix",
        "files": {
            "calc.py": f"def {name}(x):\n    return {body}\n",
            "test_calc.py": TEST.format(name=name, call=seen[0], want=seen[1]),
        },
        "tests": "python3 -m unittest",
        "reference": [{"path": "calc.py", "old": f"return {body}", "new": f"return {fixed}"}],
        "hidden": {"test_edge_calc.py": TEST.format(name=name, call=hidden[0], want=hidden[1])},
    }


CASES = [
    project("double", "x * 3", "x * 2", ("double(2)", "4"), ("double(-3)", "-6")),
    project("halve", "x / 3", "x / 2", ("halve(4)", "2"), ("halve(-8)", "-4")),
    project("square", "x * x", "x ** 2", ("square(3)", "9"), ("square(-2)", "4")),  # passes before the fix
    project("negate", "x", "x - 1", ("negate(2)", "-2"), ("negate(0)", "0")),  # still fails with the fix
    project("inc", "x + 2", "x + 1", ("inc(1)", "2"), ("inc(-2) > -9", "True")),  # hidden passes before
]


def script() -> dict[str, Any]:
    child = "\n".join(
        f'<file path="{path}">\n{text}</file>'
        for path, text in (
            ("machine.py", CHILD),
            ("rubric.py", RUBRIC),
            ("instructions.md", "Test the edges.\n"),
        )
    )
    cases = "".join(f"<case>{json.dumps(case)}</case>\n" for case in CASES)
    author = [
        {"match": "Write the child machine 'dev/edge'", "turns": [{"text": "The child.\n" + child}]},
        {"match": r"List \d+ different situations", "turns": [{"text": "<topic>arithmetic slips</topic>"}]},
        {"match": r"Write \d+ cases for dev/edge", "turns": [{"text": cases}]},
    ]
    dev = json.loads((REPO / "machines" / "dev" / "script.json").read_text(encoding="utf-8"))["rules"]
    return {"rules": author + dev}


def test_specialize_dev_keeps_only_cases_whose_tests_hold_and_writes_their_hidden_tests(
    tmp_path: Path, machine_cmd: Command
) -> None:
    root = tmp_path / "ws"
    for name in ("dev", "coder"):
        shutil.copytree(REPO / "machines" / name, root / "machines" / name)
    (tmp_path / "script.json").write_text(json.dumps(script()), encoding="utf-8")
    done = machine_cmd(
        "specialize", "dev", "--focus", "edge cases of small helpers", "--slug", "edge", "--cases", "2",
        "--harness", "scripted", "--script", tmp_path / "script.json", "--json", "--workspace", root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["accepted"] and report["stopped"] is None
    assert [a["outcome"] for a in report["attempts"]] == ["accepted"]
    assert len(report["samples"]) == 3  # dev had no stored runs: three of its cases were run first
    verdicts = {v["id"]: v for v in report["cases"]}
    assert [i for i, v in verdicts.items() if v["kept"]] == ["double-case", "halve-case"]
    assert "pass" in verdicts["square-case"]["reason"] and "before" in verdicts["square-case"]["reason"]
    assert "with the reference" in verdicts["negate-case"]["reason"]
    assert "test_edge_calc.py" in verdicts["inc-case"]["reason"]
    assert (report["kept_cases"], report["holdout_cases"], report["hidden_cases"]) == (1, 1, 2)
    folder = root / "machines" / "dev" / "edge"
    kept = json.loads((folder / "cases.json").read_text()) + json.loads((folder / "holdout.json").read_text())
    assert sorted(c["id"] for c in kept) == ["double-case", "halve-case"]
    assert all("hidden" not in c for c in kept)  # never shown to the machine
    hidden = json.loads((folder / "hidden.json").read_text())
    assert set(hidden) == {"double-case", "halve-case"}
    assert set(hidden["double-case"]["files"]) == {"test_edge_calc.py"}

    shown = machine_cmd("show", "dev/edge", "--workspace", root)
    assert shown.returncode == 0, shown.stderr
    assert "edge_cases" in shown.stdout and "verified" in shown.stdout  # its own criterion and dev's
