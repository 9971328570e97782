"""A run's trace from its facts: the facts a run's process gathers (``_trace_record``) survive the pipe as
plain values, and the exporter's span tree (``_trace_spans``) names every call, result, failure and
grade as the GenAI conventions do. The whole path, into a real backend, is test_tracing's."""

from __future__ import annotations

import pickle
import time

from machine.budget import Usage
from machine.runs import CriterionScore, Message, Run, Scorecard, ToolCall
from machine.workspace._trace_record import graded_facts, run_facts
from machine.workspace._trace_spans import trace_ids, tree_of

T0 = 1_765_000_000_000_000_000


def _run(**fields: object) -> Run:
    card = Scorecard(
        rubric_fingerprint="f",
        criteria={
            "loud": CriterionScore(criterion="loud", weight=1, grader="check", score=1.0),
            "kind": CriterionScore(criterion="kind", weight=1, grader="judge", score=None, reason="no judge"),
        },
    )
    said = [
        Message(role="user", content="hi"),
        Message(role="assistant", tool_calls=[ToolCall(id="c1", name="shout", arguments={"text": "hi"})]),
        Message(role="tool", content="no voice", tool_call_id="c1", name="shout", is_error=True),
        Message(role="assistant", content="HI"),
    ]
    return Run(
        machine="shout",
        model="m-1",
        harness="scripted",
        input="hi",
        trajectory=said,
        output="HI",
        scorecard=card,
        **fields,
    )


def _steps(run: Run) -> list[tuple[str, int, Message, Usage | None]]:
    said = run.trajectory
    usage = Usage(input_tokens=7, output_tokens=2, cached_input_tokens=3)
    return [
        ("assistant", T0 + 10, said[1], usage),
        ("tool_call", T0 + 11, said[1], None),
        ("tool_result", T0 + 20, said[2], None),
        ("assistant", T0 + 30, said[3], usage),
    ]


def test_a_runs_facts_cross_the_pipe_and_make_its_span_tree() -> None:
    run = _run(case_id="q1", trial=2)
    facts = pickle.loads(pickle.dumps(run_facts(run, _steps(run), T0, T0 + 40, False, None)))
    tree = tree_of(facts)
    assert tree["ids"] == trace_ids(run.id) and tree["name"] == "invoke_agent shout"
    a = tree["attributes"]
    assert a["machine.criterion.loud.score"] == 1.0 and a["machine.unscored"] == ["kind"]
    assert (
        "machine.criterion.kind.score" not in a and a["machine.case.id"] == "q1" and a["machine.trial"] == 2
    )
    assert "gen_ai.input.messages" not in a and tree["error"] is None
    chat, tool, answer = tree["children"]
    assert [chat["name"], tool["name"], answer["name"]] == ["chat m-1", "execute_tool shout", "chat m-1"]
    assert (chat["start"], chat["end"], tool["start"], tool["end"]) == (T0, T0 + 10, T0 + 11, T0 + 20)
    assert answer["start"] == T0 + 20 and answer["end"] == T0 + 30
    assert chat["attributes"]["gen_ai.usage.cache_read.input_tokens"] == 3
    assert chat["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert tool["error"] == "no voice" and tool["attributes"]["error.type"] == "tool_error"


def test_content_rides_on_each_step_when_captured() -> None:
    run = _run()
    tree = tree_of(run_facts(run, _steps(run), T0, T0 + 40, True, None))
    chat, tool, answer = tree["children"]
    assert chat["attributes"]["gen_ai.input.messages"].startswith('[{"role": "user"')
    assert tool["attributes"]["gen_ai.tool.call.arguments"] == '{"text": "hi"}'
    assert tool["attributes"]["gen_ai.tool.call.result"] == "no voice"
    assert '"HI"' in answer["attributes"]["gen_ai.output.messages"]
    assert '"tool_call_response"' in answer["attributes"]["gen_ai.input.messages"]


def test_a_failed_run_says_so_and_a_call_without_result_ends_with_the_run() -> None:
    run = _run(status="error", error="the harness fell over")
    steps = _steps(run)[:2]
    tree = tree_of(run_facts(run, steps, T0, T0 + 40, False, None))
    assert tree["error"] == "the harness fell over"
    assert tree["attributes"]["error.type"] == "run_failed"
    assert tree["children"][1]["end"] == T0 + 10  # the last step's time


def test_a_run_graded_later_adds_a_grade_span_to_its_own_trace() -> None:
    run = _run()
    now = time.time_ns()
    tree = tree_of(graded_facts(run, now))
    assert tree["parent"] == trace_ids(run.id) and tree["name"] == "grade shout"
    assert tree["end"] == now and tree["start"] <= now
    assert tree["attributes"]["machine.criterion.loud.score"] == 1.0
    assert tree["attributes"]["machine.run.id"] == run.id and not tree["children"]
