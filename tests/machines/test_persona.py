"""persona, the simulated user: its checks look at everything it said in the conversation."""

from __future__ import annotations

import pytest

from machine import Message, Run, Workspace


def last_turn(*said: str) -> Run:
    """persona's last turn after saying ``said[:-1]``, each answered by the assistant."""
    history = [Message(role="user", content="scenario: you want the boiling point of water")]
    for text in said[:-1]:
        history += [Message(role="assistant", content=text), Message(role="user", content="100 °C.")]
    return Run(
        machine="persona", model="echo", harness="echo", input="100 °C.", history=history, output=said[-1]
    )


async def scores(ws: Workspace, run: Run) -> dict[str, tuple[float | None, str]]:
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    return {name: (c.score, c.reason) for name, c in graded.scorecard.criteria.items()}


def test_rubric_and_graders(ws: Workspace) -> None:
    persona = ws.load("persona")
    assert list(persona.rubric) == ["stays_in_role", "keeps_secret", "ends_when_done"]
    kinds = {name: grader.kind for name, grader in persona.evaluator.graders.items()}
    assert kinds == {"stays_in_role": "judge", "keeps_secret": "check", "ends_when_done": "check"}
    assert persona.counterpart is None and persona.tools == ()
    assert "[done]" in persona.instructions


async def test_a_proper_ending(ws: Workspace) -> None:
    result = await scores(ws, last_turn("What temperature does water boil at?", "Thanks! [done]"))
    assert result["keeps_secret"] == (1.0, "never mentions being simulated")
    assert result["ends_when_done"] == (1.0, "ended with [done]")
    assert result["stays_in_role"][0] is None  # a judge, UNSCORED without a judge model here


@pytest.mark.parametrize(
    ("said", "leak"),
    [
        (("As an AI, I wonder: what temperature?", "Thanks [done]"), "As an AI"),
        (("What temperature?", "My scenario says I am done. [done]"), "My scenario"),
        (("I\u2019m an AI playing a user. What temperature?", "ok [done]"), "I'm an AI"),
        (("What temperature? (simulated user)", "ok [done]"), "simulated"),
    ],
)
async def test_giving_itself_away_anywhere_in_the_conversation(
    ws: Workspace, said: tuple[str, ...], leak: str
) -> None:
    score, reason = (await scores(ws, last_turn(*said)))["keeps_secret"]
    assert score == 0.0
    assert reason == f"gives itself away with {leak!r}"


async def test_not_ending_or_ending_early(ws: Workspace) -> None:
    never = (await scores(ws, last_turn("What temperature?", "And in Fahrenheit?")))["ends_when_done"]
    assert never == (0.0, "its last message does not end the conversation with [done]")
    early = (await scores(ws, last_turn("Thanks [done]", "Bye [done]")))["ends_when_done"]
    assert early == (0.0, "wrote [done] before its last message")
