"""optimize on a workspace in tmp_path, through a harness whose replies depend on the system prompt
(tests/helpers/optimize.py), so which proposal wins, by how much and where, is known exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.git import git
from helpers.optimize import HOLDOUT, LIVE, Keyed, block, make_shout, snapshot

import machine
from machine import HarnessError, Workspace, open_workspace
from machine.learn import optimize
from machine.learn.optimize import format_optimization
from machine.learn.optimize._ask import REASK
from machine.versions import versions

GENERAL = "Say the input back in CAPITALS, whatever it is."
MEMORIZED = "Say the input back. MEMO: the practice names get capital letters."
SMALL = "Say the input back. ONE more name gets capital letters."
MUTED = "Say the input back. MUTE the reply."
TABLED = "Say the input back. TABLE: the practice names get capital letters."


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return make_shout(tmp_path)


@pytest.fixture
def harness() -> Keyed:
    return Keyed()


@pytest.fixture
def ws(tmp_path: Path, folder: Path, harness: Keyed) -> Workspace:
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout")  # v1 recorded, so "unchanged" below means byte for byte, versions.json too
    return ws


def pending(ws: Workspace) -> list[str]:
    return [v.label for v in versions(ws, "shout") if v.status == "pending"]


async def test_a_proposal_that_wins_and_holds_is_kept_uncommitted_then_committed(
    tmp_path: Path, ws: Workspace, folder: Path, harness: Keyed
) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "machine")
    harness.push(block(GENERAL, "The rule was missing.\nIt says what to do with every input."))
    handle = machine.load("shout", workspace=ws)
    result = await handle.optimize(trials=2, rounds=1, candidates=1)
    report = result.report
    assert result.kept and result.candidate is not None
    assert (report.kept, report.candidate) == ("r1.p1", "v2")
    assert (folder / "instructions.md").read_text(encoding="utf-8") == GENERAL + "\n"
    assert git(tmp_path, "status", "--porcelain", "--", "machines").splitlines() == [
        " M machines/shout/instructions.md",
        " M machines/shout/versions.json",
    ]  # written, not committed: the person accepts with a git commit, or rejects with git checkout
    assert len(git(tmp_path, "log", "--format=%H").splitlines()) == 1
    [proposal] = report.rounds[0].proposals
    assert proposal.outcome == "kept"
    assert proposal.explanation == "The rule was missing.\nIt says what to do with every input."
    assert proposal.cases is not None and proposal.holdout is not None
    assert (proposal.cases.mean, proposal.cases.live_mean) == (1.0, pytest.approx((1 + 6 * 0.25) / 7))
    assert (proposal.holdout.mean, proposal.holdout.live_mean) == (1.0, pytest.approx((1 + 6 * 0.25) / 7))
    assert proposal.cases.z == pytest.approx(6.0) and proposal.holdout.paired_cases == 7
    assert proposal.holdout.z == pytest.approx(6.0) and proposal.holdout.p_value == 1 / 64  # six rose
    assert report.diff == "--- v1\n+++ r1.p1\n@@ -1 +1 @@\n-" + LIVE + "\n+" + GENERAL

    said = json.loads(report.model_dump_json())  # what --json prints
    assert said["rounds"][0]["proposals"][0]["holdout"]["mean"] == 1.0
    assert "runs" not in said["rounds"][0]["proposals"][0] and said["gate"]["candidate"] == "v2"
    book = json.loads((folder / "versions.json").read_text(encoding="utf-8"))
    [v2] = [v for v in book["versions"] if v["status"] == "pending"]
    assert v2["number"] == 2 and v2["base"] == 1 and v2["note"] == "optimize r1.p1: The rule was missing."
    assert v2["report"]["outcome"] == "passed" and v2["report"]["candidate"] == "v2"
    assert v2["report"]["holdout"]["outcome"] == "passed"
    assert (v2["report"]["holdout"]["cases"], v2["report"]["holdout"]["candidate"]) == (7, "v2")
    assert v2["report"]["holdout"]["after"]["mean"] == 1.0

    stored = [r for r in ws.store.iter_runs("shout") if r.instructions == GENERAL]
    assert len(stored) == 2 * (7 + 7)  # the kept proposal's runs, on the cases and held out
    assert {r.version for r in stored} == {"v2"}

    made_live = handle.commit()
    assert made_live.label == "v2" and made_live.live
    assert [(v.label, v.status) for v in versions(ws, "shout")] == [("v1", "retired"), ("v2", "live")]
    assert (folder / "instructions.md").read_text(encoding="utf-8") == GENERAL + "\n"
    assert (await ws.run("shout", "zoe")).version == "v2"


async def test_a_proposal_that_wins_on_the_cases_but_loses_held_out_is_discarded(
    ws: Workspace, folder: Path, harness: Keyed
) -> None:
    before = snapshot(folder)
    harness.push(block(MEMORIZED))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    assert result.candidate is None and result.report.kept is None
    assert snapshot(folder) == before
    assert pending(ws) == []
    [p] = result.report.rounds[0].proposals
    assert p.outcome == "discarded"
    assert p.cases is not None and (p.cases.mean, p.cases.outcome) == (1.0, "passed")
    assert p.holdout is not None and p.holdout.diff == pytest.approx(-0.75 / 7)
    assert "its held-out mean is lower than v1's (-0.107 over 7 held-out cases)" in p.decision
    assert "does not carry over to unseen ones" in p.decision
    assert "kept: nothing; instructions.md is unchanged" in format_optimization(result.report)


async def test_a_rewrite_that_memorized_the_cases_gains_nothing_held_out_and_is_discarded(
    ws: Workspace, folder: Path, harness: Keyed
) -> None:
    """The break: +1.000 on the cases, +0.000 held out was kept, because the held-out rule was "no
    lower". Copying is allowed here, so the held-out cases alone decide."""
    before = snapshot(folder)
    harness.push(block(TABLED))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1, allow_overlap=True)
    [p] = result.report.rounds[0].proposals
    assert p.cases is not None and (p.cases.mean, p.cases.outcome) == (1.0, "passed")
    assert p.holdout is not None and (p.holdout.diff, p.holdout.outcome) == (0.0, "not passed")
    assert p.outcome == "discarded"
    assert "its held-out mean is no higher than v1's (+0.000 over 7 held-out cases)" in p.decision
    assert result.candidate is None and snapshot(folder) == before and pending(ws) == []


