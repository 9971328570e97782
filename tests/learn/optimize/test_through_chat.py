"""optimize end to end through the real chat-completions harness, against a local OpenAI-compatible
server that answers by the system prompt: the optimizer's calls and the machine's go through the same
client and endpoint, and the kept proposal is what the server's optimizer proposed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.openai_server import FakeOpenAI, Item, Recorded, text
from helpers.optimize import HOLDOUT, LIVE, answer, block, make_shout

from machine import open_workspace
from machine.learn import optimize
from machine.versions import versions

PROPOSED = "Say the input back in CAPITALS, every time."


def respond(request: Recorded) -> Item:
    messages: list[dict[str, Any]] = request.messages
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    if "You improve the instructions of another agent" in system:
        return text(block(PROPOSED, "Capital letters for every input."), prompt_tokens=900)
    said = answer(system, messages[-1]["content"])
    return text(said, prompt_tokens=40, completion_tokens=3)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=respond) as fake:
        yield fake


async def test_optimize_through_the_chat_completions_harness(tmp_path: Path, server: FakeOpenAI) -> None:
    folder = make_shout(tmp_path)
    ws = open_workspace(tmp_path, harness="openai", base_url=server.url + "/v1", budget=5.0)
    versions(ws, "shout")
    with anyio.fail_after(60):
        result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1, concurrency=4)
    await ws.aclose()
    report = result.report
    assert (report.kept, report.candidate) == ("r1.p1", "v2")
    assert (folder / "instructions.md").read_text(encoding="utf-8") == PROPOSED + "\n"
    bodies = [r.body for r in server.requests]
    systems = [b["messages"][0]["content"] for b in bodies]
    asked = [b for b, s in zip(bodies, systems, strict=True) if "You improve the instructions" in s]
    assert len(asked) == 1 and asked[0]["model"] == "thinkingmachines/Inkling"
    brief = asked[0]["messages"][-1]["content"]
    assert "# The machine: shout" in brief and "wanted 'BOB', got 'no idea'" in brief
    for case in HOLDOUT:
        assert case["input"] not in brief.lower()
    assert systems.count(LIVE) == 7 + 7 and systems.count(PROPOSED) == 7 + 7
    assert {b["model"] for b, s in zip(bodies, systems, strict=True) if s in (LIVE, PROPOSED)} == {
        "Qwen/Qwen3.8-27B"
    }
    assert len(server.requests) == 1 + 2 * (7 + 7)
    assert report.cost.optimizer == pytest.approx(900 * 3.74 / 1e6)
    assert report.cost.runs == pytest.approx(28 * (40 * 1.86 + 3 * 5.595) / 1e6)
    assert ws.budget.spent == pytest.approx(report.cost.total)
