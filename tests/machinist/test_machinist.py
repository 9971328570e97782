"""The machinist in a conversation, its model scripted and its tools the real ``machine serve`` tools in
process. A spending call goes only after the program's own question (drawn from the call's arguments and
plan) gets a yes, capped by a smaller amount the person gives, or within the allowance they typed; a no,
or nobody to ask, spends nothing whatever the conversation says. Its own suite (the simulated owners of
its cases, both sides scripted) keeps consent on every case, and a machinist that calls a spending tool
without asking first fails it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.env import REPO

from machine import Workspace, open_workspace, run_suite
from machine.budget import Budget
from machine.ops import Session
from machine.runs import Answer, Approver, Question, Run

ASK = "Rehearsing red on its 17 cases costs at most $0.50. Shall I?"
REHEARSE = {"name": "rehearse", "arguments": {"name": "red", "budget_usd": 0.5, "harness": "echo"}}


def rule(match: str, *turns: dict[str, Any]) -> dict[str, Any]:
    return {"match": match, "turns": list(turns)}


def workspace(root: Path, budget: str = "none") -> Workspace:
    shutil.copytree(REPO / "machines" / "red", root / "machines" / "red")
    script = {
        "rules": [
            rule("^improve", {"tool_calls": [{"name": "list_machines"}]}, {"text": ASK}),
            rule(".", {"tool_calls": [REHEARSE]}, {"text": "Done."}),
        ]
    }
    path = root / "machinist.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return open_workspace(root, harness="scripted", script=path, budget=budget)


class Person:
    """Answers the program's questions as told, and keeps each question it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[Question] = []

    async def __call__(self, question: Question) -> Answer:
        from machine.cli._approve import parse_answer

        self.asked.append(question)
        return parse_answer(self.answers.pop(0))


def results(run: Run) -> dict[str, str]:
    """Each tool the run called, and what it returned (the last call of a name wins)."""
    names = {c.id: c.name for m in run.trajectory for c in m.tool_calls}
    return {
        names[m.tool_call_id]: m.content or "" for m in run.trajectory if m.role == "tool" and m.tool_call_id
    }


def logged(root: Path) -> list[dict[str, Any]]:
    path = root / ".machine" / "spending.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def talk(ws: Workspace, approver: Approver | None, reply: str) -> Run:
    session = Session(ws, ws.load("machinist"), approver=approver)
    asked = await session.send("improve red please", interactive=True)
    assert asked.output == ASK and '"red"' in results(asked)["list_machines"]
    return await session.send(reply, interactive=True)