async def test_where_live_is_at_the_held_out_maximum_a_proposal_must_keep_it(
    ws: Workspace, folder: Path, harness: Keyed
) -> None:
    """No gain is possible where the live version scores the maximum on every held-out case: there the
    proposal must score it too (every input starting with ``a`` is right under any instructions)."""
    at_top = [{"id": f"held-{n}", "input": n, "expected": n.upper()} for n in ("amelia", "arthur", "ava")]
    (folder / "holdout.json").write_text(json.dumps(at_top), encoding="utf-8")
    versions(ws, "shout")
    harness.push(block(GENERAL), block(MEMORIZED))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=2)
    general, memorized = result.report.rounds[0].proposals
    assert result.report.live_holdout_mean == 1.0
    assert general.holdout is not None and (general.holdout.diff, general.holdout.outcome) == (0.0, "passed")
    assert (
        general.outcome == "kept"
        and "v1 already scores the maximum on every held-out case" in general.decision
    )
    assert memorized.outcome == "discarded" and "lower than v1's" in memorized.decision
    assert result.report.kept == "r1.p1"


async def test_a_gain_within_two_standard_errors_is_discarded(
    ws: Workspace, folder: Path, harness: Keyed
) -> None:
    before = snapshot(folder)
    harness.push(block(SMALL))
    result = await optimize(ws, "shout", trials=2, rounds=1, candidates=1)
    [p] = result.report.rounds[0].proposals
    assert p.cases is not None
    assert (p.cases.diff, p.cases.z, p.cases.paired_cases) == (pytest.approx(0.75 / 7), pytest.approx(1.0), 7)
    assert p.outcome == "discarded" and "only 1.00 standard errors above zero (2 needed)" in p.decision
    assert p.holdout is None  # never measured held out: it did not pass on the cases
    assert not any(s.input in {c["input"] for c in HOLDOUT} for s in harness.machine_runs())
    assert result.candidate is None and snapshot(folder) == before and pending(ws) == []


