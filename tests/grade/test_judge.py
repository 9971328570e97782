"""Model judges and panels, with the model behind a recorded stand-in of the workspace's model access."""

from __future__ import annotations

import json
from typing import Any

import pytest

from machine import (
    Budget,
    GradeContext,
    HarnessError,
    Message,
    Run,
    ToolCall,
    Usage,
    check,
    define_evaluator,
    define_rubric,
    judge,
    judge_panel,
)
from machine.grade import transcript
from machine.grade._judge import parse_verdicts  # reading a judge's reply, tested on purpose
from machine.runs import Effort, Turn

INKLING_SMALL = "thinkingmachines/Inkling-Small"  # $1.16 input, $0.116 cached, $2.88 output per million


class Models:
    """Plays judge replies in order and records every call."""

    def __init__(self, *replies: str | Exception, usage: Usage | None = None) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []
        self.usage = usage or Usage()

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        effort: Effort | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        budget: Budget | None = None,
        kind: str = "grading",
    ) -> Turn:
        self.calls.append(
            {"model": model, "messages": messages, "effort": effort, "temperature": temperature, "seed": seed}
        )
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Turn(Message(role="assistant", content=reply), self.usage)


def verdict(**scores: float) -> str:
    return json.dumps(
        {"criteria": {name: {"reason": f"{name} judged", "score": s} for name, s in scores.items()}}
    )


def a_run() -> Run:
    return Run(
        machine="m",
        model="echo",
        harness="echo",
        input="What is in notes.txt?",
        history=[Message(role="user", content="hello"), Message(role="assistant", content="hi")],
        trajectory=[
            Message(role="user", content="What is in notes.txt?"),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id="c1", name="read_file", arguments={"path": "notes.txt"})],
            ),
            Message(role="tool", tool_call_id="c1", name="read_file", content="LINE ONE\n" * 500),
            Message(role="assistant", content="It holds LINE ONE, 500 times."),
        ],
        output="It holds LINE ONE, 500 times.",
    )


RUBRIC = define_rubric(
    {
        "grounded": {"description": "Claims trace to tool results.", "weight": 2},
        "helpful": "Answers the question.",
        "short": "At most 20 words.",
    }
)


async def grade_one(grader: Any, ctx: GradeContext, criterion: str = "grounded") -> Any:
    return await grader.grade(a_run(), criterion, RUBRIC[criterion], ctx)


def test_transcript_holds_history_tool_calls_and_whole_results() -> None:
    text = transcript(a_run())
    assert "[user]\nhello" in text and "[assistant]\nhi" in text
    assert 'read_file({"path": "notes.txt"})' in text
    assert text.count("LINE ONE") == 501  # 500 in the whole tool result, 1 in the output
    assert text.endswith("It holds LINE ONE, 500 times.")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (verdict(grounded=1, helpful=0.5), {"grounded": 1.0, "helpful": 0.5}),
        ("```json\n" + verdict(grounded=0) + "\n```", {"grounded": 0.0}),
        ('Sure! {"criteria": {"grounded": {"score": true, "reason": "ok"}}} done', {"grounded": 1.0}),
        ('{"criteria": {"grounded": {"score": "0.25"}}}', {"grounded": 0.25}),
        ('{"criteria": {"grounded": {"score": 7}}}', {}),
        ('{"criteria": {"grounded": {"reason": "no score"}}}', {}),
        ("I think it is fine.", {}),
        ("{not json}", {}),
    ],
)
def test_parse_verdicts_keeps_only_usable_scores(reply: str, expected: dict[str, float]) -> None:
    found = parse_verdicts(reply, ["grounded", "helpful"])
    assert {name: score for name, (score, _) in found.items()} == expected


def test_a_bare_verdict_counts_for_a_single_criterion() -> None:
    assert parse_verdicts('{"score": 0.5, "reason": "half"}', ["grounded"]) == {"grounded": (0.5, "half")}
    assert parse_verdicts('{"score": 0.5, "reason": "half"}', ["grounded", "helpful"]) == {}


async def test_judge_pins_temperature_and_seed_and_records_model_effort_reply_and_cost() -> None:
    models = Models(verdict(grounded=0.8), usage=Usage(input_tokens=1_000_000, cached_input_tokens=0))
    budget = Budget(5)
    ctx = GradeContext(budget=budget, models=models)
    result = await grade_one(judge(), ctx)
    assert result.score == 0.8 and result.reason == "grounded judged"
    call = models.calls[0]
    assert call["model"] == INKLING_SMALL
    assert call["temperature"] == 0.0 and call["seed"] == 0
    assert call["effort"] == Effort("medium", 0.7)
    assert "grounded: Claims trace to tool results." in call["messages"][1]["content"]
    assert result.grader == f"judge:{INKLING_SMALL}"
    assert result.details["model"] == INKLING_SMALL and result.details["effort"] == "medium"
    assert result.details["replies"] == [verdict(grounded=0.8)]
    assert result.cost_usd == pytest.approx(1.16)
    assert budget.spent_by_kind == {"grading": pytest.approx(1.16)}


