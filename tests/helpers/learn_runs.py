"""A workspace for the learning tests: ``calc`` (two tools, one that fails on a zero, reasoning on every
turn, a check against each case's answer) with its cases, held-out cases and a script for the scripted
harness, and ways to put graded runs straight into its store."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from machine import Run, Workspace, open_workspace
from machine.runs import CriterionScore, Message, Scorecard, Tag, Timings, ToolCall

CALC_RUBRIC = """\
from machine import define_rubric

rubric = define_rubric({"right": "The reply ends with the case's answer."})
"""

CALC_PY = """\
from machine import check, define_evaluator, define_machine, tool

from .rubric import rubric


@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two whole numbers.\"\"\"
    return a + b


@tool
def divide(a: int, b: int) -> float:
    \"\"\"Divide a by b.\"\"\"
    return a / b


def _right(run, case):
    return run.output.strip().endswith(str(case["answer"]))


machine = define_machine(
    name="calc",
    intent="Do small sums with its tools.",
    instructions="Use the tools, then give the number alone.",
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"right": check("ends_with_answer", _right)}),
    tools=[add, divide],
)
"""

CASES = [
    {"id": "sum", "input": "add 2 and 3", "answer": 5},
    {"id": "half", "input": "half of 6", "answer": 3},
    {"id": "miss", "input": "add 1 and 3, carelessly", "answer": 4},
]
HOLDOUT = [{"id": "held", "input": "add 10 and 20", "answer": 30}]

SCRIPT = {
    "rules": [
        {
            "match": "^add 2 and 3",
            "turns": [
                {
                    "reasoning": "I add 2 and 3.",
                    "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}],
                },
                {"reasoning": "The tool says 5.", "text": "5"},
            ],
        },
        {
            "match": "^half of 6",
            "turns": [
                {
                    "reasoning": "Divide by zero?",
                    "tool_calls": [{"name": "divide", "arguments": {"a": 6, "b": 0}}],
                },
                {
                    "reasoning": "No: by two.",
                    "tool_calls": [{"name": "divide", "arguments": {"a": 6, "b": 2}}],
                },
                {"reasoning": "It is 3.", "text": "3"},
            ],
        },
        {"match": "carelessly", "turns": [{"reasoning": "Roughly 7.", "text": "7"}]},
        {"match": "^add 10 and 20", "turns": [{"text": "30"}]},
    ]
}

START = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def write_calc(root: Path) -> Path:
    """The calc workspace under ``root``; its script's path."""
    folder = root / "machines" / "calc"
    folder.mkdir(parents=True)
    (folder / "rubric.py").write_text(CALC_RUBRIC, encoding="utf-8")
    (folder / "machine.py").write_text(CALC_PY, encoding="utf-8")
    (folder / "cases.json").write_text(json.dumps(CASES), encoding="utf-8")
    (folder / "holdout.json").write_text(json.dumps(HOLDOUT), encoding="utf-8")
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return script


def calc_workspace(root: Path) -> Workspace:
    """A workspace on the calc machine that runs it with the scripted harness."""
    return open_workspace(root, harness="scripted", script=write_calc(root), budget="none")


def graded(
    ws: Workspace,
    case: str,
    score: float,
    *,
    minutes: int = 0,
    machine: str = "calc",
    fingerprint: str | None = None,
    tags: list[Tag] | None = None,
    **fields: Any,
) -> Run:
    """A run of ``case`` (one of CASES or HOLDOUT) graded ``score`` under the machine's current rubric,
    started ``minutes`` after START, with a tool call and its result."""
    known = {c["id"]: c for c in [*CASES, *HOLDOUT]}
    data = known.get(case, {"id": case, "input": f"input of {case}", "answer": 0})
    text = str(data["input"])
    call = ToolCall(id="call_0_0", name="add", arguments={"a": 1, "b": 2})
    trajectory = [
        Message(role="user", content=text),
        Message(role="assistant", reasoning="I use add.", tool_calls=[call]),
        Message(role="tool", content="3", tool_call_id="call_0_0", name="add"),
        Message(role="assistant", content=f"answer {score}", reasoning="Done."),
    ]
    card = Scorecard(
        rubric_fingerprint=fingerprint or ws.load(machine).rubric.fingerprint,
        criteria={"right": CriterionScore(criterion="right", weight=1.0, grader="check:x", score=score)},
    )
    made: dict[str, Any] = {
        "machine": machine,
        "model": "Qwen/Qwen3.8-27B",
        "harness": "chat",
        "instructions": "Use the tools, then give the number alone.",
        "input": text,
        "trajectory": trajectory,
        "output": f"answer {score}",
        "case_id": case,
        "case": data,
        "trial": 0,
        "timings": Timings(started_at=START + timedelta(minutes=minutes)),
        "scorecard": card,
        "tags": tags or [],
    }
    return Run(**{**made, **fields})


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
