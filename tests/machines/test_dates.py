"""dates: reading the day a reply names, its two checks, its scripted suite, and the optimize step the
tour shows (on a copy of its folder, never the repository's own)."""

from __future__ import annotations

import re
import shutil
import sys
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest

from machine import Run, Workspace, open_workspace, run_suite
from machine.clients.scripted import ScriptedHarness, load_script
from machine.grade import CheckGrader
from machine.learn import optimize
from machine.versions import commit

REPO = Path(__file__).resolve().parents[2]
DATES = REPO / "machines" / "dates"


@pytest.fixture
def copy(tmp_path: Path) -> Workspace:
    """A workspace of its own holding a copy of dates' folder, for what writes the machine's files."""
    shutil.copytree(DATES, tmp_path / "copy" / "machines" / "dates")
    return open_workspace(tmp_path / "copy", harness="scripted", script=DATES / "script.json")


def module(ws: Workspace) -> ModuleType:
    grader = ws.load("dates").evaluator.graders["correct"]
    assert isinstance(grader, CheckGrader)
    return sys.modules[grader.fn.__module__]


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("2024-02-29", date(2024, 2, 29)),
        ("It is 2024-02-29", date(2024, 2, 29)),
        ("February 29, 2024", date(2024, 2, 29)),
        ("february 29 2024", date(2024, 2, 29)),
        ("March 1st, 2024", date(2024, 3, 1)),
        ("29 February 2024", date(2024, 2, 29)),
        ("the 1st of March 2024", date(2024, 3, 1)),
        ("from 2024-02-28 to 2024-02-29", date(2024, 2, 29)),  # the last date named
        ("from March 1, 2024 to 2024-02-29", date(2024, 2, 29)),
        ("2024-02-29 or March 1, 2024", date(2024, 3, 1)),
    ],
)
def test_read_date(ws: Workspace, text: str, day: date) -> None:
    assert module(ws).read_date(text) == day


@pytest.mark.parametrize(
    "text", ["", "tomorrow", "2023-02-29", "February 30, 2024", "12024-01-01", "2024-1-5"]
)
def test_read_no_date(ws: Workspace, text: str) -> None:
    assert module(ws).read_date(text) is None


def make_run(output: str, answer: object = "2024-02-29") -> Run:
    question = "What date is the day after 2024-02-28?"
    return Run(
        machine="dates",
        model="scripted",
        harness="scripted",
        input=question,
        output=output,
        case={"id": "leap", "input": question, "answer": answer},
    )


@pytest.mark.parametrize(
    ("output", "correct", "iso", "why_iso"),
    [
        ("Leap year.\n2024-02-29", 1.0, 1.0, "the last line is 2024-02-29"),
        ("Leap year.\n2024-02-29.", 1.0, 1.0, "the last line is 2024-02-29"),
        ("Leap year.\nFebruary 29, 2024", 1.0, 0.0, "is not a date alone written as YYYY-MM-DD"),
        ("The answer is 2024-02-29", 1.0, 0.0, "is not a date alone written as YYYY-MM-DD"),
        ("2024-02-29\nso that is it", 0.0, 0.0, "is not a date alone written as YYYY-MM-DD"),
        ("2024-03-01", 0.0, 0.0, "written as YYYY-MM-DD but not the date asked for (2024-02-29)"),
        ("", 0.0, 0.0, "is not a date alone"),
    ],
)
async def test_the_two_checks(ws: Workspace, output: str, correct: float, iso: float, why_iso: str) -> None:
    graded = await ws.grade(make_run(output), store=False)
    assert graded.scorecard is not None
    grades = graded.scorecard.criteria
    assert (grades["correct"].score, grades["iso"].score) == (correct, iso)
    assert why_iso in grades["iso"].reason
    assert graded.score == pytest.approx((2 * correct + iso) / 3)


@pytest.mark.parametrize("answer", [None, "29/02/2024", "2023-02-29", 20240229])
async def test_a_bad_case_answer_is_unscored(ws: Workspace, answer: object) -> None:
    run = make_run("2024-02-29", answer)
    if answer is None:
        run = run.model_copy(update={"case": {"id": "leap", "input": run.input}})
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    for grade in graded.scorecard.criteria.values():
        assert grade.score is None and "answer" in grade.reason


def test_cases_and_held_out_cases_are_apart_and_each_has_both_rules(ws: Workspace) -> None:
    expected = module(ws).expected
    cases, held = ws.cases("dates"), ws.cases("dates", "holdout.json")
    assert len(cases) >= 6 and len(held) >= 7  # the gate needs six held-out cases that change
    assert not {c.id for c in cases} & {c.id for c in held}
    rules = load_script(DATES / "script.json").rules
    assert rules[0].match.startswith("^# The machine: dates")
    for case in [*cases, *held]:
        expected(case.data())
        matching = [r for r in rules[1:] if re.search(r.match, case.input)]
        assert [r.instructions for r in matching] == ["YYYY-MM-DD", None], case.id


async def test_the_live_instructions_name_no_form_so_some_answers_are_in_words(ws: Workspace) -> None:
    dates = ws.load("dates")
    assert "YYYY-MM-DD" not in dates.instructions
    report = await run_suite(ws, dates, ws.cases("dates"), harness=ScriptedHarness(DATES / "script.json"))
    means = {result.case_id: result.mean for result in report.cases}
    assert {c for c, m in means.items() if m == 1.0} == {"week", "fortnight"}
    in_words = [m for c, m in means.items() if c not in ("week", "fortnight")]
    assert in_words == pytest.approx([2 / 3] * 7)  # the right day, but not as YYYY-MM-DD


async def test_optimize_keeps_the_scripted_proposal_and_commit_makes_it_live(copy: Workspace) -> None:
    before = (copy.machines_dir / "dates" / "instructions.md").read_text(encoding="utf-8")
    result = await optimize(copy, "dates", trials=2, candidates=1)
    report = result.report
    assert result.candidate is not None and report.kept == "r1.p1" and report.candidate == "v2"
    proposal = report.rounds[0].proposals[0]
    assert proposal.cases is not None and proposal.cases.z is not None and proposal.cases.z >= 2
    assert proposal.holdout is not None and proposal.holdout.outcome == "passed"
    # seven of the eight held-out cases rose (ten-days was right already): enough to be evidence
    assert (proposal.holdout.paired_cases, proposal.holdout.p_value) == (8, 1 / 128)
    assert proposal.copied == []  # the guard finds no case copied into it
    assert report.ended == "r1.p1 passed every trial of every case: nothing left to learn from"
    written = (copy.machines_dir / "dates" / "instructions.md").read_text(encoding="utf-8")
    assert written != before and "YYYY-MM-DD" in written
    assert commit(copy, "dates").label == "v2"
    assert (DATES / "instructions.md").read_text(encoding="utf-8") == before  # the repository's is untouched
