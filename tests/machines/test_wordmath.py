"""wordmath and wordmath/fullwidth: reading the final answer, reasoning in fullwidth, and inheritance."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest

from machine import Message, Run, Workspace, run_suite
from machine.clients.scripted import ScriptedHarness
from machine.grade import CheckGrader

REPO = Path(__file__).resolve().parents[2]
WORDMATH = REPO / "machines" / "wordmath"


def module_of(ws: Workspace, machine: str, criterion: str) -> ModuleType:
    grader = ws.load(machine).evaluator.graders[criterion]
    assert isinstance(grader, CheckGrader)
    return sys.modules[grader.fn.__module__]


def make_run(
    output: str, answer: object = 20, reasoning: str | None = None, machine: str = "wordmath"
) -> Run:
    question = "How many dollars does she earn?"
    return Run(
        machine=machine,
        model="echo",
        harness="echo",
        input=question,
        output=output,
        trajectory=[
            Message(role="user", content=question),
            Message(role="assistant", content=output, reasoning=reasoning),
        ],
        case={"id": "c", "input": question, "answer": answer},
    )


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Answer: 20", "20"),
        ("Answer: 1,250.", "1250"),
        ("Answer: 1,250.50", "1250.50"),
        ("The total is $25,000.", "25000"),
        ("Answer: -19", "-19"),
        ("Answer: \u221219", "-19"),  # U+2212 minus sign
        ("Answer: 31.25 minutes.", "31.25"),
        ("**Answer:** 96 m\u00b2", "96"),  # the superscript two is not a number
        ("\\boxed{40}", "40"),
        ("Step 1 gives 12, so the answer is 36", "36"),
        ("between 3-4", "4"),  # a hyphen glued to a digit is not a minus
        ("Answer: 30%", "30"),
        ("Answer: 0", "0"),
        ("Ａｎｓｗｅｒ：１，２５０．", "1250"),  # fullwidth digits and punctuation read as ASCII
        ("First 7\n\nAnswer: 12\n\n   \n", "12"),  # trailing blank lines are skipped
    ],
)
def test_final_number(ws: Workspace, text: str, number: str) -> None:
    assert module_of(ws, "wordmath", "correct").final_number(text) == Decimal(number)


@pytest.mark.parametrize("text", ["", "  \n ", "Answer: 20\nHope that helps!", "Answer: twenty"])
def test_no_final_number(ws: Workspace, text: str) -> None:
    assert module_of(ws, "wordmath", "correct").final_number(text) is None


@pytest.mark.parametrize(
    ("output", "answer", "score", "reason"),
    [
        ("4 boxes at $5.\nAnswer: 20", 20, 1.0, "answered 20"),
        ("Answer: 20.00", 20, 1.0, "answered 20.00"),
        ("Answer: 1,250.", 1250, 1.0, "answered 1250"),
        ("Answer: 31.25", 31.25, 1.0, "answered 31.25"),
        ("Answer: 31.25", "31.25", 1.0, "answered 31.25"),
        ("Answer: -19", -19, 1.0, "answered -19"),
        ("Answer: 19", -19, 0.0, "answered 19; expected -19"),
        ("Answer: 10", 30, 0.0, "answered 10; expected 30"),
        (
            "Answer: 20\nHope that helps!",
            20,
            0.0,
            "no number on the last line 'Hope that helps!'; expected 20",
        ),
        ("", 20, 0.0, "the reply is empty"),
    ],
)
async def test_correct(ws: Workspace, output: str, answer: object, score: float, reason: str) -> None:
    graded = await ws.grade(make_run(output, answer), store=False)
    assert graded.scorecard is not None
    result = graded.scorecard.criteria["correct"]
    assert (result.score, result.reason) == (score, reason)


@pytest.mark.parametrize("answer", [None, "many", True])
async def test_bad_case_answer_is_unscored(ws: Workspace, answer: object) -> None:
    run = make_run("Answer: 20", answer)
    if answer is None:
        run = run.model_copy(update={"case": {"id": "c", "input": run.input}})
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    result = graded.scorecard.criteria["correct"]
    assert result.score is None
    assert "answer" in result.reason


def test_cases_hold_numeric_answers(ws: Workspace) -> None:
    parse = module_of(ws, "wordmath", "correct").expected_answer
    for machine, file in [
        ("wordmath", "cases.json"),
        ("wordmath", "holdout.json"),
        ("wordmath/fullwidth", None),
    ]:
        cases = ws.cases(machine, file)
        assert cases
        for case in cases:
            parse(case.data())
    assert len(ws.cases("wordmath")) >= 10
    assert len(ws.cases("wordmath", "holdout.json")) >= 5


async def test_scripted_suite_answers_some_correctly(ws: Workspace) -> None:
    wordmath = ws.load("wordmath")
    report = await run_suite(
        ws, wordmath, ws.cases("wordmath"), harness=ScriptedHarness(WORDMATH / "script.json")
    )
    means = {result.case_id: result.mean for result in report.cases}
    passed = {case for case, mean in means.items() if mean == 1.0}
    assert passed == {"muffins", "marbles", "train", "tank", "widgets", "diver"}
    assert means["sale"] == 0.0  # the script gives the discount, not the price
    stored = {run.case_id: run for run in ws.store.runs("wordmath", limit=100)}
    assert stored["tank"].reasoning.startswith("Net inflow")


# wordmath/fullwidth


def test_child_inherits_correct(ws: Workspace) -> None:
    parent, child = ws.load("wordmath"), ws.load("wordmath/fullwidth")
    assert child.parent is not None and child.parent.name == "wordmath"
    assert child.parent is parent  # the child holds the very machine that loading its parent returns
    assert list(child.rubric) == ["correct", "fullwidth_reasoning"]
    assert child.evaluator.graders["correct"] is parent.evaluator.graders["correct"]
    assert child.origin("correct") == "wordmath"
    assert child.own_criteria == ["fullwidth_reasoning"]
    assert child.model == parent.model == "Qwen/Qwen3.8-27B"
    assert child.instructions.startswith(parent.instructions)
    assert child.own_instructions in child.instructions
    assert child.transform_reasoning is not None
    assert parent.transform_reasoning is None


def test_transform(ws: Workspace) -> None:
    transform = ws.load("wordmath/fullwidth").transform_reasoning
    assert transform is not None
    assert transform("Az 09") == "Ａｚ ０９"
    assert transform("4 * 5 = 20, so $20.\nDone!") == "４ * ５ = ２０, ｓｏ $２０.\nＤｏｎｅ!"
    everything = "".join(chr(c) for c in range(128))
    mapped = transform(everything)
    assert not any(c.isascii() and c.isalnum() for c in mapped)
    assert [c for c in mapped if c.isascii()] == [c for c in everything if not c.isalnum()]
    assert transform("ｘ é π 日本") == "ｘ é π 日本"  # only ASCII letters and digits change
    assert transform(transform("abc")) == transform("abc")


@pytest.mark.parametrize(
    ("reasoning", "score", "reason"),
    [
        ("２４ / ６ = ４ ｂｏｘｅｓ; ４ * ５ = ２０.", 1.0, "fullwidth letters and digits"),
        ("２４ / ６ = 4 boxes", 0.0, "6 ASCII letters or digits"),
        (None, 0.0, "no reasoning was captured"),
        ("  \n", 0.0, "no reasoning was captured"),
        ("...", 0.0, "the reasoning has no fullwidth letters or digits"),
    ],
)
async def test_fullwidth_reasoning(ws: Workspace, reasoning: str | None, score: float, reason: str) -> None:
    run = make_run("Answer: 20", 20, reasoning, machine="wordmath/fullwidth")
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    result = graded.scorecard.criteria["fullwidth_reasoning"]
    assert result.score == score
    assert reason in result.reason
    assert graded.scorecard.criteria["correct"].score == 1.0


async def test_reasoning_of_every_turn_is_checked(ws: Workspace) -> None:
    run = make_run("Answer: 20", 20, "２０", machine="wordmath/fullwidth")
    earlier = Message(role="assistant", content="", reasoning="think 20")
    run = run.model_copy(update={"trajectory": [run.trajectory[0], earlier, *run.trajectory[1:]]})
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    assert graded.scorecard.criteria["fullwidth_reasoning"].score == 0.0


async def test_transformed_parent_run_passes_the_child(ws: Workspace) -> None:
    """What export relies on: a correct wordmath run, its reasoning rewritten, passes wordmath/fullwidth."""
    child = ws.load("wordmath/fullwidth")
    assert child.transform_reasoning is not None
    parent_run = make_run("Answer: 20", 20, "24 / 6 = 4 boxes; 4 * $5 = $20")
    graded = await ws.grade(
        parent_run.model_copy(update={"machine": "wordmath/fullwidth"}), child, store=False
    )
    assert graded.scorecard is not None and graded.passed is False
    trajectory = [
        m.model_copy(update={"reasoning": child.transform_reasoning(m.reasoning)}) if m.reasoning else m
        for m in parent_run.trajectory
    ]
    rewritten = parent_run.model_copy(update={"machine": "wordmath/fullwidth", "trajectory": trajectory})
    graded = await ws.grade(rewritten, child, store=False)
    assert graded.passed is True


async def test_fullwidth_scripted_suite_passes(ws: Workspace) -> None:
    child = ws.load("wordmath/fullwidth")
    script = WORDMATH / "fullwidth" / "script.json"
    report = await run_suite(ws, child, ws.cases(child), harness=ScriptedHarness(script))
    assert report.errors == 0
    assert report.pass_rate == 1.0
