"""What the author is shown. For a child: the parent (intent, tools, rubric with its graders, instructions,
its source files) and a sample of its stored runs, then what to write. For cases: the child it wrote, a
few of the parent's cases as the shape to follow, and the topics of this batch. The sample runs are cut
the way the optimizer's are, so a long trajectory costs a share of the brief and no more."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from machine.runs import Run
from machine.spec import Case, Machine

from .._excerpts import CHARS_PER_TOKEN, INPUT_CHARS, RUN_TOKENS, Seen, cut, grade_lines, steps_of
from ._shape import CaseShape

SOURCE_CHARS = 12_000
"""What one of the parent's source files may take of the brief."""
SOURCE_FILES = 8
"""The parent's source files shown at most (machine.py and rubric.py first)."""
CASE_CHARS = 3_000
"""What one of the parent's cases, shown as the shape to follow, may take."""


def machine_lines(spec: Machine, role: str = "parent machine") -> list[str]:
    """The machine as an author needs it: intent, tools, rubric with graders, instructions."""
    lines = [f"# The {role}: {spec.name}", "", "## What it is for", spec.intent, "", "## Its tools"]
    lines += [f"- {t.name}: {t.description}" for t in spec.tools] or ["(none: it only answers)"]
    lines += ["", "## Its rubric (every run is graded on each criterion; a child inherits them all)"]
    for name, criterion in spec.rubric.items():
        grader = spec.evaluator.graders[name]
        lines.append(
            f"- {name} (weight {criterion.weight:g}, graded by {grader.kind} {grader.name}): "
            f"{criterion.description}"
        )
    lines += ["", "## Its instructions (the child's own are read after these)", spec.instructions or "(none)"]
    return [*lines, ""]


def source_files(spec: Machine) -> dict[str, str]:
    """The parent's own Python files (not its children's), machine.py and rubric.py first, by path
    relative to the machines folder."""
    if spec.source is None:
        return {}
    folder = spec.source.parent
    machines = folder.parents[spec.name.count("/")]
    found = sorted(folder.glob("*.py"), key=lambda p: (p.name not in ("machine.py", "rubric.py"), p.name))
    files: dict[str, str] = {}
    for path in found[:SOURCE_FILES]:
        try:
            files[path.relative_to(machines).as_posix()] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return files


def _sources(files: Mapping[str, str]) -> list[str]:
    lines = ["## Its source files"]
    for path, text in files.items():
        lines += [f"### machines/{path}", "```python", cut(text, SOURCE_CHARS), "```", ""]
    return lines if files else []


def _sample(run: Run, seen: Seen) -> list[str]:
    score = "-" if run.score is None else f"{run.score:.2f}"
    return [
        f"### Run on case {run.case_id!r}: score {score}",
        "Input:",
        cut(run.input, INPUT_CHARS),
        "What it did:",
        *seen.render(f"case {run.case_id!r}", steps_of(run), RUN_TOKENS * CHARS_PER_TOKEN),
        "Grades:",
        *grade_lines(run),
        "",
    ]


def samples_lines(samples: Sequence[Run]) -> list[str]:
    """The sample runs the author's checks are tried on, each cut to its share of the brief."""
    if not samples:
        return []
    seen = Seen()
    lines = ["## Some of its stored runs (your checks are tried on these)", ""]
    for run in samples:
        lines += _sample(run, seen)
    return lines


def draft_brief(spec: Machine, *, samples: Sequence[Run], draft_file: str) -> str:
    """The author's message for a rubric draft: the machine, its runs, and the file to write."""
    lines = machine_lines(spec, "machine") + _sources(source_files(spec)) + samples_lines(samples)
    own = (
        f" It is a child of {spec.parent.name}: draft only criteria of its own, named unlike the "
        "inherited ones."
        if spec.parent is not None
        else ""
    )
    lines += [
        "## Your task",
        f"Draft a rubric for {spec.name}: what a good run of it does, as 2 to 8 weighted criteria.{own}",
        f'Write {draft_file} in one <file path="{draft_file}"> block: `rubric = define_rubric({{...}})` and '
        "`graders = {criterion: grader}` (a `check` where code can decide it, else `judge()`).",
    ]
    return "\n".join(lines)


