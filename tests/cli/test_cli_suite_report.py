"""The suite's report in a terminal: past 20 cases it lists the first 20 that need attention and counts the
rest; ``--all-cases`` lists every case and ``--json`` holds every case; each criterion has its line."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from click.testing import Result

from machine.cli._suite_report import needs_attention, print_cases
from machine.measure import CaseResult

if TYPE_CHECKING:
    from conftest import WorkspaceFolder

Invoke = Callable[..., Result]

SORTER_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"says_ok": "The reply says ok."})


def _ok(run):
    if "odd" in run.output:
        raise ValueError("cannot tell")
    return "ok" in run.output


machine = define_machine(
    name="sorter",
    intent="Repeat the input.",
    instructions="Repeat the input.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"says_ok": check("says_ok", _ok)}),
)
"""


def kind(i: int) -> str:
    """Case i's input under the echo harness: every even case passes, five of the odd ones are UNSCORED
    (the check raises), the rest fail."""
    return "ok" if i % 2 == 0 else "odd" if i % 10 == 5 else "no"


@pytest.fixture
def sorter(ws: WorkspaceFolder) -> WorkspaceFolder:
    """60 cases: 30 pass, 24 fail and 6 are UNSCORED, the 30 that need attention at the odd places."""
    ws.write("machines/sorter/machine.py", SORTER_PY)
    ws.write_json(
        "machines/sorter/cases.json", [{"id": f"c{i:02}", "input": f"{kind(i)} {i}"} for i in range(60)]
    )
    return ws


def suite(invoke: Invoke, ws: WorkspaceFolder, *args: str) -> str:
    result = invoke("suite", "sorter", "--harness", "echo", *args, "--workspace", ws.root)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def case_rows(out: str) -> list[str]:
    """The case ids of the case table's rows."""
    lines = out.splitlines()
    assert lines[0].split() == ["case", "mean", "pass^N", "notes"]
    return [line.split()[0] for line in lines[1 : lines.index("")] if not line.startswith("…")]


def test_a_large_suite_lists_the_first_cases_that_need_attention_and_counts_the_rest(
    sorter: WorkspaceFolder, invoke: Invoke
) -> None:
    out = suite(invoke, sorter)
    assert case_rows(out) == [f"c{i:02}" for i in range(1, 40, 2)]  # the first 20 in the suite's order
    lines = out.splitlines()
    assert lines[1].split() == ["c01", "0.00", "0/1"]  # a fail
    assert lines[3].split() == ["c05", "UNSCORED", "0/1", "1", "unscored", "grade"]
    assert lines[21] == (
        "… and 10 more cases that need attention and 30 cases that passed every trial, not shown "
        "(--all-cases lists every case)"
    )
    criteria = lines.index("criterion  mean  pass  runs  unscored")
    assert lines[criteria + 1].split() == ["says_ok", "0.56", "56%", "54", "6"]  # 30 of 54 scored
    assert lines[criteria + 2].startswith("sorter: 60 runs, mean 0.56, pass rate 56%, 6 unscored grades")
    assert "says_ok: its check raised ValueError" in out


def test_all_cases_and_json_list_every_case(sorter: WorkspaceFolder, invoke: Invoke) -> None:
    every = [f"c{i:02}" for i in range(60)]
    out = suite(invoke, sorter, "--all-cases")
    assert case_rows(out) == every
    assert "not shown" not in out and "says_ok" in out
    report = json.loads(suite(invoke, sorter, "--json"))
    assert [c["case_id"] for c in report["cases"]] == every
    assert [c["passes"] for c in report["cases"]] == [int(kind(i) == "ok") for i in range(60)]


def test_a_small_suite_lists_every_case(sorter: WorkspaceFolder, invoke: Invoke) -> None:
    sorter.write_json("few.json", [{"id": f"c{i}", "input": f"{kind(i)} {i}"} for i in range(20)])
    out = suite(invoke, sorter, "--cases", str(sorter.root / "few.json"))
    assert case_rows(out) == [f"c{i}" for i in range(20)]
    assert "not shown" not in out


def case(
    case_id: str, *, trials: int = 1, passes: int = 1, unscored_grades: int = 0, errors: int = 0
) -> CaseResult:
    return CaseResult(
        case_id=case_id, trials=trials, passes=passes, unscored_grades=unscored_grades, errors=errors
    )


def test_what_needs_attention() -> None:
    assert not needs_attention(case("passed", trials=3, passes=3))
    assert needs_attention(case("one fail", trials=3, passes=2))
    assert needs_attention(case("failed run", trials=1, passes=0, errors=1))
    assert needs_attention(case("passed, a grade unscored", unscored_grades=1))  # a pass whatever it scores
    assert needs_attention(case("not run", trials=0, passes=0))


def test_every_flagged_case_shown_when_few_and_a_suite_that_passed_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = [case(f"p{i}") for i in range(30)]
    cases[7] = case("late", trials=0, passes=0)
    print_cases(cases)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split() for line in lines[1:2]] == [["late", "-", "0/0", "not", "run"]]
    assert lines[2] == "… and 29 cases that passed every trial, not shown (--all-cases lists every case)"
    print_cases([case(f"p{i}") for i in range(30)])
    assert capsys.readouterr().out == "all 30 cases passed every trial (--all-cases lists them)\n"
    print_cases([case(f"f{i}", passes=0) for i in range(21)])
    assert capsys.readouterr().out.splitlines()[-1] == (
        "… and 1 more case that needs attention, not shown (--all-cases lists every case)"
    )
