"""What the optimizer is shown: the machine (intent, tools, rubric with its graders, the instructions it
may rewrite and those it may not), then a sample of runs that fell short, each with its input, what the
machine did and every grader's reason, then a few that passed. Each run is cut to a share of a token
budget, and a run that starts the way one already shown did says so instead of repeating it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from machine.runs import Message, Run
from machine.spec import Case, Machine

from ._blocks import CLOSE, OPEN

CHARS_PER_TOKEN = 4
"""A rough size of a token in English text and code, to keep the brief within a token budget."""
RUN_TOKENS = 1_500
"""What one run may take of the brief."""
BRIEF_TOKENS = 24_000
"""What the runs together may take; further runs are counted, not shown."""
STEP_CHARS = 1_600
INPUT_CHARS = 2_400
SAME_PREFIX_CHARS = 200
"""A shared beginning of at least this size is said once."""


@dataclass(frozen=True)
class Example:
    """One case as the optimizer sees it: its run to show and how its trials went."""

    case: Case
    run: Run
    trials: int
    passed: int


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, its middle left out and counted."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 20)
    head, tail = text[: keep * 2 // 3], text[-(keep - keep * 2 // 3) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters left out ...]\n{tail}"


def _step(message: Message) -> list[str]:
    """One message of a trajectory as lines of the brief."""
    if message.role == "tool":
        flag = " (error)" if message.is_error else ""
        return [f"[tool result {message.name or ''}{flag}] {_cut(message.content, STEP_CHARS)}"]
    lines = []
    if message.content.strip():
        lines.append(f"[assistant] {_cut(message.content.strip(), STEP_CHARS)}")
    for call in message.tool_calls:
        arguments = call.raw_arguments if call.arguments is None else json.dumps(call.arguments)
        lines.append(f"[tool call] {call.name}({_cut(arguments or '', STEP_CHARS)})")
    return lines


def _steps(run: Run) -> list[str]:
    return [line for message in run.trajectory[1:] for line in _step(message)]


class _Seen:
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
        return lines + _within(steps, limit)


def _within(steps: list[str], limit: int) -> list[str]:
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


def _grades(run: Run) -> list[str]:
    card = run.scorecard
    if card is None:
        return ["(not graded)"]
    lines = []
    for name, grade in card.criteria.items():
        if grade.score is None:
            lines.append(f"- {name}: UNSCORED (the grader could not decide: {_cut(grade.reason, 400)})")
        else:
            lines.append(f"- {name}: {grade.score:.2f}: {_cut(grade.reason, 600) or 'no reason given'}")
    return lines


def _case_data(case: Case) -> list[str]:
    data = {k: v for k, v in case.data().items() if k not in ("id", "input", "files")}
    lines = []
    if case.files:
        lines.append("Starting files: " + ", ".join(sorted(case.files)))
    if data:
        lines.append("Case data the graders use: " + _cut(json.dumps(data, ensure_ascii=False), 800))
    return lines


def _example(example: Example, seen: _Seen, failing: bool) -> list[str]:
    run, case = example.run, example.case
    score = "-" if run.score is None else f"{run.score:.2f}"
    label = f"case {case.id!r}"
    lines = [
        f"### Case {case.id!r}: score {score}; {example.passed} of {example.trials} trials passed",
        "Input:",
        _cut(case.input, INPUT_CHARS),
        *_case_data(case),
        "What the machine did:",
        *seen.render(label, _steps(run), RUN_TOKENS * CHARS_PER_TOKEN),
        "Grades:" if failing else "Grades (all met):",
        *_grades(run),
        "",
    ]
    return lines


def _machine(spec: Machine, instructions: str) -> list[str]:
    lines = [f"# The machine: {spec.name}", "", "## What it is for", spec.intent, "", "## Its tools"]
    lines += [f"- {t.name}: {t.description}" for t in spec.tools] or ["(none: it only answers)"]
    lines += ["", "## Its rubric (every run is graded on each criterion; the score is their weighted mean)"]
    for name, criterion in spec.rubric.items():
        grader = spec.evaluator.graders[name]
        origin = spec.origin(name)
        inherited = f", inherited from {origin}" if origin != spec.name else ""
        lines.append(
            f"- {name} (weight {criterion.weight:g}, graded by {grader.kind} {grader.name}{inherited}): "
            f"{criterion.description}"
        )
    if spec.parent is not None:
        lines += [
            "",
            f"## Fixed instructions from its parent {spec.parent.name} (read first; you cannot change them)",
            spec.parent.instructions,
        ]
    lines += ["", "## Its current instructions (what you rewrite)", instructions, ""]
    return lines


def brief(
    spec: Machine,
    instructions: str,
    failing: Sequence[Example],
    passing: Sequence[Example],
    *,
    tokens: int = BRIEF_TOKENS,
) -> str:
    """The optimizer's input: the machine with ``instructions`` as the part to rewrite, then the
    examples, failing first, within ``tokens`` (further examples are counted, not shown)."""
    lines = _machine(spec, instructions)
    seen, budget = _Seen(), tokens * CHARS_PER_TOKEN
    for title, examples, failed in (
        ("## Runs that fell short", failing, True),
        ("## Runs that passed", passing, False),
    ):
        if not examples:
            continue
        lines += [title, ""]
        for index, example in enumerate(examples):
            block = _example(example, seen, failed)
            size = sum(len(line) + 1 for line in block)
            if size > budget and (index > 0 or not failed):  # the first failure is always shown
                lines += [f"({len(examples) - index} more not shown, to keep this brief)", ""]
                break
            lines += block
            budget -= size
    lines += [
        "## Your task",
        f"Rewrite the current instructions. Put the whole new text between {OPEN} and {CLOSE}.",
    ]
    return "\n".join(lines)