def child_brief(parent: Machine, *, focus: str, child: str, model: str | None, samples: Sequence[Run]) -> str:
    """The first message to the author: the parent, its runs, and the child to write."""
    lines = machine_lines(parent) + _sources(source_files(parent)) + samples_lines(samples)
    on = f" Its model will be {model}." if model else " It keeps the parent's model."
    lines += [
        "## Your task",
        f"Write the child machine {child!r}, a specialist of {parent.name} for this focus: {focus}.{on}",
        f'Write machine.py (define_child of the parent, named "{child}"), rubric.py (1 to 3 new '
        'criteria) and instructions.md, each in a <file path="..."> block, its path relative to the '
        "child's folder.",
    ]
    return "\n".join(lines)


def child_lines(child: str, files: Mapping[str, str]) -> list[str]:
    """The child the author wrote, as context for writing its cases."""
    lines = [f"# The child machine {child} (already written and checked)", ""]
    for path, text in files.items():
        lines += [f"### {path}", cut(text, SOURCE_CHARS), ""]
    return lines


def topics_brief(parent: Machine, child: str, files: Mapping[str, str], *, focus: str, count: int) -> str:
    """Ask for the topics the cases will cover."""
    lines = machine_lines(parent) + child_lines(child, files)
    lines += [
        "## Your task",
        f"List {count} different situations within the focus ({focus}) that cases for {child} should "
        "cover, so that together they test every new criterion and the inherited ones. One per "
        "<topic>...</topic> block, each a short phrase.",
    ]
    return "\n".join(lines)


def shape_lines(examples: Sequence[Case], shape: CaseShape) -> list[str]:
    """What a case must carry, with a few of the parent's cases as the shape to follow."""
    lines = ["## The shape of a case", "Some of the parent's cases:"]
    for case in examples:
        lines.append(cut(json.dumps(case.data(), ensure_ascii=False, indent=1), CASE_CHARS))
    wanted = ", ".join(["id", "input", *shape.required])
    lines.append(f"Required fields: {wanted}.")
    if shape.project:
        lines.append(
            "Each case is a small project: `files` (path to text), the same `tests` command as the "
            "parent's cases, and `reference`, the edits that make the tests pass. The tests must FAIL on "
            "the starting files and PASS with the reference applied, or the case is thrown away."
        )
    if shape.answers:
        lines.append(
            "A case that asks for an answer rather than a change (a question, a plan, a report) has no "
            '`reference`; it says how its tests start, `"starting_tests": "pass"` or `"fail"`, and they '
            "must start that way."
        )
    if shape.hidden:
        lines.append(
            "Also give each case `hidden`: one or more extra test files (names test_*.py, not among its "
            "files) the machine never sees; each must fail when run alone on the starting files and pass "
            "alone with the reference."
        )
    return [*lines, ""]


def cases_brief(
    parent: Machine,
    child: str,
    files: Mapping[str, str],
    *,
    focus: str,
    topics: Sequence[str],
    count: int,
    shape: Sequence[str],
    avoid: Sequence[str],
) -> str:
    """Ask for ``count`` cases over ``topics``; ``shape`` is what ``shape_lines`` said, ``avoid`` the inputs
    of cases already kept (so a batch does not repeat another)."""
    lines = child_lines(child, files) + list(shape)
    if avoid:
        lines += ["## Cases already written (do not repeat them)", *(f"- {cut(a, 200)}" for a in avoid), ""]
    lines += [
        "## Your task",
        f"Write {count} cases for {child} (focus: {focus}), over these topics:",
        *(f"- {topic}" for topic in topics),
        "Each case is one JSON object in a <case>...</case> block.",
    ]
    return "\n".join(lines)
