"""Files to import, written as their own tools write them: an Inspect log through ``inspect_ai``'s log API,
a chat JSONL as an export writes its rows, an OTLP/JSON trace of GenAI spans as a tracer's file exporter
writes one; and a workspace with one machine graded by a check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from machine.workspace import Workspace

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine
from .rubric import rubric

machine = define_machine(
    name="shout",
    intent="Shout the input back.",
    instructions="Repeat the input in capital letters.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"loud": check("loud", lambda r: r.output == r.output.upper())}),
)
"""
RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"loud": "The reply is in capitals."})
"""
KEY = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
"""A key of a known shape, which the store must never keep."""


def workspace(root: Path) -> Workspace:
    folder = root / "machines" / "shout"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY)
    (folder / "rubric.py").write_text(RUBRIC_PY)
    return Workspace(root)


def inspect_log(path: Path, samples: int = 2) -> Path:
    """An Inspect log of ``samples`` samples (a tool call and its result in each), written by inspect_ai."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
        ModelOutput,
        ModelUsage,
    )
    from inspect_ai.tool import ToolCall

    model = "openai/gpt-4o-mini"
    made = [
        EvalSample(
            id=f"q{i}",
            epoch=1,
            input=f"roses {i}",
            target="RED",
            messages=[
                ChatMessageSystem(content="Be loud."),
                ChatMessageUser(content=f"roses {i}"),
                ChatMessageAssistant(
                    content="", tool_calls=[ToolCall(id="c1", function="look", arguments={"at": "roses"})]
                ),
                ChatMessageTool(content=f"they are red, key {KEY}", tool_call_id="c1", function="look"),
                ChatMessageAssistant(content=f"RED {i}"),
            ],
            output=ModelOutput.from_content(model, f"RED {i}"),
            model_usage={model: ModelUsage(input_tokens=10, output_tokens=3, total_tokens=13)},
        )
        for i in range(samples)
    ]
    spec = EvalSpec(
        created="2026-01-05T10:00:00+00:00",
        task="shout",
        dataset=EvalDataset(),
        model=model,
        config=EvalConfig(),
    )
    write_eval_log(EvalLog(eval=spec, samples=made, status="success"), str(path))
    return path


def chat_row(i: int) -> dict[str, Any]:
    """One conversation as an export writes it."""
    return {
        "messages": [
            {"role": "system", "content": "Repeat the input in capital letters."},
            {"role": "user", "content": f"hello {i}, my key is {KEY}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "shout", "arguments": '{"text": "hi"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "HI"},
            {"role": "assistant", "content": f"HELLO {i}"},
        ],
        "tools": [],
        "metadata": {"model": "teacher", "case_id": f"case-{i}", "trial": 1},
    }


def chat_jsonl(path: Path, rows: int = 3) -> Path:
    path.write_text("".join(json.dumps(chat_row(i)) + "\n" for i in range(rows)))
    return path


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def _span(trace: str, span: str, parent: str | None, start: int, **attributes: Any) -> dict[str, Any]:
    made = {
        "traceId": trace,
        "spanId": span,
        "name": f"{attributes['gen_ai.operation.name']} x",
        "kind": 3,
        "startTimeUnixNano": str(1767607200_000_000_000 + start),
        "endTimeUnixNano": str(1767607201_000_000_000 + start),
        "attributes": [_attribute(k, v) for k, v in attributes.items()],
        "status": {},
    }
    if parent:
        made["parentSpanId"] = parent
    return made


def otlp_trace(path: Path, content: bool = True) -> Path:
    """One agent's turn (an ``invoke_agent`` span over two ``chat`` spans and a tool's span) and, in a
    second trace, a lone model call; with ``content`` False, recorded without messages."""
    asked = [{"role": "user", "parts": [{"type": "text", "content": "whisper"}]}]
    called = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "t1", "name": "shout", "arguments": {"text": "whisper"}}],
        }
    ]
    answered = [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "t1", "response": "WHISPER"}]}
    ]
    final = [
        {"role": "assistant", "parts": [{"type": "text", "content": "WHISPER"}], "finish_reason": "stop"}
    ]
    texts = lambda given, said: (  # noqa: E731
        {"gen_ai.input.messages": given, "gen_ai.output.messages": said} if content else {}
    )
    usage = {"gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 5}
    spans = [
        _span(
            "a" * 32,
            "1" * 16,
            None,
            0,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shout"},
        ),
        _span(
            "a" * 32,
            "2" * 16,
            "1" * 16,
            1,
            **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x", **usage},
            **texts(asked, called),
        ),
        _span(
            "a" * 32,
            "3" * 16,
            "1" * 16,
            2,
            **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "shout"},
        ),
        _span(
            "a" * 32,
            "4" * 16,
            "1" * 16,
            3,
            **{"gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-x-1", **usage},
            **texts([*asked, *called, *answered], final),
        ),
        _span(
            "b" * 32,
            "5" * 16,
            None,
            4,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-y",
                "gen_ai.system_instructions": [{"type": "text", "content": "Be loud."}],
            },
            **texts(
                [{"role": "user", "parts": [{"type": "text", "content": "psst"}]}],
                [{"role": "assistant", "parts": [{"type": "text", "content": "PSST"}]}],
            ),
        ),
    ]
    document = {
        "resourceSpans": [
            {"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}
        ]
    }
    path.write_text(json.dumps(document))
    return path
