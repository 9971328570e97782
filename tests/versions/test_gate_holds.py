"""The promotion gate holds where it was bent: a candidate that crashed on most held-out cases, one whose
grades did not score on most of them, and two cases that each moved 0 -> 1 do not pass; a candidate
measured on one harness is not made live on another. Real workspaces (a SQLite store in tmp_path), a
harness whose replies depend on the MODEL, and real graders."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.versions import make_caps

from machine import CommitRefused, open_workspace
from machine.runs import HarnessRequest, HarnessResult, Message, Turn, run_loop
from machine.spec import GateReport
from machine.versions import commit, format_report, plan_commit, propose, versions

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"correct": "The reply is the input in capital letters."})
"""

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric


def caps(run):
    if run.output.startswith("?"):
        return None  # cannot be judged: UNSCORED, never a 0
    return run.output == run.input.upper()


machine = define_machine(
    name="caps",
    intent="Repeat the input in capital letters.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "bad"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"correct": check("caps", caps)}),
)
"""

SIX = ["ann", "bob", "cat", "dan", "eve", "fay"]
FIRST_TWO = {"ann", "bob"}


@dataclass(frozen=True)
class Endpoint:
    base_url: str


class Flaky:
    """Models by name: ``...good`` answers right; ``crashy`` right on ann and bob, and fails the call on
    the rest; ``unsure`` right on ann and bob, and replies what the grader cannot judge on the rest;
    anything else answers wrong."""

    def __init__(self, name: str = "flaky", url: str | None = None) -> None:
        self.name = name
        if url is not None:
            self.endpoint = Endpoint(url)

    async def run(self, request: HarnessRequest) -> HarnessResult:
        model, text = request.model, request.input
        if model == "crashy" and text not in FIRST_TWO:
            raise RuntimeError("the checkpoint fell over")
        if model.endswith("good") or (model in ("crashy", "unsure") and text in FIRST_TWO):
            said = text.upper()
        elif model == "unsure":
            said = "? cannot say"
        else:
            said = "no idea"

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=said))

        return await run_loop(request, reply)


def make(root: Path, holdout: list[str] = SIX) -> Path:
    folder = make_caps(root, MACHINE_PY, RUBRIC_PY)
    (folder / "holdout.json").write_text(json.dumps([{"id": c, "input": c} for c in holdout]))
    return folder


async def test_a_candidate_that_crashed_on_four_of_six_held_out_cases_does_not_pass(tmp_path: Path) -> None:
    """The break: it passed on the other two, its failed runs left out."""
    make(tmp_path)
    ws = open_workspace(tmp_path, harness=Flaky())
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="crashy", trials=1)).report
    assert report.outcome == "not passed" and not report.passed
    assert (report.after.errors, report.after.cases_scored, report.after.mean) == (4, 6, pytest.approx(2 / 6))
    assert (report.paired_cases, report.up, report.down) == (6, 2, 0)  # a crash is a 0, as live scored
    assert "4 failed (each a 0)" in format_report(report)
    with pytest.raises(CommitRefused, match="did not pass the promotion gate"):
        commit(ws, "caps")


async def test_a_candidate_whose_grades_did_not_score_on_four_of_six_is_not_measured(tmp_path: Path) -> None:
    """The break: it passed on the two cases that were graded; UNSCORED grades are never a 0, so the side
    is refused for coverage instead."""
    make(tmp_path)
    ws = open_workspace(tmp_path, harness=Flaky())
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="unsure", trials=1)).report
    assert report.outcome == "not measured"
    assert (report.after.errors, report.after.unscored, report.after.cases_scored) == (0, 4, 2)
    assert report.criteria["correct"].after == 1.0  # the UNSCORED grades are not counted as 0
    assert report.decision.startswith(
        "candidate v2 has a scored run on only 2 of the 6 held-out cases (at least 5 needed)"
    )
    with pytest.raises(CommitRefused, match="was not measured on enough of the cases"):
        commit(ws, "caps")


async def test_two_cases_that_each_moved_from_0_to_1_are_not_enough_evidence(tmp_path: Path) -> None:
    """The break: it passed with "standard error 0". More trials do not make more cases."""
    make(tmp_path, holdout=["ann", "bob"])
    ws = open_workspace(tmp_path, harness=Flaky())
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good", trials=3)).report
    assert report.outcome == "not enough evidence" and not report.passed
    assert (report.diff, report.se, report.paired_cases, report.p_value) == (1.0, 0.0, 2, 0.25)
    assert "it takes 6 that changed to reach p 0.0228" in report.decision
    assert "decision: NOT ENOUGH EVIDENCE: only 2 of the 2 held-out cases changed" in format_report(report)
    with pytest.raises(CommitRefused, match="has too little evidence behind it to pass the promotion gate"):
        commit(ws, "caps")


async def test_six_cases_that_each_moved_pass_with_the_sign_tests_p(tmp_path: Path) -> None:
    make(tmp_path)
    ws = open_workspace(tmp_path, harness=Flaky())
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good", trials=1)).report
    assert (report.outcome, report.p_value, report.up) == ("passed", 1 / 64, 6)
    assert commit(ws, "caps").label == "v2"


async def test_the_report_records_where_each_side_ran(tmp_path: Path) -> None:
    make(tmp_path)
    secret = "http://user:secret@127.0.0.1:8000/v1/?key=abc"
    ws = open_workspace(tmp_path, harness=Flaky("openai", url=secret))
    versions(ws, "caps")
    report = (await propose(ws, "caps", model="good", trials=1)).report
    for side, model in ((report.before, "bad"), (report.after, "good")):
        assert (side.harness, side.model, side.endpoint) == ("openai", model, "http://127.0.0.1:8000/v1")
    assert "secret" not in report.model_dump_json() and "key=abc" not in report.model_dump_json()
    assert "ran on harness openai at http://127.0.0.1:8000/v1, model good" in format_report(report)
    elsewhere = ws.using(harness=Flaky("openai", url="http://10.0.0.9:8000/v1"))
    with pytest.raises(
        CommitRefused, match=r"at http://127\.0\.0\.1:8000/v1, but would run on .* at http://10"
    ):
        commit(elsewhere, "caps")
    assert commit(ws.using(harness=Flaky("openai", url="http://127.0.0.1:8000/v1")), "caps").label == "v2"


async def test_a_candidate_measured_on_one_harness_is_not_made_live_on_another_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The break: measured only on the scripted stand-in, "gate: passed", and commit made it live on a
    local-model machine that never ran it. Named, the other harness is refused."""
    monkeypatch.delenv("MACHINE_HARNESS", raising=False)
    folder = make(tmp_path)
    ws = open_workspace(tmp_path, harness=Flaky("scripted"))
    versions(ws, "caps")
    candidate = await propose(ws, "caps", model="local:good", trials=1)
    assert candidate.passed
    book = (folder / "versions.json").read_bytes()
    with pytest.raises(CommitRefused) as refused:
        commit(open_workspace(tmp_path), "caps", harness="local")
    assert candidate.report.after.harness == "scripted"
    assert str(refused.value).startswith(
        "candidate v2 of machine 'caps' was measured on harness 'scripted' with model 'local:good', but "
        "would run on harness 'local' with model 'local:good', so its gate says nothing of how it runs "
        "there and v1 stays live: measure it again there"
    )
    assert (folder / "versions.json").read_bytes() == book and not (folder / "model.json").exists()
    assert commit(open_workspace(tmp_path), "caps", harness="scripted").label == "v2"


