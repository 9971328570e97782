"""dev: verified read from the real tool results, its projects' tests run in the sandbox (failing before the
reference fix, passing after it), and its scripted suite under real bubblewrap."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers.env import on_ci

from machine import Case, Message, Run, ToolCall, ToolContext, Workspace, run_suite
from machine.clients.scripted import ScriptedHarness
from machine.sandboxes import LocalSandbox, bubblewrap
from machine.sandboxes.tools import edit_file

REPO = Path(__file__).resolve().parents[2]
DEV = REPO / "machines" / "dev"
KINDS = {"fix", "feature", "question", "plan", "run", "unclear"}

ON_CI = on_ci()
needs_bubblewrap = pytest.mark.skipif(
    bubblewrap() is None and not ON_CI,
    reason="bubblewrap (bwrap) is missing or cannot make namespaces here; `make test` installs it",
)


def require_bubblewrap() -> None:
    if bubblewrap() is None:  # reached only under CI=true, where the projects must be run for real
        pytest.fail("CI=true and bubblewrap does not work here: dev's projects must be tested in the sandbox")


@pytest.fixture
def dev(ws: Workspace) -> ModuleType:
    return sys.modules[ws.load("dev").evaluator.graders["verified"].fn.__module__]  # type: ignore[attr-defined]


def all_cases(ws: Workspace) -> list[Case]:
    return ws.cases("dev") + ws.cases("dev", "holdout.json")


def result(code: int | None, stdout: str = "", stderr: str = "") -> str:
    head = (
        "timed out after 60 s: the command and every process it started were killed"
        if code is None
        else f"exit code: {code}"
    )
    return f"{head}\n--- stdout ---\n{stdout or '(empty)'}\n--- stderr ---\n{stderr or '(empty)'}"


def make_run(calls: list[tuple[str, dict[str, Any], str, bool]], kind: str | None = "fix") -> Run:
    trajectory = [Message(role="user", content="Fix calc.py.")]
    for index, (name, arguments, text, is_error) in enumerate(calls):
        call = ToolCall(id=f"c{index}", name=name, arguments=arguments)
        trajectory.append(Message(role="assistant", tool_calls=[call]))
        trajectory.append(
            Message(role="tool", tool_call_id=call.id, name=name, content=text, is_error=is_error)
        )
    trajectory.append(Message(role="assistant", content="Done."))
    case = {"id": "c", "input": "Fix calc.py.", "files": {"calc.py": "x = 1\n"}}
    if kind is not None:
        case["kind"] = kind
    return Run(
        machine="dev",
        model="echo",
        harness="echo",
        input="Fix calc.py.",
        output="Done.",
        trajectory=trajectory,
        case=case,
    )


EDIT = (
    "edit_file",
    {"path": "calc.py", "old": "x = 1", "new": "x = 2"},
    "replaced 1 occurrence in calc.py at line 1",
    False,
)
BAD_EDIT = (
    "edit_file",
    {"path": "calc.py", "old": "nope", "new": "x"},
    "old was not found in calc.py; nothing was changed",
    True,
)
WRITE = (
    "write_file",
    {"path": "notes.md", "content": "# notes\n"},
    "wrote 8 bytes to notes.md (new file)",
    False,
)
READ = ("read_file", {"path": "calc.py"}, "     1\tx = 1", False)


def cmd(command: str, code: int | None = 0) -> tuple[str, dict[str, Any], str, bool]:
    return ("run", {"command": command}, result(code), False)


TESTS = "python3 -m unittest"


# --- verified ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 -m unittest", True),
        ("python3 calc.py", True),
        ("cd src && python3 -m unittest -v", True),
        ("PYTHONPATH=. python3 -m unittest", True),
        ("ls && python3 -m unittest", True),
        ("sh run_tests.sh", True),
        ("echo ok", False),
        ("cat calc.py", False),
        ("ls -la && pwd", False),
        ("true", False),
        ("cat calc.py | head -5; echo done", False),
        ("", False),
    ],
)
def test_verifies(dev: ModuleType, command: str, expected: bool) -> None:
    assert dev.verifies(command) is expected


async def verified(ws: Workspace, run: Run) -> tuple[float | None, str]:
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    found = graded.scorecard.criteria["verified"]
    return found.score, found.reason


@pytest.mark.parametrize(
    ("calls", "kind", "score", "reason"),
    [
        (
            [READ, EDIT, cmd(TESTS)],
            "fix",
            1.0,
            "`python3 -m unittest` exited 0 after the last change (to calc.py)",
        ),
        (
            [EDIT, cmd(TESTS, 1), EDIT, cmd(TESTS)],
            "fix",
            1.0,
            "`python3 -m unittest` exited 0 after the last change (to calc.py)",
        ),
        (
            [EDIT, cmd(TESTS, 1)],
            "fix",
            0.0,
            "after the last change (to calc.py), `python3 -m unittest` exited 1",
        ),
        (
            [EDIT, cmd(TESTS, None)],
            "fix",
            0.0,
            "after the last change (to calc.py), `python3 -m unittest` timed out",
        ),
        ([EDIT, cmd(TESTS), WRITE], "feature", 0.0, "changed notes.md but ran no command afterwards"),
        (
            [EDIT, cmd("echo ok"), cmd("cat calc.py")],
            "fix",
            0.0,
            "after the last change (to calc.py) it ran only commands that check nothing",
        ),
        ([EDIT], "fix", 0.0, "changed calc.py but ran no command afterwards"),
        ([cmd(TESTS), EDIT], "fix", 0.0, "changed calc.py but ran no command afterwards"),
        ([BAD_EDIT, cmd(TESTS)], "fix", 0.0, "the request asked for a change (fix), and no file was changed"),
        ([READ], "feature", 0.0, "the request asked for a change (feature), and no file was changed"),
        ([READ], "question", 1.0, "changed no files, so there was nothing to verify"),
        ([cmd(TESTS, 1)], "run", 1.0, "changed no files, so there was nothing to verify"),
        ([], "unclear", 1.0, "changed no files, so there was nothing to verify"),
        (
            [READ],
            None,
            1.0,
            "changed no files, so there was nothing to verify",
        ),  # an interactive run: no case
        (
            [EDIT, cmd(TESTS)],
            "question",
            1.0,
            "`python3 -m unittest` exited 0 after the last change (to calc.py)",
        ),
    ],
)
async def test_verified(ws: Workspace, calls: list[Any], kind: str | None, score: float, reason: str) -> None:
    assert await verified(ws, make_run(calls, kind)) == (score, reason)


@pytest.mark.parametrize(
    "stderr",
    [
        "\n" + "-" * 70 + "\nRan 0 tests in 0.000s\n\nOK",  # Python 3.11 exits 0 here
        "\n" + "-" * 70 + "\nRan 0 tests in 0.000s\n\nNO TESTS RAN",
    ],
)
async def test_a_test_run_that_found_no_tests_does_not_verify(ws: Workspace, stderr: str) -> None:
    empty = ("run", {"command": TESTS}, result(0, stderr=stderr), False)
    assert await verified(ws, make_run([EDIT, empty])) == (
        0.0,
        "after the last change (to calc.py), `python3 -m unittest` exited 0 but ran no tests",
    )
    pytest_empty = (
        "run",
        {"command": "pytest"},
        result(0, stdout="collected 0 items\n\nno tests ran in 0.01s"),
        False,
    )
    assert (await verified(ws, make_run([EDIT, pytest_empty])))[0] == 0.0
    assert (await verified(ws, make_run([EDIT, empty, cmd(TESTS)])))[0] == 1.0


async def test_a_refused_run_does_not_verify(ws: Workspace) -> None:
    refused = ("run", {"command": TESTS}, "run is refused here: this sandbox is not isolated", True)
    assert await verified(ws, make_run([EDIT, refused])) == (
        0.0,
        "after the last change (to calc.py), `python3 -m unittest` was refused",
    )


# --- the machine and its cases ----------------------------------------------------------------------------


def test_rubric_and_tools(ws: Workspace) -> None:
    machine = ws.load("dev")
    assert list(machine.rubric) == ["verified", "did_what_was_asked", "stayed_on_task", "acts_on_request"]
    kinds = {n: g.kind for n, g in machine.evaluator.graders.items()}
    assert kinds == {
        "verified": "check",
        "did_what_was_asked": "judge",
        "stayed_on_task": "judge",
        "acts_on_request": "judge",
    }
    assert [t.name for t in machine.tools] == [
        "list_files",
        "search_files",
        "read_file",
        "write_file",
        "edit_file",
        "run",
    ]
    assert machine.parent is None
    assert "'test'" in machine.rubric["acts_on_request"].description


def test_cases_cover_every_kind(ws: Workspace) -> None:
    cases, holdout = ws.cases("dev"), ws.cases("dev", "holdout.json")
    assert len(cases) >= 8 and len(holdout) >= 4
    assert {c.id for c in cases}.isdisjoint(c.id for c in holdout)
    seen = set()
    for case in cases + holdout:
        data = case.data()
        seen.add(data["kind"])
        assert data["kind"] in KINDS, case.id
        assert case.files and any(name.startswith("test_") for name in case.files), case.id
        assert data["tests"] == TESTS
        asks_change = data["kind"] in ("fix", "feature")
        assert bool(data.get("reference")) is asks_change, case.id
        if asks_change:
            assert data["starting_tests"] == "fail", case.id
    assert seen == KINDS
    assert any(c.input == "test" for c in cases)  # the one-word, unclear request


def apply_reference(files: dict[str, str], reference: list[dict[str, str]]) -> dict[str, str]:
    changed = dict(files)
    for edit in reference:
        assert changed[edit["path"]].count(edit["old"]) == 1
        changed[edit["path"]] = changed[edit["path"]].replace(edit["old"], edit["new"])
    return changed


@needs_bubblewrap
@pytest.mark.parametrize("file", ["cases.json", "holdout.json"])
async def test_projects_fail_before_and_pass_after_the_reference_fix(
    ws: Workspace, tmp_path: Path, file: str
) -> None:
    """Each project's tests run with `python3 -m unittest` in an isolated sandbox, as the machine's own
    runs do: they are in the state the case says, and a fix or feature's reference edits, made with the
    real edit_file tool, make them pass."""
    require_bubblewrap()
    for case in ws.cases("dev", file):
        data = case.data()
        box = LocalSandbox.create(tmp_path / "sandboxes", f"{case.id}-{file}", case.files)
        assert box.isolated
        # Without bytecode files: an edit in the same second that keeps the file's size (a - b -> a + b)
        # would otherwise leave Python reading the stale calc.pyc of this first run.
        before = await box.exec(f"PYTHONDONTWRITEBYTECODE=1 {data['tests']}", timeout_s=60)
        ran = re.search(r"Ran (\d+) tests?", before.stderr)
        assert ran and int(ran.group(1)) >= 1, (case.id, before.stderr)
        expected = data["starting_tests"]
        assert ("pass" if before.exit_code == 0 else "fail") == expected, (case.id, before.stderr)
        if expected == "fail":
            assert "FAILED" in before.stderr, case.id
        if data.get("reference"):
            ctx = ToolContext(run_id=case.id, sandbox=box)
            for edit in data["reference"]:
                await edit_file.invoke(edit, ctx)
            after = await box.exec(data["tests"], timeout_s=60)
            assert after.exit_code == 0, (case.id, after.stderr)
            assert after.stderr.rstrip().endswith("OK"), case.id
            on_disk = {name: box.resolve(name).read_text(encoding="utf-8") for name in case.files}
            assert on_disk == apply_reference(case.files, data["reference"])
        box.remove()


def test_the_script_solves_the_fixes_with_the_reference_edits(ws: Workspace) -> None:
    rules = json.loads((DEV / "script.json").read_text(encoding="utf-8"))["rules"]
    for case in all_cases(ws):
        matching = [r for r in rules if re.search(r["match"], case.input)]
        assert len(matching) == 1, case.id
        edits = [
            c["arguments"]
            for t in matching[0]["turns"]
            for c in t.get("tool_calls", [])
            if c["name"] == "edit_file"
        ]
        assert edits == case.data().get("reference", []), case.id


@needs_bubblewrap
async def test_scripted_suite_under_bubblewrap(ws: Workspace) -> None:
    require_bubblewrap()
    machine = ws.load("dev")
    cases = all_cases(ws)
    report = await run_suite(ws, machine, cases, harness=ScriptedHarness(DEV / "script.json"))
    assert report.errors == 0
    stored = {run.case_id: run for run in ws.store.runs("dev", limit=100)}
    assert set(stored) == {c.id for c in cases}
    for case in cases:
        run = stored[case.id]
        assert run.scorecard is not None
        result = run.scorecard.criteria["verified"]
        assert result.score == 1.0, (case.id, result.reason)
        for judged in ("did_what_was_asked", "stayed_on_task", "acts_on_request"):
            assert run.scorecard.criteria[judged].score is None
        assert all(not m.is_error for m in run.tool_results), case.id
        changed = [c for c in run.tool_calls if c.name in ("write_file", "edit_file")]
        if case.data()["kind"] in ("fix", "feature"):
            assert changed and result.reason.startswith("`python3 -m unittest` exited 0")
            assert run.tool_results[-1].content.startswith("exit code: 0\n")
        else:
            assert not changed, case.id
    report_run = stored["run-and-report"].tool_results[0].content
    assert report_run.startswith("exit code: 1\n")
    assert "test_sold_out_items_are_not_in_stock" in report_run  # what the scripted reply reports
    assert stored["one-word"].tool_calls == []
    assert not list((ws.data_dir / "sandboxes").glob("*"))
