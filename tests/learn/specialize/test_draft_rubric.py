"""draft_rubric on ``shout`` (tests/helpers/optimize.py): the author's replies are queued, the draft is
vetted in a process of its own and written beside the machine, which is graded as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.optimize import Keyed, make_kid

from machine import Workspace, load, open_workspace
from machine.learn import draft_rubric
from machine.learn.specialize import format_rubric_draft

DRAFT = """\
from machine import check, define_rubric, judge

rubric = define_rubric(
    {
        "upper": {"description": "The reply is the input in capital letters.", "weight": 3},
        "plain": {"description": "The reply says nothing besides the input.", "weight": 1},
    }
)


def upper(run, case):
    return run.output == case["expected"], f"said {run.output!r}"


graders = {"upper": check("upper", upper), "plain": judge()}
"""
MISSING_GRADER = DRAFT.replace(', "plain": judge()}', "}")
ONE_CRITERION = DRAFT.replace(
    '        "plain": {"description": "The reply says nothing besides the input.", "weight": 1},\n', ""
).replace(', "plain": judge()}', "}")


def reply(text: str, path: str = "rubric_draft.py") -> str:
    return f'A first rubric.\n<file path="{path}">\n{text}</file>'


async def test_a_draft_is_vetted_and_written_beside_the_machine_which_is_graded_as_before(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    before = ws.load("shout").rubric.fingerprint
    harness.push(reply(DRAFT))
    report = await load("shout", workspace=ws).draft_rubric()
    assert report.accepted and report.stopped is None, format_rubric_draft(report)
    assert (report.criteria, report.judged) == (["upper", "plain"], ["plain"])
    [upper] = report.checks
    assert sorted(s.score for s in upper.samples) == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]  # "ANN" only
    mark, written = (
        (tmp_path / "machines" / "shout" / "rubric_draft.py").read_text(encoding="utf-8").split("\n", 1)
    )
    assert written == DRAFT and mark.startswith("# Written by a model as a draft (draft-rubric shout")
    assert ws.trust.pending("shout")[0].draft and ws.trust.blocking("shout") == []  # shout itself loads
    assert ws.reload("shout").rubric.fingerprint == before
    [asked] = harness.author
    assert "Draft a rubric for shout" in asked.input and "rubric_draft.py" in asked.input
    assert "no idea" in asked.input  # a sample run it was shown
    assert "written (not committed): machines/shout/rubric_draft.py" in format_rubric_draft(report)


async def test_graders_that_do_not_fit_the_rubric_go_back_with_why(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    harness.push(reply(MISSING_GRADER), reply(DRAFT))
    report = await draft_rubric(ws, "shout")
    first, second = report.attempts
    assert first.outcome == "sent back" and any("plain" in p for p in first.problems), first.problems
    assert "plain" in harness.author[1].input
    assert second.outcome == "accepted" and report.accepted


@pytest.mark.parametrize(
    ("text", "path", "said"),
    [
        (ONE_CRITERION, "rubric_draft.py", "1 criteria: write 2 to 8"),
        (DRAFT, "rubric.py", "not one of the files that may be written"),
        ("rubric = 1\ngraders = {}\n", "rubric_draft.py", "must define `rubric = define_rubric"),
    ],
    ids=["one-criterion", "other-file", "not-a-rubric"],
)
async def test_a_draft_that_cannot_be_used_is_refused_and_nothing_is_written(
    tmp_path: Path, ws: Workspace, harness: Keyed, text: str, path: str, said: str
) -> None:
    rubric = (tmp_path / "machines" / "shout" / "rubric.py").read_bytes()
    harness.push(reply(text, path))
    report = await draft_rubric(ws, "shout", retries=0)
    assert not report.accepted and report.stopped is not None
    assert any(said in p for p in report.attempts[0].problems), report.attempts[0].problems
    assert not (tmp_path / "machines" / "shout" / "rubric_draft.py").exists()
    assert (tmp_path / "machines" / "shout" / "rubric.py").read_bytes() == rubric


async def test_a_childs_draft_cannot_take_an_inherited_criterion(tmp_path: Path, harness: Keyed) -> None:
    make_kid(tmp_path)
    ws = open_workspace(tmp_path, harness=harness)
    harness.push(reply(DRAFT.replace('"upper"', '"correct"')))
    report = await draft_rubric(ws, "shout/kid", retries=0)
    assert not report.accepted
    assert any("'correct' is inherited from 'shout'" in p for p in report.attempts[0].problems)
    assert len(report.samples) == 3  # it had no stored runs: three of its cases were run for samples