async def test_commit_targets_the_harness_it_was_measured_on_unless_told_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The break: getting-started's commit after a scripted optimize exited 2, since commit's target
    was the default harness (tinker) and not where the candidate was measured. MACHINE_HARNESS (the
    harness runs default to) does not move it; a named harness, or a workspace holding one, does."""
    monkeypatch.setenv("MACHINE_HARNESS", "tinker")
    make(tmp_path)
    ws = open_workspace(tmp_path, harness=Flaky("scripted"))
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    with pytest.raises(CommitRefused, match="would run on harness 'local'"):
        commit(open_workspace(tmp_path), "caps", harness="local")
    with pytest.raises(CommitRefused, match="would run on harness 'openai'"):
        commit(open_workspace(tmp_path, harness=Flaky("openai")), "caps")
    version = commit(open_workspace(tmp_path), "caps")
    assert version.label == "v2" and not version.forced


async def test_commit_targets_the_endpoint_it_was_measured_at(tmp_path: Path) -> None:
    make(tmp_path)
    ws = open_workspace(tmp_path, harness=Flaky("openai", url="http://127.0.0.1:8000/v1"))
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    plain = open_workspace(tmp_path)  # holds no harness: it goes live where it was measured
    plan = plan_commit(plain, "caps")
    assert plan.refusal is None and plan.elsewhere is None
    assert commit(plain, "caps").label == "v2"


async def test_a_report_that_does_not_say_where_it_was_measured_is_no_match(tmp_path: Path) -> None:
    folder = make(tmp_path)
    ws = open_workspace(tmp_path, harness=Flaky())
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    book = json.loads((folder / "versions.json").read_text())
    for side in ("before", "after"):  # as a report written before they were kept
        for key in ("harness", "endpoint", "cases_scored"):
            del book["versions"][1]["report"][side][key]
    (folder / "versions.json").write_text(json.dumps(book))
    [_, v2] = versions(ws, "caps")
    assert v2.report is not None and v2.report.after.harness is None and v2.report.passed
    assert "on a harness the report does not name" in format_report(v2.report)
    with pytest.raises(CommitRefused, match="does not say which harness it was measured on"):
        commit(ws, "caps")
    assert commit(ws, "caps", force=True).forced


def test_an_old_report_loads_with_none_for_where_it_ran() -> None:
    side = {"version": "v1", "model": "bad", "runs": 4, "mean": 0.0}
    old = {
        "machine": "caps", "live": "v1", "candidate": "v2", "cases_file": "holdout.json", "cases": 4,
        "trials": 1, "before": side, "after": {**side, "version": "v2"}, "passed": True,
    }  # fmt: skip
    report = GateReport.model_validate(old)
    assert (report.after.harness, report.after.endpoint, report.after.cases_scored) == (None, None, None)
    assert (report.p_value, report.up, report.down) == (None, 0, 0)