async def test_min_z_decides_the_same_gain_and_held_out_it_must_gain_too(
    ws: Workspace, harness: Keyed
) -> None:
    harness.push(block(SMALL))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1, min_z=0.0, allow_weak_gate=True)
    [p] = result.report.rounds[0].proposals
    assert p.cases is not None and p.cases.outcome == "passed"  # one case more is enough at min_z 0
    assert p.holdout is not None and p.holdout.diff == 0.0  # but it changes nothing held out
    assert p.outcome == "discarded" and "its held-out mean is no higher than v1's" in p.decision
    assert result.report.candidate is None


async def test_a_reply_without_the_block_is_asked_again_in_the_same_conversation(
    ws: Workspace, harness: Keyed
) -> None:
    harness.push("I would make it louder.", block(GENERAL, "Louder, for every input."))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    first, second = harness.optimizer
    assert second.input == REASK
    assert [(m.role, m.content) for m in second.history] == [
        ("user", first.input),
        ("assistant", "I would make it louder."),
    ]
    assert first.history == []
    [p] = result.report.rounds[0].proposals
    assert (p.asked, len(p.optimizer_runs), p.instructions, p.outcome) == (2, 2, GENERAL, "kept")
    runs = [ws.store.get(i) for i in p.optimizer_runs]
    assert len({r.conversation_id for r in runs}) == 1 and runs[0].conversation_id is not None
    assert runs[0].scorecard is not None and runs[0].scorecard.criteria["proposes"].score == 0.0
    assert result.report.calls.optimizer == 2


async def test_three_replies_without_the_block_leave_no_proposal(
    ws: Workspace, folder: Path, harness: Keyed
) -> None:
    before = snapshot(folder)
    harness.push("No.", "<instructions>  </instructions> still no.", "Nothing to add.")
    result = await optimize(ws, "shout", trials=1, rounds=2, candidates=1)
    assert len(harness.optimizer) == 3
    assert [len(s.history) for s in harness.optimizer] == [0, 2, 4]
    [p] = result.report.rounds[0].proposals
    assert (p.outcome, p.instructions, p.asked) == ("no proposal", None, 3)
    assert p.decision == (
        "the optimizer's reply had no <instructions> block after 3 asks, so the round has no proposal here"
    )
    assert result.report.ended == f"round 1 has no proposal: {p.decision}"
    assert len(result.report.rounds) == 1  # the search ended there
    assert result.candidate is None and snapshot(folder) == before


async def test_a_criterion_unscored_on_every_run_of_a_side_is_not_measured(
    ws: Workspace, folder: Path, harness: Keyed
) -> None:
    before = snapshot(folder)
    harness.push(block(MUTED))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1, min_z=0.0, allow_weak_gate=True)
    [p] = result.report.rounds[0].proposals
    assert p.outcome == "not measured" and p.cases is not None and p.cases.outcome == "not measured"
    assert "criterion 'short' has no scored grade on candidate r1.p1 (7 UNSCORED)" in p.decision
    assert p.holdout is None and result.candidate is None
    assert snapshot(folder) == before and pending(ws) == []


async def test_stored_runs_of_the_live_version_are_reused(ws: Workspace, harness: Keyed) -> None:
    harness.push(block(SMALL))
    first = await optimize(ws, "shout", trials=2, rounds=1, candidates=1)
    assert (first.report.calls.live_new, first.report.calls.reused) == (14, 0)
    live_calls = len(harness.machine_runs(LIVE))
    assert live_calls == 14
    harness.push(block(SMALL))
    second = await optimize(ws, "shout", trials=2, rounds=1, candidates=1)
    calls = second.report.calls
    assert (calls.live_new, calls.reused, calls.new, calls.optimizer) == (0, 14, 14, 1)
    assert len(harness.machine_runs(LIVE)) == live_calls  # the live version was not asked again
    assert second.report.live_cases_mean == first.report.live_cases_mean
    [p] = second.report.rounds[0].proposals
    assert len(p.shown) == 4  # the failures shown came from the stored runs


