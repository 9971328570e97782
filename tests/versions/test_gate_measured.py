"""The gate cannot pass what it did not measure: a candidate that wins on every criterion that was graded,
but whose heaviest criterion came back UNSCORED on every run, is "not measured" and commit refuses it.
The UNSCORED grades come from real graders: a judge whose model has no known price under a budget (it is
refused before any call), and a check that cannot grade some runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.versions import ByModel, make_caps

from machine import CommitRefused, open_workspace
from machine.spec import GateReport
from machine.versions import commit, format_report, propose, versions

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, instructions_from, judge, model_from

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
            "faithful": GRADER,
        },
    ),
)
"""

UNPRICED_JUDGE = 'judge(model="nobody/unpriced-judge")'
"""Under a budget a judge at an unknown price is refused before any call: UNSCORED, with why."""
NO_DAN = 'check("no_dan", lambda r: None if r.input == "dan" else r.output == r.input.upper())'
"""Cannot grade the case ``dan`` (a check must return a bool or a number): UNSCORED on that case only."""
NOT_ON_GOOD = 'check("not_on_good", lambda r: None if r.model.startswith("good") else True)'
"""Cannot grade any run of a ``good`` model: UNSCORED on the candidate's side only."""

ONCE_ON_GOOD = (
    'check("once_on_good", lambda r: None if r.model.startswith("good") and r.input != "ann" else True)'
)
"""Right on every live run; on the candidate's, UNSCORED on every case but ``ann``."""


def rubric_py(faithful_weight: float) -> str:
    return f"""\
from machine import define_rubric

rubric = define_rubric({{
    "correct": {{"description": "The reply is the input in capital letters.", "weight": 1}},
    "faithful": {{"description": "The reply keeps the input's meaning.", "weight": {faithful_weight}}},
}})
"""


def make(root: Path, grader: str, faithful_weight: float = 3) -> Path:
    return make_caps(root, MACHINE_PY.replace("GRADER", grader), rubric_py(faithful_weight))


async def test_a_heaviest_criterion_unscored_on_every_run_is_not_measured_and_not_committed(
    tmp_path: Path,
) -> None:
    folder = make(tmp_path, UNPRICED_JUDGE)
    ws = open_workspace(tmp_path, harness=ByModel(), budget=1)
    versions(ws, "caps")
    candidate = await propose(ws, "caps", model="good:free", trials=1)
    report = candidate.report
    # on the criterion that was graded the candidate wins on every case: alone, that would pass
    assert (report.criteria["correct"].before, report.criteria["correct"].after) == (0.0, 1.0)
    assert (report.diff, report.paired_cases) == (1.0, 7)
    assert (report.outcome, report.passed) == ("not measured", False)
    assert report.unmeasured == {"faithful": ["live v1", "candidate v2"]}
    faithful = report.criteria["faithful"]
    assert (faithful.weight, faithful.before, faithful.after) == (3.0, None, None)
    assert (faithful.unscored_before, faithful.unscored_after) == (7, 7)
    [why] = faithful.unscored_reasons_after
    assert why.count == 7 and "'nobody/unpriced-judge' has no known price" in why.reason
    # grades, not runs: every run has a score (from "correct"), yet 7 grades per side were UNSCORED
    assert (report.after.unscored, report.after.unscored_grades) == (0, 7)
    assert "criterion 'faithful' has no scored grade on live v1 (7 UNSCORED)" in report.decision

    text = format_report(report)
    assert "NOT MEASURED on live v1 and candidate v2" in text
    assert "7 UNSCORED on candidate v2, most often:\n        7x judge model 'nobody/unpriced-judge'" in text
    assert "decision: NOT MEASURED: criterion 'faithful'" in text and "PASSED" not in text

    before = (folder / "versions.json").read_bytes()
    with pytest.raises(CommitRefused, match=r"v2 .* was not measured on every criterion.*force=True") as no:
        commit(ws, "caps")
    assert no.value.report == report
    assert not (folder / "model.json").exists()
    assert (folder / "versions.json").read_bytes() == before
    # kept in versions.json as it was decided, reasons included
    stored = json.loads(before)["versions"][1]["report"]
    assert stored["outcome"] == "not measured" and stored["passed"] is False
    assert stored["criteria"]["faithful"]["unscored_reasons_after"][0]["count"] == 7

    forced = commit(ws, "caps", force=True)
    assert (forced.label, forced.status, forced.forced) == ("v2", "live", True)


