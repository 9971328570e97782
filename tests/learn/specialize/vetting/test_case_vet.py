"""Written cases vetted for real: project cases run in bubblewrap sandboxes from a real workspace whose
machines are copies of machines/, their tests failing before the reference fix and passing after it,
hidden tests the same when run alone; other cases need an input and what their checks compare with."""

from __future__ import annotations

import copy
import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from helpers.bwrap import bubblewrap_or_fail as bubblewrap_or_fail  # the fixture of needs_bubblewrap
from helpers.bwrap import needs_bubblewrap

from machine import Workspace, open_workspace
from machine.errors import BadInputError
from machine.learn.specialize import CaseShape, case_shape
from machine.learn.specialize.vetting import CaseVetting, vet_cases
from machine.sandboxes import LocalSandbox

REPO = Path(__file__).resolve().parents[4]
F = TypeVar("F", bound=Callable[..., Any])


def sandboxed(test: F) -> F:
    """Skips off CI where bubblewrap does not work, fails on CI; runs under anyio."""
    for mark in needs_bubblewrap():
        test = mark(test)
    return test


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    for setting in ("MACHINE_JUDGE_MODEL", "TINKER_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(setting, raising=False)
    root = tmp_path / "ws"
    for name in ("dev", "coder", "dates"):  # dev reads its tool steps from coder's module
        shutil.copytree(REPO / "machines" / name, root / "machines" / name)
    return open_workspace(root, data_dir=tmp_path / ".machine")


def dev_shape(ws: Workspace, hidden: bool = True) -> CaseShape:
    return case_shape(ws.load("dev"), ws.cases("dev"), hidden)


CALC = "def add(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a * b\n"
TEST_ADD = (
    "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
TEST_MULTIPLY = (
    "import unittest\n\nfrom calc import multiply\n\n\nclass MultiplyTest(unittest.TestCase):\n"
    "    def test_multiply(self):\n        self.assertEqual(multiply(2, 3), 6)\n"
)


def hidden_test(expression: str, expected: str) -> str:
    return (
        "import unittest\n\nfrom calc import add\n\n\nclass EdgeTest(unittest.TestCase):\n"
        f"    def test_edge(self):\n        self.assertEqual({expression}, {expected})\n"
    )


GOOD: dict[str, Any] = {
    "input": "The tests in test_calc.py fail. Please fix add in calc.py.",
    "kind": "fix",
    "files": {"calc.py": CALC, "test_calc.py": TEST_ADD},
    "tests": "python3 -m unittest",
    "reference": [{"path": "calc.py", "old": "return a - b", "new": "return a + b"}],
    "hidden": {"test_edge_negative.py": hidden_test("add(-2, -3)", "-5")},
}


def variant(**changes: Any) -> dict[str, Any]:
    case = copy.deepcopy(GOOD)
    case.update(changes)
    return case


def only(vetting: CaseVetting) -> tuple[bool, str]:
    assert len(vetting.verdicts) == 1
    verdict = vetting.verdicts[0]
    return verdict.kept, verdict.reason


# --- project cases, run in real sandboxes ---------------------------------------------------------------


@sandboxed
async def test_a_good_project_case_is_kept_and_its_hidden_tests_taken_out(ws: Workspace) -> None:
    vetting = await vet_cases(ws, dev_shape(ws), [copy.deepcopy(GOOD)], timeout_s=30)
    kept, reason = only(vetting)
    assert kept, reason
    assert reason.startswith(
        "tests fail before (1 of 1 failed), pass after the reference (1 of 1 passed); "
        "hidden test test_edge_negative.py fails alone before and passes after"
    )
    [case] = vetting.kept
    assert case["id"] == "the-tests-in-test-calc-py"
    assert "hidden" not in case  # never shown to the machine
    assert case["starting_tests"] == "fail" and case["kind"] == "fix"
    assert case["reference"] == GOOD["reference"] and case["files"] == GOOD["files"]
    assert vetting.hidden == {case["id"]: {"files": GOOD["hidden"]}}
    assert vetting.isolated is True and vetting.check_seconds > 0
    assert vetting.verdicts[0].seconds >= vetting.check_seconds
    assert list(ws.sandbox_dir.iterdir()) == []  # every sandbox removed


@sandboxed
async def test_a_case_whose_tests_pass_before_the_fix_is_discarded(ws: Workspace) -> None:
    case = variant(files={"calc.py": CALC, "test_calc.py": TEST_MULTIPLY})
    case["reference"] = [{"path": "calc.py", "old": "return a * b", "new": "return b * a"}]
    vetting = await vet_cases(ws, dev_shape(ws, hidden=False), [case], timeout_s=30)
    assert only(vetting) == (
        False,
        "its tests pass before the fix (1 of 1 passed): they must fail on the starting files",
    )
    assert vetting.kept == [] and vetting.hidden == {}


@sandboxed
async def test_a_case_whose_tests_fail_with_the_fix_is_discarded(ws: Workspace) -> None:
    case = variant(reference=[{"path": "calc.py", "old": "return a - b", "new": "return a * b"}])
    kept, reason = only(await vet_cases(ws, dev_shape(ws), [case], timeout_s=30))
    assert not kept
    assert reason.startswith("its tests fail with the reference applied (1 of 1 failed: FAIL: test_add"), (
        reason
    )
    assert "AssertionError: 6 != 5" in reason


@sandboxed
async def test_hidden_tests_that_pass_before_the_fix_are_discarded(ws: Workspace) -> None:
    case = variant(hidden={"test_edge_zero.py": hidden_test("add(0, 0)", "0")})
    assert only(await vet_cases(ws, dev_shape(ws), [case], timeout_s=30)) == (
        False,
        "hidden test test_edge_zero.py passes alone before the fix (1 of 1 passed): it must fail on the "
        "starting files",
    )


@sandboxed
async def test_hidden_tests_that_fail_with_the_fix_are_discarded(ws: Workspace) -> None:
    case = variant(
        hidden={
            "test_edge_negative.py": GOOD["hidden"]["test_edge_negative.py"],
            "test_edge_wrong.py": hidden_test("add(2, 2)", "5"),
        }
    )
    vetting = await vet_cases(ws, dev_shape(ws), [case], timeout_s=30)
    kept, reason = only(vetting)
    assert not kept and vetting.hidden == {}
    assert reason.startswith(
        "hidden test test_edge_wrong.py fails alone with the reference applied (1 of 1 failed"
    )


@sandboxed
async def test_a_test_that_hangs_is_cut_at_the_timeout_and_discards_the_case(ws: Workspace) -> None:
    hangs = TEST_ADD.replace("self.assertEqual", "import time; time.sleep(60); self.assertEqual")
    case = variant(files={"calc.py": CALC, "test_calc.py": hangs})
    kept, reason = only(await vet_cases(ws, dev_shape(ws, hidden=False), [case], timeout_s=1))
    assert not kept and reason == "its tests timed out on the starting files (after 1 s)"


STORM = """import subprocess
for _ in range(400):
    try:
        subprocess.Popen(["sleep", "5"])
    except OSError:
        break
"""
FILL = """try:
    with open("big", "wb") as out:
        for _ in range(2048):
            out.write(bytes(1024**2))
except OSError:
    pass
"""
HOARD = "HOARD = bytearray(3 * 1024**3)\n"


@pytest.mark.slow
@sandboxed
@pytest.mark.parametrize(
    ("hostile", "cap"),
    [(STORM, "processes"), (FILL, "disk"), (HOARD, "memory")],
    ids=["process-storm", "2-GB-written", "3-GB-allocated"],
)
async def test_a_case_whose_tests_reach_a_cap_is_discarded_and_nothing_reaches_the_host(
    ws: Workspace, hostile: str, cap: str
) -> None:
    case = variant(files={"calc.py": CALC, "test_calc.py": hostile + TEST_ADD})
    kept, reason = only(await vet_cases(ws, dev_shape(ws), [case], timeout_s=30))
    assert not kept
    assert reason.startswith(f"its commands reached the sandbox's cap on {cap}"), reason
    assert list(ws.sandbox_dir.iterdir()) == []  # nothing it wrote is left


@sandboxed
async def test_a_runner_that_runs_no_tests_is_not_a_pass(ws: Workspace) -> None:
    case = variant(files={"calc.py": CALC, "test_calc.py": "import calc\n"})
    kept, reason = only(await vet_cases(ws, dev_shape(ws, hidden=False), [case], timeout_s=30))
    assert not kept and reason.startswith("its tests fail with the reference applied (ran no tests"), reason


@sandboxed
async def test_a_batch_keeps_the_good_and_names_each_discard_in_order(ws: Workspace) -> None:
    passing = variant(input="Fix multiply please.", files={"calc.py": CALC, "test_calc.py": TEST_MULTIPLY})
    passing["reference"] = [{"path": "calc.py", "old": "return a * b", "new": "return b * a"}]
    twin = variant(input="  the TESTS in test_calc.py fail.   Please fix add in calc.py. ", id="again")
    vetting = await vet_cases(ws, dev_shape(ws), [copy.deepcopy(GOOD), passing, twin], timeout_s=30)
    assert [v.kept for v in vetting.verdicts] == [True, False, False]
    assert [v.id for v in vetting.verdicts] == [
        "the-tests-in-test-calc-py",
        "fix-multiply-please",
        "again",
    ]
    assert vetting.verdicts[2].reason == "repeats case 'the-tests-in-test-calc-py' (the same input and files)"
    assert set(vetting.hidden) == {"the-tests-in-test-calc-py"}


# --- refused before any sandbox ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        (
            {"reference": [{"path": "calc.py", "old": "return a + b", "new": "return a"}]},
            'the case has a reference edit 1 whose "old" text occurs 0 times in calc.py at that point; '
            "it must occur exactly once",
        ),
        (
            {"reference": [{"path": "calc.py", "old": "return a", "new": "return b"}]},
            'the case has a reference edit 1 whose "old" text occurs 2 times in calc.py at that point; '
            "it must occur exactly once",
        ),
        (
            {"reference": [{"path": "lib.py", "old": "x", "new": "y"}]},
            "the case has a reference edit 1 that edits lib.py, which is not a file at that point",
        ),
        (
            {"reference": []},
            'the case needs a "reference": a list of {path, old, new} edits (or {path, content}) that fix it',
        ),
        (
            {"tests": "python3 -m pytest"},
            "the case has the tests command 'python3 -m pytest': project cases are checked with "
            "'python3 -m unittest', as given",
        ),
        (
            {"files": {"../calc.py": CALC}},
            "the case names the file '../calc.py', which is not a relative path inside the project",
        ),
        (
            {"files": {"/etc/calc.py": CALC}},
            "the case names the file '/etc/calc.py', which is not a relative path inside the project",
        ),
        (
            {"hidden": {"test_calc.py": TEST_ADD}},
            "the case has the hidden file 'test_calc.py', which clashes with one of its project's files",
        ),
        (
            {"hidden": {"edge.py": TEST_ADD}},
            "the case has the hidden file 'edge.py': name each one test_<words>.py, at the top level",
        ),
        (
            {"hidden": {}},
            'the case needs "hidden": an object of held-back test files, '
            '{"test_edge_x.py": "<unittest file>"}',
        ),
        (
            {"starting_tests": "pass"},
            "the case says starting_tests is 'pass': a case's tests must start failing",
        ),
        (
            {"kind": None},
            "the case has no 'kind', which every case of this machine has (its checks compare with it)",
        ),
        (
            {"files": {"calc.py": "x" * 120_000}},
            "the case gives 'files' 120,015 characters, over the 100,000 a field may take",
        ),
    ],
)
async def test_cases_refused_with_a_sentence(ws: Workspace, changes: dict[str, Any], reason: str) -> None:
    case = variant(**changes)
    vetting = await vet_cases(ws, dev_shape(ws), [case])
    assert only(vetting) == (False, reason)
    assert vetting.check_seconds == 0 and vetting.isolated is None  # nothing was run