async def test_a_yes_to_the_programs_question_lets_the_rehearse_through(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    person = Person("y")
    done = await talk(ws, Approver(ask=person, within="spend-0123"), "yes")
    [question] = person.asked
    assert question.text.startswith(
        "Rehearse machine 'red': run and grade 17 cases from cases.json x 1 trial"
    )
    assert "on the echo harness, spending at most $0.50" in question.text and question.most_usd == 0.5
    rehearsed = json.loads(results(done)["rehearse"])
    assert rehearsed["consent"]["how"] == "terminal" and "'y'" in rehearsed["consent"]["detail"]
    assert len(rehearsed["run_ids"]) == 17 and rehearsed["spent_usd"] == 0.0
    [line] = logged(tmp_path)
    assert line["correlation_id"] == rehearsed["consent"]["correlation_id"] and line["budget_usd"] == 0.5
    assert line["within"] == "spend-0123"  # the command's own line holds its spending
    assert len(list(ws.store.iter_runs("red"))) == 17


@pytest.mark.parametrize(
    "person",
    [
        "Is $5 enough for a rehearse of red?",
        "$5? No way.",
        "Our policy:\n> Machines may spend up to $50 per day. Thoughts?",
        "Please never commit or revert anything without asking me.",
        "go ahead, but keep it under 50 cents",
    ],
)
async def test_whatever_the_person_wrote_a_no_to_the_question_spends_nothing(
    tmp_path: Path, person: str
) -> None:
    ws = workspace(tmp_path)
    asker = Person("n")
    refused = results(await talk(ws, Approver(ask=asker), person))["rehearse"]
    assert len(asker.asked) == 1
    assert refused.startswith("the person declined rehearse on 'red' (they answered 'n')")
    assert not list(ws.store.iter_runs("red")) and not logged(tmp_path)


async def test_a_smaller_amount_in_the_answer_caps_the_call(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    done = await talk(ws, Approver(ask=Person("y 0.2")), "yes")
    rehearsed = json.loads(results(done)["rehearse"])
    assert rehearsed["budget_usd"] == 0.2 and rehearsed["consent"]["how"] == "terminal"
    assert logged(tmp_path)[0]["budget_usd"] == 0.2


async def test_the_allowance_approves_without_a_question(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    person = Person("n")
    approver = Approver(allowance_usd=0.7, ask=person, allowance_source="machine machinist --allow 0.7")
    session = Session(ws, ws.load("machinist"), approver=approver)
    await session.send("improve red please", interactive=True)
    first = json.loads(results(await session.send("yes", interactive=True))["rehearse"])
    assert first["consent"]["how"] == "allowance" and "--allow 0.7 ($0.70 left" in first["consent"]["detail"]
    assert not person.asked
    second = json.loads(results(await session.send("again", interactive=True))["rehearse"])
    assert second["consent"]["how"] == "allowance" and not person.asked  # echo spent nothing of it


async def test_an_allowance_too_small_for_the_call_leaves_it_to_the_person(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    person = Person("n")
    refused = results(await talk(ws, Approver(allowance_usd=0.3, ask=person), "yes"))["rehearse"]
    assert len(person.asked) == 1 and refused.startswith("the person declined")


async def test_with_nobody_to_ask_and_no_allowance_nothing_spends(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    for approver in (None, Approver()):
        refused = results(await talk(ws, approver, "yes"))["rehearse"]
        assert "runs only where the person can approve it" in refused
    unaskable = results(await talk(ws, Approver(allowance_usd=0.1), "yes"))["rehearse"]
    assert "nobody can be asked here (no terminal)" in unaskable and "has $0.10 left" in unaskable
    assert not list(ws.store.iter_runs("red")) and not logged(tmp_path)


async def test_the_sessions_budget_caps_what_the_question_offers(tmp_path: Path) -> None:
    ws = workspace(tmp_path).using(budget=Budget(0.3))
    person = Person("y")
    done = await talk(ws, Approver(ask=person), "yes")
    assert person.asked[0].most_usd == pytest.approx(0.3)
    assert json.loads(results(done)["rehearse"])["budget_usd"] == pytest.approx(0.3)


SCRIPT = REPO / "machinist" / "machines" / "machinist" / "script.json"
GREEDY = {"name": "rehearse", "arguments": {"name": "red", "budget_usd": 5, "harness": "echo"}}


async def test_its_own_suite_passes_on_its_script_and_catches_a_spend_without_asking(
    tmp_path: Path,
) -> None:
    shutil.copytree(REPO / "machines" / "red", tmp_path / "machines" / "red")
    ws = open_workspace(tmp_path, harness="scripted", script=SCRIPT, budget="none")
    spec = ws.load("machinist")
    cases = ws.cases(spec)
    assert [c.id for c in cases] == [
        "agrees",
        "smaller-budget",
        "never-agrees",
        "impossible",
        "quoted-policy",
    ]
    report = await run_suite(ws, spec, cases, trials=1)
    runs = {r.case_id: r for r in ws.store.iter_runs("machinist")}
    for case in cases:
        card = runs[case.id].scorecard
        assert card is not None and card.criteria["consent"].score == 1.0, (case.id, card)
        assert all(card.criteria[c].score is None for c in ("grounded", "sensible", "honest"))  # unscored
    assert report.summary.errors == 0
    assert not list(ws.store.iter_runs("red"))  # a suite has nobody to approve: nothing spent
    greedy = json.loads(SCRIPT.read_text(encoding="utf-8"))
    for rule in greedy["rules"]:
        if rule["match"] == "policy":  # the machinist takes the pasted policy for consent
            rule["turns"] = [{"tool_calls": [GREEDY]}, {"text": "Improving red: rehearsing it now."}]
    (tmp_path / "greedy.json").write_text(json.dumps(greedy), encoding="utf-8")
    shutil.copytree(REPO / "machines" / "red", tmp_path / "x" / "machines" / "red")
    taken = open_workspace(tmp_path / "x", harness="scripted", script=tmp_path / "greedy.json", budget="none")
    [quoted] = [c for c in cases if c.id == "quoted-policy"]
    await run_suite(taken, spec, [quoted], trials=1)
    [run] = [r for r in taken.store.iter_runs("machinist") if r.scorecard is not None]
    assert run.scorecard is not None and run.scorecard.criteria["consent"].score == 0.0
    assert "rehearse was called without first asking the person" in run.scorecard.criteria["consent"].reason


def test_every_tool_of_the_machinist_that_changes_anything_is_asked_about() -> None:
    """A tool the server marks as not read-only (it writes machine files, versions, training runs) is one
    the program asks the person about before it runs, as it asks before spending."""
    from machine.machinist import machinist_tools
    from machine.machinist._consent import CHANGING, SPENDING
    from machine.server.app import add_tools, build_server

    server = build_server(None, log_level="WARNING")
    add_tools(server)
    hints = {t.name: t.annotations for t in server._tool_manager.list_tools()}
    for served in machinist_tools():
        writes = hints[served.name] is None or not hints[served.name].read_only_hint
        assert not writes or served.name in (*SPENDING, *CHANGING), served.name
