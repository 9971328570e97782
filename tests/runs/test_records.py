import re
import time
from datetime import UTC

import pytest

from machine import CriterionScore, Message, Run, Scorecard, Tag, ToolCall, Usage
from machine.runs import RunSummary, new_run_id
from machine.runs._records import now, timestamp


def score(name: str, value: float | None, weight: float = 1.0) -> CriterionScore:
    return CriterionScore(criterion=name, weight=weight, grader="check:x", score=value, reason="why")


def card(*scores: CriterionScore, pass_score: float = 1.0) -> Scorecard:
    return Scorecard(rubric_fingerprint="f", criteria={s.criterion: s for s in scores}, pass_score=pass_score)


def test_score_is_weighted_mean_of_scored_criteria_only() -> None:
    sc = card(score("a", 1.0, 3), score("b", 0.0, 1), score("c", None, 100))
    assert sc.score == pytest.approx(0.75)
    assert sc.unscored == ["c"]


def test_all_unscored_gives_no_score_and_no_verdict() -> None:
    sc = card(score("a", None), score("b", None))
    assert sc.score is None
    assert sc.passed is None


def test_empty_scorecard_has_no_score() -> None:
    assert card().score is None


def test_passes_only_at_full_score_by_default() -> None:
    assert card(score("a", 1.0), score("b", 1.0)).passed is True
    assert card(score("a", 1.0), score("b", 0.99)).passed is False
    assert card(score("a", 1.0), score("b", None)).passed is None  # b could still fail it


def test_passes_when_score_reaches_pass_score() -> None:
    assert card(score("a", 0.5), score("b", 1.0), pass_score=0.75).passed is True
    assert card(score("a", 0.5), score("b", 1.0), pass_score=0.76).passed is False


def test_with_pass_score_returns_new_scorecard() -> None:
    sc = card(score("a", 0.5))
    assert sc.with_pass_score(0.5).passed is True
    assert sc.passed is False


def test_cost_sums_criteria() -> None:
    a = score("a", 1.0).model_copy(update={"cost_usd": 0.25})
    b = score("b", 1.0).model_copy(update={"cost_usd": 0.5})
    assert card(a, b).cost_usd == pytest.approx(0.75)


def full_run() -> Run:
    call = ToolCall(id="c1", name="add", arguments={"a": 1}, raw_arguments='{"a": 1}')
    return Run(
        machine="red/strict",
        version="v2",
        model="Qwen/Qwen3.6-27B",
        harness="scripted",
        input="add",
        history=[Message(role="user", content="earlier")],
        trajectory=[
            Message(role="user", content="add"),
            Message(role="assistant", reasoning="think", tool_calls=[call]),
            Message(role="tool", content="err", tool_call_id="c1", name="add", is_error=True),
            Message(role="assistant", content="1"),
        ],
        output="1",
        usage=Usage(input_tokens=10, cached_input_tokens=3, output_tokens=2),
        cost_usd=0.0123,
        case_id="c1",
        case={"id": "c1", "expected": [1, 2]},
        trial=2,
        scorecard=card(score("a", 1.0, 2.5), score("b", None)),
        tags=[Tag(kind="correction", note="say more")],
    )


def test_run_round_trips_through_json_unchanged() -> None:
    run = full_run()
    again = Run.model_validate_json(run.model_dump_json())
    assert again == run
    assert again.scorecard is not None
    assert again.scorecard.unscored == ["b"]


def test_run_helpers_read_the_trajectory() -> None:
    run = full_run()
    assert [c.name for c in run.tool_calls] == ["add"]
    assert [m.content for m in run.tool_results] == ["err"]
    assert run.reasoning == "think"
    assert run.score == 1.0
    assert run.passed is None  # b, UNSCORED, could still fail it


def test_unscored_run_has_no_score() -> None:
    run = Run(machine="m", model="echo", harness="echo", input="x")
    assert (run.score, run.passed) == (None, None)
    assert RunSummary.of(run).score is None


def test_run_ids_are_unique_and_sortable() -> None:
    ids = [Run(machine="m", model="echo", harness="echo", input="x").id for _ in range(20)]
    assert len(set(ids)) == 20
    assert all(len(i.split("-")) == 3 for i in ids)


def test_usage_adds() -> None:
    total = Usage(input_tokens=1, cached_input_tokens=2, output_tokens=3) + Usage(input_tokens=10)
    assert total == Usage(input_tokens=11, cached_input_tokens=2, output_tokens=3)
    assert Usage().is_zero
    assert not total.is_zero


def test_run_ids_made_in_the_same_second_never_repeat() -> None:
    """A suite makes thousands of runs a second, and a repeated id would replace a stored run: 200,000 ids
    drawn at once are all different (with 32 random bits, about four would repeat)."""
    ids = [new_run_id() for _ in range(200_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(run_id.split("-")[2]) == 16 for run_id in ids[:10])


def test_timestamps_are_in_utc() -> None:
    moment = now()
    assert moment.tzinfo is UTC
    assert timestamp(moment).endswith("Z") and "+" not in timestamp(moment)


def test_run_ids_read_as_the_utc_time_then_random_hex() -> None:
    before = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    run_id = new_run_id()
    after = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{16}", run_id), run_id
    assert before <= run_id[:15] <= after


def test_usage_adds_every_count() -> None:
    total = Usage(input_tokens=5, cached_input_tokens=2, output_tokens=3) + Usage(
        input_tokens=7, cached_input_tokens=4, output_tokens=6
    )
    assert total == Usage(input_tokens=12, cached_input_tokens=6, output_tokens=9)