# --- cases that are not projects --------------------------------------------------------------------------


def test_the_shape_comes_from_the_parents_cases(ws: Workspace) -> None:
    dev = dev_shape(ws)
    assert dev.project and dev.hidden and dev.commands == ["python3 -m unittest"]
    assert dev.required == ["kind", "starting_tests"]
    dates = case_shape(ws.load("dates"), ws.cases("dates"), False)
    assert not dates.project and dates.required == ["answer"] and dates.types == {"answer": ["string"]}
    with pytest.raises(BadInputError, match="hidden tests need project cases"):
        case_shape(ws.load("dates"), ws.cases("dates"), True)


async def test_plain_cases_need_an_input_and_what_their_checks_compare_with(ws: Workspace) -> None:
    shape = case_shape(ws.load("dates"), ws.cases("dates"), False)
    existing = ws.cases("dates")
    written: list[Any] = [
        {"input": "What weekday was 2000-01-01?", "answer": "Saturday"},
        {"id": "no-input", "answer": "Monday"},
        {"input": "   ", "answer": "Monday"},
        {"input": "What weekday was 1999-12-31?"},
        {"input": "What weekday was 1999-12-30?", "answer": 4},
        {"input": existing[0].input.upper(), "answer": "x"},
        {"input": "what weekday was 2000-01-01?", "answer": "Saturday"},
        ["not", "an", "object"],
        {
            "input": "What weekday was 2000-01-02?",
            "answer": "Sunday",
            "hidden": {"test_x.py": "x"},
            "id": "h",
        },
    ]
    vetting = await vet_cases(ws, shape, written, existing=existing)
    reasons = [(v.id, v.kept, v.reason) for v in vetting.verdicts]
    assert reasons == [
        ("what-weekday-was-2000-01-01", True, "has an input and answer"),
        ("no-input", False, 'the case has no "input": every case needs the request as a non-empty string'),
        ("case", False, 'the case has no "input": every case needs the request as a non-empty string'),
        (
            "what-weekday-was-1999-12-31",
            False,
            "the case has no 'answer', which every case of this machine has (its checks compare with it)",
        ),
        (
            "what-weekday-was-1999-12-30",
            False,
            "the case gives 'answer' a number, where this machine's cases give it a string",
        ),
        (reasons[5][0], False, f"repeats case {existing[0].id!r} (the same input and files)"),
        (
            "what-weekday-was-2000-01-01-2",
            False,
            "repeats case 'what-weekday-was-2000-01-01' (the same input and files)",
        ),
        ("case-8", False, "the case is a JSON list, not an object"),
        (
            "h",
            True,
            "has an input and answer; its hidden tests were dropped: this machine is not graded with them",
        ),
    ]
    assert vetting.kept == [
        {"id": "what-weekday-was-2000-01-01", **written[0]},
        {"id": "h", "input": "What weekday was 2000-01-02?", "answer": "Sunday"},
    ]
    assert vetting.hidden == {}


