"""A run cut to a share of a model's brief: its steps, tool calls and results, and every grader's reason,
each within a character budget, and a run that starts the way one already shown did said once. The
optimizer's brief and the author's both show runs this way."""

from __future__ import annotations

import json

from machine.runs import Message, Run

CHARS_PER_TOKEN = 4
"""A rough size of a token in English text and code, to keep the brief within a token budget."""
RUN_TOKENS = 1_500
"""What one run may take of the brief."""
STEP_CHARS = 1_600
INPUT_CHARS = 2_400
SAME_PREFIX_CHARS = 200
"""A shared beginning of at least this size is said once."""


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, its middle left out and counted."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 20)
    head, tail = text[: keep * 2 // 3], text[-(keep - keep * 2 // 3) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters left out ...]\n{tail}"


def step_lines(message: Message) -> list[str]:
    """One message of a trajectory as lines of the brief."""
    if message.role == "tool":
        flag = " (error)" if message.is_error else ""
        return [f"[tool result {message.name or ''}{flag}] {cut(message.content, STEP_CHARS)}"]
    lines = []
    if message.content.strip():
        lines.append(f"[assistant] {cut(message.content.strip(), STEP_CHARS)}")
    for call in message.tool_calls:
        arguments = call.raw_arguments if call.arguments is None else json.dumps(call.arguments)
        lines.append(f"[tool call] {call.name}({cut(arguments or '', STEP_CHARS)})")
    return lines


def steps_of(run: Run) -> list[str]:
    return [line for message in run.trajectory[1:] for line in step_lines(message)]


class Seen:
    """The runs already in the brief, so a run that begins like one of them says so once."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, list[str]]] = []

    def render(self, label: str, steps: list[str], limit: int) -> list[str]:
        best, where = 0, ""
        for other, earlier in self.shown:
            same = 0
            while same < min(len(steps), len(earlier)) and steps[same] == earlier[same]:
                same += 1
            if same > best:
                best, where = same, other
        self.shown.append((label, steps))
        lines = []
        if best and sum(len(s) for s in steps[:best]) >= SAME_PREFIX_CHARS:
            lines.append(f"(its first {best} steps were the same as in {where}, above)")
            steps = steps[best:]
        return lines + within(steps, limit)


def within(steps: list[str], limit: int) -> list[str]:
    """The steps within ``limit`` characters: the first and the last kept, the middle counted."""
    if sum(len(s) for s in steps) <= limit:
        return steps
    head: list[str] = []
    tail: list[str] = []
    used = 0
    for i in range(len(steps)):
        pick = steps[i // 2] if i % 2 == 0 else steps[len(steps) - 1 - i // 2]
        if used + len(pick) > limit:
            break
        (head if i % 2 == 0 else tail).append(pick)
        used += len(pick)
    left = len(steps) - len(head) - len(tail)
    return [*head, f"[... {left} steps left out ...]", *reversed(tail)]


def grade_lines(run: Run) -> list[str]:
    card = run.scorecard
    if card is None:
        return ["(not graded)"]
    lines = []
    for name, grade in card.criteria.items():
        if grade.score is None:
            lines.append(f"- {name}: UNSCORED (the grader could not decide: {cut(grade.reason, 400)})")
        else:
            lines.append(f"- {name}: {grade.score:.2f}: {cut(grade.reason, 600) or 'no reason given'}")
    return lines
