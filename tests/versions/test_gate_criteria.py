"""The gate holds every criterion (or the ones marked required): a candidate whose mean rose while a
held criterion fell by ``min_z`` standard errors is refused, naming the criterion; a fall on one case of
seven is within chance and is not; and a gate fixed before training keeps the criteria it held then."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.versions import ByModel, make_caps

from machine import open_workspace
from machine.spec import load_cases
from machine.versions import fix_gate, format_report, propose, versions

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric

machine = define_machine(
    name="caps",
    intent="Repeat the input in capital letters.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "bad:free"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "correct": check("caps", lambda r: r.output == r.input.upper()),
            "second": check("second", SECOND),
        },
    ),
)
"""

LOWER = "lambda r: any(ch.islower() for ch in r.output)"
"""Passes the live model's "no idea" and fails the candidate's capitals: it falls on every case."""
NOT_EVE = 'lambda r: r.output != "EVE"'
"""Fails the candidate on one case of seven only."""


def rubric_py(required: str = "") -> str:
    flags = {name: ', "required": True' if name in required.split() else "" for name in ("correct", "second")}
    return f"""\
from machine import define_rubric

rubric = define_rubric({{
    "correct": {{"description": "The input in capitals.", "weight": 3{flags["correct"]}}},
    "second": {{"description": "A second look at the reply.", "weight": 1{flags["second"]}}},
}})
"""


def make(root: Path, second: str, required: str = "") -> Path:
    return make_caps(root, MACHINE_PY.replace("SECOND", second), rubric_py(required))


async def test_a_candidate_whose_mean_rose_but_a_criterion_fell_on_every_case_is_refused(
    tmp_path: Path,
) -> None:
    make(tmp_path, LOWER)
    ws = open_workspace(tmp_path, harness=ByModel(), budget=None)
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good:free", trials=1)).report
    assert (report.before.mean, report.after.mean) == (0.25, 0.75)  # the mean alone would pass
    second = report.criteria["second"]
    assert (second.before, second.after, second.diff, second.held, second.worse) == (
        1.0,
        0.0,
        -1.0,
        True,
        True,
    )
    assert report.criteria["correct"].worse is False
    assert report.outcome == "not passed"
    assert "criterion 'second' fell from 1.000 to 0.000" in report.decision
    assert "worse on a criterion it holds" in report.decision
    shown = format_report(report)
    assert "WORSE" in shown and "held" in shown


async def test_with_criteria_marked_required_only_those_are_held(tmp_path: Path) -> None:
    make(tmp_path, LOWER, required="correct")
    ws = open_workspace(tmp_path, harness=ByModel(), budget=None)
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good:free", trials=1)).report
    second = report.criteria["second"]
    assert (second.diff, second.held, second.worse) == (-1.0, False, False)
    assert report.criteria["correct"].held is True
    assert report.outcome == "passed", report.decision


async def test_a_required_criterion_that_fell_refuses_the_candidate(tmp_path: Path) -> None:
    make(tmp_path, LOWER, required="second")
    ws = open_workspace(tmp_path, harness=ByModel(), budget=None)
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good:free", trials=1)).report
    assert (report.criteria["correct"].held, report.criteria["second"].worse) == (False, True)
    assert report.outcome == "not passed"


async def test_a_fall_on_one_case_of_seven_is_within_chance(tmp_path: Path) -> None:
    make(tmp_path, NOT_EVE)
    ws = open_workspace(tmp_path, harness=ByModel(), budget=None)
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good:free", trials=1)).report
    second = report.criteria["second"]
    assert second.paired_cases == 7 and second.diff == pytest.approx(-1 / 7)
    assert second.z == pytest.approx(-1.0) and (second.held, second.worse) == (True, False)
    assert report.outcome == "passed", report.decision


async def test_a_fixed_gate_holds_the_criteria_it_held_when_it_was_fixed(tmp_path: Path) -> None:
    folder = make(tmp_path, LOWER, required="correct")
    ws = open_workspace(tmp_path, harness=ByModel(), budget=None)
    versions(ws, "caps")
    path = folder / "holdout.json"
    gate = await fix_gate(ws, "caps", load_cases(path), path, trials=1, min_z=2.0, pass_score=1.0)
    assert gate.held == ["correct"]
    (folder / "rubric.py").write_text(rubric_py(), encoding="utf-8")  # now nothing marked: all held
    assert ws.reload("caps").rubric.held == ["correct", "second"]
    report = (await propose(ws, "caps", model="good:free", gate=gate)).report
    assert report.criteria["second"].held is False
    assert report.outcome == "passed", report.decision
