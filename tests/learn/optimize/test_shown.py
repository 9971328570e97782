"""What the optimizer is shown, read from the requests it was sent: every grader's reason for each
failure shown, never a held-out case; and, for a child, its parent's instructions as fixed context that
is never rewritten."""

from __future__ import annotations

from pathlib import Path

from helpers.optimize import (
    CASES,
    HOLDOUT,
    KID,
    LIVE,
    PARENT,
    Keyed,
    Seen,
    answer,
    block,
    make_kid,
    make_shout,
    snapshot,
)

from machine import open_workspace
from machine.learn import optimize
from machine.learn.optimize._ask import REASK
from machine.versions import commit, versions

BY_ID = {c["id"]: c for c in CASES}


def sections(brief: str) -> dict[str, str]:
    """Each case's part of a brief, by case id."""
    found = {}
    for part in brief.split("### Case ")[1:]:
        case_id = part.split("'", 2)[1]
        found[case_id] = part.split("\n## ", 1)[0]
    return found


def never_held_out(seen: list[Seen]) -> None:
    for request in seen:
        for text in request.texts:
            low = text.lower()
            for case in HOLDOUT:
                assert case["input"] not in low and case["id"] not in low, (case["id"], text[:200])


async def test_requests_carry_every_graders_reason_and_no_held_out_case(tmp_path: Path) -> None:
    make_shout(tmp_path)
    memorized = "Say the input back. MEMO: the practice names get capital letters."
    small = "Say the input back. ONE more name gets capital letters."
    harness = Keyed(
        [
            "Let me think.",
            block(memorized),
            block(small),
            block("Say it in CAPITALS."),
            "no",
            block(memorized),
        ]
    )
    ws = open_workspace(tmp_path, harness=harness)
    result = await optimize(ws, "shout", trials=2, rounds=2, candidates=2)
    rounds = result.report.rounds
    assert [r.parent for r in rounds] == ["v1", "r1.p2"]
    asked = [s for s in harness.optimizer if s.input != REASK]
    proposals = [p for r in rounds for p in r.proposals]
    assert len(asked) == len(proposals) == 4
    assert [len(p.shown) for p in proposals] == [4, 4, 4, 4]
    parents = {"v1": LIVE, "r1.p2": small}
    for request, proposal in zip(asked, proposals, strict=True):
        shown = sections(request.input)
        failing = [i for i in shown if f"### Case {i!r}" in request.input.split("## Runs that passed")[0]]
        assert failing == proposal.shown
        for case_id in proposal.shown:
            case = BY_ID[case_id]
            said = answer(parents[proposal.parent], case["input"])
            assert said == "no idea"
            part = shown[case_id]
            assert f"- correct: 0.00: wanted {case['expected']!r}, got {said!r}" in part
            assert f"- short: 1.00: {len(said)} characters (at most 80)" in part
            assert f"Input:\n{case['input']}\n" in part
            assert f"[assistant] {said}" in part
        assert "## Runs that passed" in request.input  # ann passed: shown as what not to break
        assert "### Case 'ann': score 1.00; 2 of 2 trials passed" in request.input
    # the held-out cases were run (the memorized proposal passed on the cases) yet never shown
    held = {c["input"] for c in HOLDOUT}
    assert {s.input for s in harness.machine_runs(memorized)} & held == held
    never_held_out(harness.optimizer)
    assert len(harness.optimizer) == 6  # one re-ask in round 1, one in round 2


async def test_a_childs_parent_instructions_are_fixed_context_never_rewritten(tmp_path: Path) -> None:
    kid = make_kid(tmp_path)
    parent = kid.parent
    proposal = "Keep it short, in CAPITALS."
    harness = Keyed([block(proposal)])
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout/kid")
    others = {k: v for k, v in snapshot(parent).items() if not k.startswith("kid/")}
    result = await optimize(ws, "shout/kid", trials=1, rounds=1, candidates=1)
    assert result.report.candidate == "v2"
    [request] = harness.optimizer
    brief = request.input
    fixed = "## Fixed instructions from its parent shout (read first; you cannot change them)\n"
    assert fixed + PARENT + "\n" in brief
    assert "## Its current instructions (what you rewrite)\n" + KID + "\n" in brief
    assert brief.count(PARENT) == 1  # the part to rewrite is the child's own only
    assert (kid / "instructions.md").read_text(encoding="utf-8") == proposal + "\n"
    assert {k: v for k, v in snapshot(parent).items() if not k.startswith("kid/")} == others
    whole = PARENT + "\n\n" + proposal
    assert len(harness.machine_runs(whole)) == 7 + 7  # on the cases and held out: parent + proposal
    assert len(harness.machine_runs(PARENT + "\n\n" + KID)) == 7 + 7  # the live child, the same way
    assert {s.machine for s in harness.machine_runs()} == {"shout/kid"}
    assert commit(ws, "shout/kid").label == "v2"
    assert ws.load("shout/kid").instructions == whole
    assert ws.load("shout").instructions == PARENT
    assert {k: v for k, v in snapshot(parent).items() if not k.startswith("kid/")} == others
