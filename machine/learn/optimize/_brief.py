"""What the optimizer is shown: the machine (intent, tools, rubric with its graders, the instructions it
may rewrite and those it may not), then a sample of runs that fell short, each with its input, what the
machine did and every grader's reason, then a few that passed. Each run is cut to a share of a token
budget, and a run that starts the way one already shown did says so instead of repeating it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from machine.runs import Run
from machine.spec import Case, Machine

from .._excerpts import CHARS_PER_TOKEN, INPUT_CHARS, RUN_TOKENS, Seen, cut, grade_lines, steps_of
from .._replies import CLOSE, OPEN

BRIEF_TOKENS = 24_000
"""What the runs together may take; further runs are counted, not shown."""


@dataclass(frozen=True)
class Example:
    """One case as the optimizer sees it: its run to show and how its trials went."""

    case: Case
    run: Run
    trials: int
    passed: int


def _case_data(case: Case) -> list[str]:
    data = {k: v for k, v in case.data().items() if k not in ("id", "input", "files")}
    lines = []
    if case.files:
        lines.append("Starting files: " + ", ".join(sorted(case.files)))
    if data:
        lines.append("Case data the graders use: " + cut(json.dumps(data, ensure_ascii=False), 800))
    return lines


def _example(example: Example, seen: Seen, failing: bool) -> list[str]:
    run, case = example.run, example.case
    score = "-" if run.score is None else f"{run.score:.2f}"
    label = f"case {case.id!r}"
    lines = [
        f"### Case {case.id!r}: score {score}; {example.passed} of {example.trials} trials passed",
        "Input:",
        cut(case.input, INPUT_CHARS),
        *_case_data(case),
        "What the machine did:",
        *seen.render(label, steps_of(run), RUN_TOKENS * CHARS_PER_TOKEN),
        "Grades:" if failing else "Grades (all met):",
        *grade_lines(run),
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
    seen, budget = Seen(), tokens * CHARS_PER_TOKEN
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