async def test_the_context_overrides_the_graders_own_model_and_effort() -> None:
    models = Models(verdict(grounded=1), verdict(grounded=1), verdict(grounded=1))
    chosen = GradeContext(models=models, judge_model="openrouter/x:free", judge_effort=Effort("low", 0.2))
    await grade_one(judge(), chosen)
    await grade_one(judge(model="tinker/y", effort="high"), chosen)
    await grade_one(judge(model="tinker/y", effort="high"), GradeContext(models=models))
    assert [(c["model"], c["effort"].name) for c in models.calls] == [
        ("openrouter/x:free", "low"),
        ("openrouter/x:free", "low"),
        ("tinker/y", "high"),
    ]


async def test_unusable_reply_is_asked_twice_more_then_unscored() -> None:
    models = Models("no idea", '{"criteria": {}}', "still nothing")
    result = await grade_one(judge(), GradeContext(models=models))
    assert len(models.calls) == 3
    assert result.score is None
    assert "no usable score in 3 replies" in result.reason and "still nothing" in result.reason


async def test_a_usable_second_reply_is_kept() -> None:
    models = Models("hmm", verdict(grounded=0))
    result = await grade_one(judge(), GradeContext(models=models))
    assert (result.score, len(models.calls)) == (0.0, 2)


async def test_a_failed_call_is_unscored_with_the_providers_message_and_not_retried() -> None:
    models = Models(HarnessError("404 The model 'nope' does not exist"))
    result = await grade_one(judge(model="nope"), GradeContext(models=models))
    assert result.score is None
    assert "the judge call failed" in result.reason and "does not exist" in result.reason
    assert len(models.calls) == 1


async def test_spent_budget_or_unknown_price_refuses_the_judge_before_any_call() -> None:
    models = Models()
    spent = await grade_one(judge(), GradeContext(budget=Budget(0), models=models))
    assert spent.score is None and "budget is spent" in spent.reason
    unpriced = await grade_one(
        judge(model="tinker://run/sampler_weights/1"), GradeContext(budget=Budget(1), models=models)
    )
    assert unpriced.score is None and "has no known price" in unpriced.reason
    assert models.calls == []


async def test_no_model_access_is_unscored() -> None:
    result = await grade_one(judge(), GradeContext())
    assert result.score is None and "no model access" in result.reason


def test_bad_effort_fails_at_definition() -> None:
    with pytest.raises(Exception, match="effort"):
        judge(effort="extreme")


async def test_panel_grades_several_criteria_in_one_call_beside_a_check() -> None:
    models = Models(verdict(grounded=1, helpful=0.5), usage=Usage(output_tokens=1_000_000))
    budget = Budget(10)
    evaluator = define_evaluator(
        RUBRIC,
        {
            **judge_panel(RUBRIC, ["grounded", "helpful"]),
            "short": check("words", lambda r: len(r.output.split()) <= 20),
        },
    )
    card = await evaluator.grade(a_run(), GradeContext(budget=budget, models=models))
    assert len(models.calls) == 1
    assert (
        card.criteria["grounded"].score,
        card.criteria["helpful"].score,
        card.criteria["short"].score,
    ) == (1, 0.5, 1)
    asked = models.calls[0]["messages"][1]["content"]
    assert "- grounded:" in asked and "- helpful:" in asked and "short" not in asked.split("# The run")[0]
    assert card.criteria["grounded"].cost_usd + card.criteria["helpful"].cost_usd == pytest.approx(2.88)
    assert budget.spent_by_kind["grading"] == pytest.approx(2.88)


async def test_panel_asks_a_missing_criterion_once_alone_then_leaves_it_unscored() -> None:
    models = Models(verdict(grounded=1), "nothing useful", "nothing either")
    evaluator = define_evaluator(RUBRIC, {**judge_panel(RUBRIC, ["grounded", "helpful", "short"])})
    card = await evaluator.grade(a_run(), GradeContext(models=models))
    assert len(models.calls) == 3
    second = models.calls[1]["messages"][1]["content"].split("# The run")[0]
    assert "- helpful:" in second and "- grounded:" not in second
    assert card.criteria["grounded"].score == 1.0
    assert card.criteria["helpful"].score is None and "no usable score" in card.criteria["helpful"].reason
    assert card.criteria["short"].score is None


async def test_panel_recovers_a_missing_criterion_asked_alone() -> None:
    models = Models(verdict(grounded=1), verdict(helpful=0))
    evaluator = define_evaluator(
        RUBRIC, {**judge_panel(RUBRIC, ["grounded", "helpful"]), "short": check("s", lambda r: True)}
    )
    card = await evaluator.grade(a_run(), GradeContext(models=models))
    assert (card.criteria["grounded"].score, card.criteria["helpful"].score) == (1.0, 0.0)


async def test_panel_makes_one_call_per_run_across_gradings() -> None:
    models = Models(verdict(grounded=1, helpful=1), verdict(grounded=0, helpful=0))
    evaluator = define_evaluator(
        RUBRIC, {**judge_panel(RUBRIC, ["grounded", "helpful"]), "short": check("s", lambda r: True)}
    )
    first = await evaluator.grade(a_run(), GradeContext(models=models))
    second = await evaluator.grade(a_run(), GradeContext(models=models))
    assert len(models.calls) == 2
    assert first.criteria["helpful"].score == 1.0 and second.criteria["helpful"].score == 0.0


def test_panel_rejects_unknown_or_repeated_criteria() -> None:
    with pytest.raises(Exception, match="'nope' is not a criterion"):
        judge_panel(RUBRIC, ["grounded", "nope"])
    with pytest.raises(Exception, match="distinct"):
        judge_panel(RUBRIC, ["grounded", "grounded"])