async def test_ids_are_unique_against_existing_cases(ws: Workspace) -> None:
    shape = case_shape(ws.load("dates"), ws.cases("dates"), False)
    existing = ws.cases("dates")
    taken = existing[0].id
    vetting = await vet_cases(
        ws, shape, [{"id": taken, "input": "A new question?", "answer": "x"}], existing=existing
    )
    assert vetting.kept[0]["id"] == f"{taken}-2"


class Unisolated:
    """The workspace's sandboxes as they are where bubblewrap does not work: commands not isolated."""

    def for_scratch(self, parent: Path, run_id: str, files: Any) -> LocalSandbox:
        return LocalSandbox.create(parent, run_id, files, isolate=False, scratch=True)

    def open(self, folder: Path, *, hide: Any = ()) -> LocalSandbox:
        raise AssertionError("case vetting makes fresh sandboxes only")


async def test_no_authors_code_runs_where_the_sandbox_is_not_isolated(ws: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    escaping = variant(
        files={"calc.py": CALC, "test_calc.py": f"open({str(marker)!r}, 'w').write('x')\n" + TEST_ADD}
    )
    ws.adapters = dataclasses.replace(ws.adapters, sandboxes=Unisolated)
    vetting = await vet_cases(ws, dev_shape(ws), [escaping])
    [verdict] = vetting.verdicts
    assert not verdict.kept and "not isolated" in verdict.reason and "bubblewrap" in verdict.reason
    assert not marker.exists()  # the author's test never ran


FIXED_CALC = CALC.replace("return a - b", "return a + b")
QUESTION: dict[str, Any] = {
    "input": "What does add in calc.py do with negative numbers?",
    "kind": "question",
    "files": {"calc.py": FIXED_CALC, "test_calc.py": TEST_ADD},
    "tests": "python3 -m unittest",
    "starting_tests": "pass",
}


def test_project_cases_may_come_without_a_fix_where_the_parents_do_and_no_hidden_tests_are_asked(
    ws: Workspace,
) -> None:
    assert dev_shape(ws, hidden=False).answers is True  # dev has questions, plans and reports
    assert dev_shape(ws, hidden=True).answers is False  # hidden tests need a fix to pass with


@sandboxed
async def test_a_case_to_answer_is_kept_when_its_tests_start_as_it_says(ws: Workspace) -> None:
    kept, reason = only(await vet_cases(ws, dev_shape(ws, hidden=False), [copy.deepcopy(QUESTION)]))
    assert kept, reason
    assert reason == "a case to answer: its tests start passing, as it says (1 of 1 passed)"
    failing = {**copy.deepcopy(QUESTION), "files": {"calc.py": CALC, "test_calc.py": TEST_ADD}}
    kept, reason = only(await vet_cases(ws, dev_shape(ws, hidden=False), [failing]))
    assert not kept and reason.startswith(
        "it says its tests start passing, and they start failing (1 of 1 failed"
    )


async def test_a_case_to_answer_must_say_how_its_tests_start_and_hidden_tests_need_a_fix(
    ws: Workspace,
) -> None:
    unsaid = {k: v for k, v in copy.deepcopy(QUESTION).items() if k != "starting_tests"}
    kept, reason = only(await vet_cases(ws, dev_shape(ws, hidden=False), [unsaid]))
    assert not kept and '"starting_tests": "pass" or "fail"' in reason
    kept, reason = only(await vet_cases(ws, dev_shape(ws, hidden=True), [copy.deepcopy(QUESTION)]))
    assert (
        not kept and "a case's tests must start failing" in reason
    )  # with hidden tests, every case has a fix