async def test_unmeasured_on_one_side_only_is_not_measured(tmp_path: Path) -> None:
    make(tmp_path, NOT_ON_GOOD, faithful_weight=0.1)  # light, and graded on the live side
    ws = open_workspace(tmp_path, harness=ByModel())
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good", trials=1)).report
    assert report.criteria["faithful"].before == 1.0
    assert report.unmeasured == {"faithful": ["candidate v2"]}
    assert report.outcome == "not measured"
    assert "on candidate v2 (7 UNSCORED)" in report.decision and "live v1 (" not in report.decision
    with pytest.raises(CommitRefused):
        commit(ws, "caps")


async def test_a_criterion_scored_on_one_case_of_the_candidates_is_not_measured(tmp_path: Path) -> None:
    """The break: the candidate's heavy criterion came back UNSCORED on six of seven cases, so its
    runs were scored on the light one alone; it PASSED against a live version right on the heavy one,
    and the report printed ``faithful 1.000 -> 1.000`` from one grade."""
    make(tmp_path, ONCE_ON_GOOD)
    ws = open_workspace(tmp_path, harness=ByModel())
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good", trials=1)).report
    assert (report.diff, report.up) == (0.25, 7)  # alone, a gain on every case: that passed
    faithful = report.criteria["faithful"]
    assert (faithful.before, faithful.after, faithful.unscored_after) == (1.0, 1.0, 6)
    assert (faithful.cases_before, faithful.cases_after) == (7, 1)
    assert (report.criteria["correct"].cases_before, report.criteria["correct"].cases_after) == (7, 7)
    assert (report.outcome, report.passed) == ("not measured", False)
    assert report.unmeasured == {"faithful": ["candidate v2"]}
    assert report.decision.startswith(
        "criterion 'faithful' was scored on only 1 of the 7 held-out cases on candidate v2 (6 UNSCORED; "
        "at least 6 needed): the gate cannot judge the candidate on what it did not measure"
    )
    text = format_report(report)
    assert "cases scored before -> after" in text
    assert re.search(
        r"\n  faithful +x3 +1\.000 -> 1\.000 +100% -> 100% +7/7 -> 1/7 .*NOT MEASURED on candidate v2\n", text
    )
    assert re.search(r"\n  correct +x1 +0\.000 -> 1\.000 +0% -> 100% +7/7 -> 7/7 ", text)
    assert "decision: NOT MEASURED: criterion 'faithful' was scored on only 1 of the 7" in text
    assert "PASSED" not in text
    with pytest.raises(CommitRefused, match="was not measured on every criterion"):
        commit(ws, "caps")


async def test_a_criterion_unscored_on_some_runs_is_measured_on_the_rest(tmp_path: Path) -> None:
    make(tmp_path, NO_DAN, faithful_weight=1)
    ws = open_workspace(tmp_path, harness=ByModel())
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good", trials=2)).report
    faithful = report.criteria["faithful"]
    # its figures are over the 12 grades scored on each side; the 2 UNSCORED (case dan) are counted apart
    assert (faithful.before, faithful.after, faithful.after_pass_rate) == (0.0, 1.0, 1.0)
    assert (faithful.unscored_before, faithful.unscored_after) == (2, 2)
    assert "check 'no_dan' returned None" in faithful.unscored_reasons_after[0].reason
    assert report.unmeasured == {}
    assert (report.outcome, report.passed) == ("passed", True)
    text = format_report(report)
    assert "2 UNSCORED on live v1, most often:\n        2x check 'no_dan' returned None" in text
    assert "NOT MEASURED" not in text and "decision: PASSED" in text
    assert commit(ws, "caps").label == "v2"


def test_a_report_written_before_outcomes_were_kept_reads_as_it_was_decided() -> None:
    old = {
        "machine": "caps",
        "live": "v1",
        "candidate": "v2",
        "cases_file": "holdout.json",
        "cases": 4,
        "trials": 1,
        "before": {"version": "v1", "model": "bad", "runs": 4, "unscored": 0, "mean": 0.0},
        "after": {"version": "v2", "model": "good", "runs": 4, "unscored": 0, "mean": 1.0},
        "criteria": {"correct": {"before": 0.0, "after": 1.0, "unscored_before": 0, "unscored_after": 0}},
        "passed": True,
        "decision": "every one of the 4 held-out cases scored +1.000 higher (standard error 0)",
    }
    report = GateReport.model_validate(old)
    assert (report.outcome, report.passed, report.unmeasured) == ("passed", True, {})
    refused = GateReport.model_validate({**old, "passed": False})
    assert refused.outcome == "not passed"
    with pytest.raises(ValueError, match="outcome"):  # the two may never disagree
        GateReport.model_validate({**old, "outcome": "not measured"})