async def test_each_round_builds_on_the_best_so_far_and_ends_when_nothing_fails(
    ws: Workspace, harness: Keyed
) -> None:
    harness.push(block(MEMORIZED), block(SMALL), block(GENERAL), block(SMALL))
    result = await optimize(ws, "shout", trials=1, rounds=3, candidates=2)
    report = result.report
    assert [r.parent for r in report.rounds] == ["v1", "r1.p2"]  # the memorized one is never built on
    assert [[p.outcome for p in r.proposals] for r in report.rounds] == [
        ["discarded", "discarded"],
        ["kept", "discarded"],
    ]
    assert report.rounds[1].proposals[1].decision == (
        "the same instructions as r1.p2, so it is not measured again"
    )
    assert "bob" not in report.rounds[1].proposals[0].shown  # r1.p2 passed bob
    assert report.ended == "r2.p1 passed every trial of every case: nothing left to learn from"
    assert (report.kept, report.candidate) == ("r2.p1", "v2")
    assert report.calls.optimizer == 4


async def test_failed_runs_count_as_failures_of_their_side(ws: Workspace, harness: Keyed) -> None:
    harness.push(block("Say the input back in CAPITALS. CRASH on nothing."))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    [p] = result.report.rounds[0].proposals
    # the crash on cat is a 0 there (live scored 0.25): 6 of 7 right, five cases up and one down
    assert p.cases is not None and (p.cases.mean, p.cases.paired_cases) == (pytest.approx(6 / 7), 7)
    assert p.cases.diff == pytest.approx((5 * 0.75 - 0.25) / 7)
    assert p.outcome == "kept"
    failed = [r for r in ws.store.iter_runs("shout") if r.status == "error"]
    assert [(r.case_id, r.error) for r in failed] == [("cat", "RuntimeError: the model fell over")]
    assert result.candidate is not None and result.candidate.report.after.errors == 1


async def test_a_proposal_the_same_as_the_live_instructions_is_not_measured(
    ws: Workspace, harness: Keyed
) -> None:
    harness.push(block(f"  {LIVE}\n"), block(GENERAL))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=2)
    same, other = result.report.rounds[0].proposals
    assert (same.outcome, same.decision) == (
        "discarded",
        "the same instructions as v1, so it is not measured again",
    )
    assert same.cases is None and other.outcome == "kept"
    assert len(harness.machine_runs(LIVE)) == 7 + 7  # the live version's runs only, none for it


async def test_a_failed_optimizer_call_is_not_asked_again(ws: Workspace, harness: Keyed) -> None:
    def down(request: object) -> str:
        raise HarnessError("the endpoint is down")

    harness.push(down)
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    [p] = result.report.rounds[0].proposals
    assert (p.outcome, p.asked) == ("no proposal", 1)
    assert p.decision == "the optimizer's call failed (the endpoint is down)"
    assert result.report.ended == f"round 1 has no proposal: {p.decision}"


async def test_without_held_out_cases_it_warns_and_decides_on_the_cases(
    ws: Workspace, folder: Path, harness: Keyed
) -> None:
    (folder / "holdout.json").unlink()
    versions(ws, "shout")
    harness.push(block(MEMORIZED))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    report = result.report
    assert report.warnings == [
        "machine 'shout' has no held-out cases (holdout.json), so a proposal is judged on the cases it was "
        "shown alone, and one that memorized them cannot be told apart: write holdout.json"
    ]
    assert (report.holdout_file, report.holdout_cases) == (None, 0)
    assert result.candidate is not None and result.candidate.report.holdout is None
    assert "warning: machine 'shout' has no held-out cases" in format_optimization(report)


async def test_held_out_runs_of_the_live_version_are_reused_too(ws: Workspace, harness: Keyed) -> None:
    harness.push(block(MEMORIZED))
    first = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    assert first.report.calls.live_new == 7 + 7
    made: list[str] = []
    harness.push(block(MEMORIZED))
    second = await optimize(
        ws, "shout", trials=1, rounds=1, candidates=1, on_run=lambda r: made.append(r.instructions)
    )
    assert (second.report.calls.live_new, second.report.calls.reused) == (0, 7 + 7)
    assert second.report.live_holdout_mean == first.report.live_holdout_mean
    assert made == [MEMORIZED] * (7 + 7)  # a progress call per run made, none for a reused one
