"""The pirate machine: counting pirate emoji the way a reader sees them, and its judged criteria."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from machine import Message, Run, Workspace
from machine.grade import CheckGrader

REPO = Path(__file__).resolve().parents[2]
FLAG = "\U0001f3f4\u200d\u2620\ufe0f"  # 🏴‍☠️: black flag, ZWJ, skull and crossbones, VS16
SKULL = "\u2620\ufe0f"  # ☠️
BARE_SKULL = "\u2620"  # ☠ without the variation selector
SWORDS = "\u2694\ufe0f"  # ⚔️


def pirate_module(ws: Workspace) -> ModuleType:
    grader = ws.load("pirate").evaluator.graders["emoji"]
    assert isinstance(grader, CheckGrader)
    return sys.modules[grader.fn.__module__]


def make_run(output: str) -> Run:
    question = "How do I restart my phone?"
    return Run(
        machine="pirate",
        model="echo",
        harness="echo",
        input=question,
        output=output,
        trajectory=[Message(role="user", content=question), Message(role="assistant", content=output)],
    )


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Arr, no emoji here.", 0),
        (FLAG, 1),
        (FLAG + FLAG, 2),
        (SKULL, 1),
        (BARE_SKULL, 1),
        (FLAG + SKULL, 2),  # the flag's own skull is not counted again
        ("\U0001f3f4\u200d\u2620", 1),  # the flag without VS16 is still one flag
        ("\U0001f3f4", 0),  # a plain black flag is not a pirate flag
        (SWORDS + "\u2694", 2),
        ("\u2693 \U0001f99c \U0001f30a", 3),
        ("\U0001f600 \U0001f680 \u2693", 1),  # other emoji are neither counted nor penalized
        ("\ufe0f\ufe0f", 0),
    ],
)
def test_counting(ws: Workspace, text: str, count: int) -> None:
    assert len(pirate_module(ws).pirate_emoji(text)) == count


def test_every_listed_emoji_counts_once(ws: Workspace) -> None:
    module = pirate_module(ws)
    for emoji in module.PIRATE_EMOJI:
        assert module.pirate_emoji(f"Arr {emoji}\ufe0f matey") == [emoji]
    listed = (REPO / "machines" / "pirate" / "instructions.md").read_text(encoding="utf-8").splitlines()[-1]
    assert sorted(module.pirate_emoji(listed)) == sorted(module.PIRATE_EMOJI)


@pytest.mark.parametrize(
    ("output", "score"),
    [
        ("Arr, just turn it off and on again, matey.", 0.0),
        (f"Arr {FLAG}", 1.0),
        (f"Arr {FLAG} ye scallywag {SKULL} \u2693 \U0001f99c", 1.0),  # four, the flag counted once
        (f"{FLAG} {SKULL} \u2693 \U0001f99c \U0001f30a", 0.0),  # five
        ("\U0001f4b0" * 5, 0.0),
    ],
)
async def test_emoji_check(ws: Workspace, output: str, score: float) -> None:
    graded = await ws.grade(make_run(output), store=False)
    assert graded.scorecard is not None
    result = graded.scorecard.criteria["emoji"]
    assert result.score == score
    assert result.reason


async def test_failure_reasons(ws: Workspace) -> None:
    none = await ws.grade(make_run("Arr."), store=False)
    many = await ws.grade(make_run("\u2693" * 5), store=False)
    assert none.scorecard is not None and many.scorecard is not None
    assert none.scorecard.criteria["emoji"].reason == "no pirate emoji; use one to four"
    assert many.scorecard.criteria["emoji"].reason.startswith("5 pirate emoji")


async def test_judged_criteria_are_unscored(ws: Workspace) -> None:
    pirate = ws.load("pirate")
    judged = ["answers_question", "pirate_voice", "nothing_modern", "seafaring_metaphor"]
    assert [name for name in pirate.rubric if pirate.evaluator.graders[name].kind == "judge"] == judged
    graded = await ws.grade(make_run(f"Give yer talkin' slate a good shake, matey {FLAG}"), store=False)
    assert graded.scorecard is not None
    for name in judged:
        assert graded.scorecard.criteria[name].score is None
        assert graded.scorecard.criteria[name].reason
    assert graded.score == 1.0
    assert len(ws.cases("pirate")) >= 8
