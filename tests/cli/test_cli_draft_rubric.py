"""``machine draft-rubric signoff`` through the real console script, with the author's reply the repository
ships (machines/signoff/author.json). signoff's stored runs are mixed: its scripted teacher passes every
case of cases.json, the echo harness fails the held-out ones; the draft's checks are tried on both kinds
and must tell them apart, and signoff is graded as before until the draft is adopted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.bwrap import bubblewrap_or_fail as bubblewrap_or_fail  # the fixture of needs_bubblewrap
from helpers.bwrap import needs_bubblewrap

if TYPE_CHECKING:
    from conftest import Command

REPO = Path(__file__).resolve().parents[2]
pytestmark = [m for m in needs_bubblewrap() if m.name != "anyio"]  # a plain test, not async


@pytest.mark.slow
def test_the_shipped_draft_tells_passing_runs_from_failing_ones(tmp_path: Path, machine_cmd: Command) -> None:
    root = tmp_path / "ws"
    shutil.copytree(REPO / "machines" / "signoff", root / "machines" / "signoff")
    folder = root / "machines" / "signoff"
    at = ("--workspace", root)
    passing = machine_cmd(
        "suite", "signoff", "--harness", "scripted", "--script", folder / "script.json", *at
    )
    failing = machine_cmd("suite", "signoff", "--cases", "holdout.json", "--harness", "echo", *at)
    assert passing.returncode == 0 and failing.returncode == 0, passing.stderr + failing.stderr
    assert "pass rate 100%" in passing.stdout and "pass rate 0%" in failing.stdout
    author = ("--harness", "scripted", "--script", folder / "author.json")

    done = machine_cmd("draft-rubric", "signoff", *author, "--json", *at)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["accepted"] and report["second_look"] == [], report
    assert (report["criteria"], report["judged"]) == (
        ["ends_with_aye", "says_the_answer", "plain"],
        ["plain"],
    )
    assert len(report["samples"]) == 6  # the 9 newest runs all fail: the samples still hold passing ones
    checks = {c["criterion"]: c["samples"] for c in report["checks"]}
    verdicts = [s["passed"] for s in checks["ends_with_aye"]]
    assert sorted(verdicts) == [False, False, False, True, True, True]
    assert [s["score"] for s in checks["ends_with_aye"]] == [1.0 if v else 0.0 for v in verdicts]
    assert {s["score"] for s in checks["says_the_answer"] if s["passed"]} == {1.0}
    draft = (folder / "rubric_draft.py").read_text(encoding="utf-8")
    assert draft.startswith("# Written by a model as a draft") and "def ends_with_aye(run)" in draft
    shown = machine_cmd("show", "signoff", *at)
    assert shown.returncode == 0 and "signs_off" in shown.stdout and "ends_with_aye" not in shown.stdout

    again = machine_cmd("draft-rubric", "signoff", *author, *at)  # in words, replacing the draft
    assert again.returncode == 0, again.stderr
    assert (
        "ends_with_aye (ends_with_aye): passing runs 1.00 1.00 1.00; failing runs 0.00 0.00 0.00"
        in again.stdout
    )
    assert "(replacing the earlier draft)" in again.stdout
