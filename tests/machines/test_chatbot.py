"""The chatbot machine: its length and filler checks, and its judged criteria left UNSCORED."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from machine import Message, Run, Workspace
from machine._graders import CheckGrader

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(REPO, data_dir=tmp_path / ".machine")  # never writes into the repository


def chatbot_module(ws: Workspace) -> ModuleType:
    grader = ws.load("chatbot").evaluator.graders["no_filler"]
    assert isinstance(grader, CheckGrader)
    return sys.modules[grader.fn.__module__]


def make_run(output: str, question: str = "What is the boiling point of water?") -> Run:
    return Run(
        machine="chatbot",
        model="echo",
        harness="echo",
        input=question,
        output=output,
        trajectory=[Message(role="user", content=question), Message(role="assistant", content=output)],
    )


async def criteria(ws: Workspace, output: str) -> dict[str, tuple[float | None, str]]:
    graded = await ws.grade(make_run(output), store=False)
    assert graded.scorecard is not None
    return {name: (c.score, c.reason) for name, c in graded.scorecard.criteria.items()}


def test_rubric_and_graders(ws: Workspace) -> None:
    chatbot = ws.load("chatbot")
    assert list(chatbot.rubric) == ["answers", "honest", "concise", "no_filler"]
    assert chatbot.rubric["answers"].weight == 3
    kinds = {name: grader.kind for name, grader in chatbot.evaluator.graders.items()}
    assert kinds == {"answers": "judge", "honest": "judge", "concise": "check", "no_filler": "check"}
    assert chatbot.model == "Qwen/Qwen3.8-27B"
    assert chatbot.tools == ()
    assert len(ws.cases("chatbot")) >= 8


@pytest.mark.anyio
@pytest.mark.parametrize(("words", "score"), [(1, 1.0), (150, 1.0), (151, 0.0), (400, 0.0)])
async def test_concise_counts_words(ws: Workspace, words: int, score: float) -> None:
    result = await criteria(ws, " ".join(["word"] * words))
    assert result["concise"][0] == score
    assert str(words) in result["concise"][1]


@pytest.mark.anyio
@pytest.mark.parametrize("output", ["", "   \n\t "])
async def test_empty_reply_is_not_concise_but_zero(ws: Workspace, output: str) -> None:
    assert (await criteria(ws, output))["concise"] == (0.0, "the reply is empty")


@pytest.mark.parametrize(
    ("output", "filler"),
    [
        ("Great question! Water boils at 100 °C.", "great question"),
        ("great question: 100 °C.", "great question"),
        ("**Great question!** 100 °C.", "great question"),
        ("\u201cGood question.\u201d 100 °C.", "good question"),
        ("> _Excellent question_ -- 100 °C.", "excellent question"),
        ("Certainly! It boils at 100 °C.", "certainly"),
        ("Absolutely, it is 100 °C.", "absolutely"),
        ("Of course! 100 °C.", "of course"),
        ("Sure, 100 °C at sea level.", "sure"),
        ("As an AI, I cannot boil water, but 100 °C.", "as an ai"),
        ("As an AI language model, I think 100 °C.", "as an ai"),
        ("I\u2019d be happy to help: 100 °C.", "i'd be happy to"),
        ("Thanks for asking! 100 °C.", "thanks for asking"),
        ("Water boils at 100 °C at sea level.", None),
        ("Certainly not: at altitude it boils lower.", None),
        ("Of course.", None),
        ("Surely you mean at sea level? 100 °C.", None),
        ("Greatness aside, 100 °C.", None),
        ("As anyone knows, 100 °C.", None),
        ("", None),
    ],
)
def test_filler_openings(ws: Workspace, output: str, filler: str | None) -> None:
    assert chatbot_module(ws).filler_opening(output) == filler


@pytest.mark.anyio
async def test_no_filler_reason_names_the_phrase(ws: Workspace) -> None:
    result = await criteria(ws, "Great question! 100 °C.")
    assert result["no_filler"] == (0.0, "opens with the filler 'great question'")
    assert (await criteria(ws, "100 °C."))["no_filler"][0] == 1.0


@pytest.mark.anyio
async def test_judged_criteria_are_unscored_not_zero(ws: Workspace) -> None:
    graded = await ws.grade(make_run("Water boils at 100 °C at sea level."), store=False)
    assert graded.scorecard is not None
    for name in ("answers", "honest"):
        result = graded.scorecard.criteria[name]
        assert result.score is None
        assert result.reason
    assert sorted(graded.scorecard.unscored) == ["answers", "honest"]
    assert graded.score == 1.0  # the checks alone, with the judged criteria kept out of the mean
