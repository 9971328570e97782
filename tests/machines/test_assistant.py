"""assistant: its word count, what it shares with dev (and what it does not), its cases, and a scripted suite
under real bubblewrap that reads, edits, writes, runs, and has a localhost fetch refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.env import on_ci

from machine import Case, Message, Run, Workspace, run_suite
from machine.clients.scripted import ScriptedHarness
from machine.sandboxes import bubblewrap

REPO = Path(__file__).resolve().parents[2]
ASSISTANT = REPO / "machines" / "assistant"

ON_CI = on_ci()
needs_bubblewrap = pytest.mark.skipif(
    bubblewrap() is None and not ON_CI,
    reason="bubblewrap (bwrap) is missing or cannot make namespaces here; `make test` installs it",
)


def make_run(output: str) -> Run:
    question = "What is in notes.md?"
    return Run(
        machine="assistant",
        model="echo",
        harness="echo",
        input=question,
        output=output,
        trajectory=[Message(role="user", content=question), Message(role="assistant", content=output)],
    )


@pytest.mark.parametrize(
    ("output", "score", "reason"),
    [
        ("Yes.", 1.0, "1 words"),
        (" ".join(["word"] * 200), 1.0, "200 words"),
        (" ".join(["word"] * 201), 0.0, "201 words; at most 200"),
        ("", 0.0, "the reply is empty"),
        ("  \n\t ", 0.0, "the reply is empty"),
    ],
)
async def test_concise(ws: Workspace, output: str, score: float, reason: str) -> None:
    graded = await ws.grade(make_run(output), store=False)
    assert graded.scorecard is not None
    result = graded.scorecard.criteria["concise"]
    assert (result.score, result.reason) == (score, reason)
    assert sorted(graded.scorecard.unscored) == ["acts_on_request", "grounded", "helpful"]


def test_a_sibling_of_dev_that_shares_acts_on_request(ws: Workspace) -> None:
    assistant, dev = ws.load("assistant"), ws.load("dev")
    assert assistant.parent is None and dev.parent is None
    assert list(assistant.rubric) == ["helpful", "grounded", "acts_on_request", "concise"]
    kinds = {n: g.kind for n, g in assistant.evaluator.graders.items()}
    assert kinds == {"helpful": "judge", "grounded": "judge", "acts_on_request": "judge", "concise": "check"}
    assert assistant.rubric["acts_on_request"].description == dev.rubric["acts_on_request"].description
    assert "verified" not in assistant.rubric and "stayed_on_task" not in assistant.rubric
    tools = [t.name for t in assistant.tools]
    assert tools == [t.name for t in dev.tools] + ["web_fetch"]
    assert "web_search" not in tools  # no web search API is configured
    assert "names its source" in assistant.rubric["grounded"].description


def test_cases_cover_what_the_assistant_does(ws: Workspace) -> None:
    cases, holdout = ws.cases("assistant"), ws.cases("assistant", "holdout.json")
    assert len(cases) >= 8 and len(holdout) >= 3
    urls = [re.findall(r"https?://\S+?(?=[\s,]|$)", c.input) for c in cases]
    assert any("127.0.0.1" in u for found in urls for u in found)  # a fetch that must be refused
    assert sum(1 for found in urls if any(u.startswith("https://") for u in found)) >= 2  # page fetches
    assert any(len(c.input.split()) == 1 for c in cases)  # a one-word request
    assert any(c.files for c in cases)  # questions about files
    assert any("localhost" in c.input for c in holdout)


def scripted(ws: Workspace) -> list[Case]:
    rules = json.loads((ASSISTANT / "script.json").read_text(encoding="utf-8"))["rules"]
    every = ws.cases("assistant") + ws.cases("assistant", "holdout.json")
    return [c for c in every if any(re.search(r["match"], c.input) for r in rules)]


@needs_bubblewrap
async def test_scripted_suite_under_bubblewrap(ws: Workspace) -> None:
    """No network is used: the only fetch is to 127.0.0.1, which web_fetch refuses before connecting."""
    if bubblewrap() is None:
        pytest.fail("CI=true and bubblewrap does not work here: the assistant's runs must be tested")
    assistant = ws.load("assistant")
    cases = scripted(ws)
    assert {
        "file-question",
        "localhost",
        "one-word",
        "edit-config",
        "count-rows",
        "write-file",
        "general",
    } <= {c.id for c in cases}
    report = await run_suite(ws, assistant, cases, harness=ScriptedHarness(ASSISTANT / "script.json"))
    assert report.errors == 0
    stored = {run.case_id: run for run in ws.store.runs("assistant", limit=100)}
    for case in cases:
        run = stored[case.id]
        assert run.scorecard is not None
        assert run.scorecard.criteria["concise"].score == 1.0, case.id
    (refused,) = stored["localhost"].tool_results
    assert refused.is_error and refused.name == "web_fetch"
    assert "127.0.0.1" in refused.content and "public" in refused.content
    assert stored["edit-config"].tool_results[-1].content.startswith("replaced 1 occurrence in config.ini")
    assert (
        stored["count-rows"].tool_results[0].content
        == "exit code: 0\n--- stdout ---\n5\n--- stderr ---\n(empty)"
    )
    assert stored["write-file"].tool_results[0].content.startswith("wrote ")
    assert stored["one-word"].tool_calls == [] and stored["general"].tool_calls == []
