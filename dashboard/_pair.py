"""Two runs side by side: each one's facts, their inputs and outputs, their steps aligned, their
scorecards merged by criterion, and how the two are related (the same case on two versions, a run and
its correction, the same prompt, or nothing at all). A person reviewing runs reads the difference, so
the steps are aligned by what each step does (role, tools) and a tool call made on one side only lines
up against a gap, not as a shift of every step after it. The answer is bounded whatever the runs hold:
texts, steps and criteria are cut, and the answer says where."""

from __future__ import annotations

import difflib
import json
from typing import Literal

from pydantic import Field

from machine.runs import CriterionScore, Message, Model, Run

TEXT_CHARS = 20_000
"""The most characters of a run's instructions, input, output or error shown."""
STEP_CHARS = 4_000
"""The most characters of one step's text (its content, its reasoning, a tool call's arguments)."""
STEPS_CHARS = 400_000
"""The most characters of every step's texts together: past it, steps are shown without their texts."""
MAX_ALIGNED = 1_000
"""The most steps of each run aligned (the alignment costs the product of the two)."""
MAX_ROWS = 200
"""The most aligned rows shown."""
MAX_CALLS = 20
"""The most tool calls shown of one step."""
MAX_CRITERIA = 100
"""The most criteria shown."""
REASON_CHARS = 4_000
"""The most characters of one grader's reason."""
MAX_TAGS = 50
"""The most of a run's tags shown, each cut to ``REASON_CHARS``."""

Relation = Literal["corrects", "corrected_by", "versions", "trials", "prompt", "machines", "unrelated"]
RowKind = Literal["same", "changed", "a_only", "b_only"]


class Text(Model):
    """A text as shown: cut to a bound, with how long it was, so the page can say it was cut."""

    text: str
    chars: int
    cut: bool = False


def cut(text: str, limit: int) -> Text:
    """``text`` cut to ``limit`` characters."""
    return Text(text=text[:limit], chars=len(text), cut=len(text) > limit)


class Budget:
    """What is left of the characters the steps may show: every step text is cut to what is left."""

    def __init__(self, chars: int = STEPS_CHARS) -> None:
        self.left = chars

    def take(self, text: str, limit: int = STEP_CHARS) -> Text:
        shown = cut(text, min(limit, self.left))
        self.left -= len(shown.text)
        return shown


class Call(Model):
    name: str
    arguments: Text


class Step(Model):
    """One message of a run's trajectory as shown: ``index`` is its place in the run."""

    index: int
    role: str
    name: str | None = None
    is_error: bool = False
    content: Text
    reasoning: Text | None = None
    calls: list[Call] = Field(default_factory=list)
    calls_cut: int = 0


class Row(Model):
    """A row of the aligned steps: a's step, b's, or both; ``same`` when they are identical."""

    kind: RowKind
    a: Step | None = None
    b: Step | None = None


class Both(Model):
    """One text of each run; ``b`` left out (None) when it is the same as ``a``."""

    same: bool
    a: Text
    b: Text | None = None


class Side(Model):
    """The facts of one run a reviewer compares."""

    id: str
    machine: str
    version: str | None
    model: str
    harness: str
    case_id: str | None
    trial: int | None
    suite_id: str | None
    status: str
    error: Text | None
    created_at: str
    graded: bool
    score: float | None
    passed: bool | None
    pass_score: float | None
    cost_usd: float
    tags: list[str]
    forked_from: str | None
    correction: Text | None
    steps: int


class Grade(Model):
    score: float | None
    weight: float
    grader: str
    reason: Text


class CriterionRow(Model):
    """One criterion of either scorecard: each side's grade (None where that run has no such
    criterion) and b's score less a's where both were scored."""

    criterion: str
    a: Grade | None = None
    b: Grade | None = None
    diff: float | None = None


class Pair(Model):
    relation: Relation
    said: str
    """The relation in a sentence."""
    a: Side
    b: Side
    instructions: Both
    input: Both
    output: Both
    rows: list[Row]
    rows_cut: int = 0
    """How many aligned rows are left out past ``MAX_ROWS``."""
    steps_cut: bool = False
    """Whether a run had more than ``MAX_ALIGNED`` steps (those past it are not aligned)."""
    criteria: list[CriterionRow]
    criteria_cut: int = 0


def signature(m: Message) -> str:
    """What a step does, the key the alignment matches: its role, and the tools it calls or answers."""
    if m.tool_calls:
        return f"{m.role}:{','.join(c.name for c in m.tool_calls)}"
    return f"{m.role}:{m.name or ''}"


def step(index: int, m: Message, budget: Budget) -> Step:
    calls = [
        Call(
            name=c.name,
            arguments=budget.take(
                json.dumps(c.arguments, indent=2, ensure_ascii=False)
                if c.arguments is not None
                else c.raw_arguments or ""
            ),
        )
        for c in m.tool_calls[:MAX_CALLS]
    ]
    return Step(
        index=index,
        role=m.role,
        name=m.name,
        is_error=m.is_error,
        content=budget.take(m.content),
        reasoning=budget.take(m.reasoning) if m.reasoning else None,
        calls=calls,
        calls_cut=max(0, len(m.tool_calls) - MAX_CALLS),
    )


def alike(x: Message, y: Message) -> bool:
    """Whether two steps say and do the same (the ids a harness gives tool calls left out)."""
    calls = [[(c.name, c.arguments, c.raw_arguments) for c in m.tool_calls] for m in (x, y)]
    said = [(m.role, m.name, m.is_error, m.content, m.reasoning) for m in (x, y)]
    return calls[0] == calls[1] and said[0] == said[1]


def pairs(a: list[Message], b: list[Message]) -> list[tuple[int | None, int | None]]:
    """The steps of ``a`` and ``b`` aligned, as (index in a or None, index in b or None): steps doing
    the same thing matched in order, a step on one side only against a gap."""
    matcher = difflib.SequenceMatcher(
        None, [signature(m) for m in a], [signature(m) for m in b], autojunk=False
    )
    aligned: list[tuple[int | None, int | None]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            aligned += zip(range(i1, i2), range(j1, j2), strict=True)
            continue
        both = min(i2 - i1, j2 - j1) if op == "replace" else 0
        aligned += [(i1 + k, j1 + k) for k in range(both)]
        aligned += [(i, None) for i in range(i1 + both, i2)]
        aligned += [(None, j) for j in range(j1 + both, j2)]
    return aligned


def rows(a: list[Message], b: list[Message]) -> tuple[list[Row], int]:
    """The aligned rows, at most ``MAX_ROWS``, and how many more there were."""
    aligned = pairs(a[:MAX_ALIGNED], b[:MAX_ALIGNED])
    budget = Budget()
    shown: list[Row] = []
    for i, j in aligned[:MAX_ROWS]:
        left = None if i is None else step(i, a[i], budget)
        right = None if j is None else step(j, b[j], budget)
        if i is None or j is None:
            kind: RowKind = "a_only" if j is None else "b_only"
        else:
            kind = "same" if alike(a[i], b[j]) else "changed"
        shown.append(Row(kind=kind, a=left, b=right))
    return shown, max(0, len(aligned) - MAX_ROWS)


def both(a: str, b: str) -> Both:
    return Both(same=a == b, a=cut(a, TEXT_CHARS), b=None if a == b else cut(b, TEXT_CHARS))


def grade(c: CriterionScore | None) -> Grade | None:
    if c is None:
        return None
    return Grade(score=c.score, weight=c.weight, grader=c.grader, reason=cut(c.reason, REASON_CHARS))


def criteria(a: Run, b: Run) -> tuple[list[CriterionRow], int]:
    """Both scorecards by criterion, in a's order and then b's own, at most ``MAX_CRITERIA``."""
    left = a.scorecard.criteria if a.scorecard else {}
    right = b.scorecard.criteria if b.scorecard else {}
    names = list(dict.fromkeys([*left, *right]))
    merged: list[CriterionRow] = []
    for name in names[:MAX_CRITERIA]:
        x, y = left.get(name), right.get(name)
        diff = None
        if x is not None and y is not None and x.score is not None and y.score is not None:
            diff = y.score - x.score
        merged.append(CriterionRow(criterion=name, a=grade(x), b=grade(y), diff=diff))
    return merged, max(0, len(names) - MAX_CRITERIA)


def side(run: Run) -> Side:
    card = run.scorecard
    return Side(
        id=run.id,
        machine=run.machine,
        version=run.version,
        model=run.model,
        harness=run.harness,
        case_id=run.case_id,
        trial=run.trial,
        suite_id=run.suite_id,
        status=run.status,
        error=None if run.error is None else cut(run.error, TEXT_CHARS),
        created_at=run.created_at.isoformat().replace("+00:00", "Z"),
        graded=card is not None,
        score=run.score,
        passed=run.passed,
        pass_score=None if card is None else card.pass_score,
        cost_usd=run.cost_usd,
        tags=[(t.kind + (f": {t.note}" if t.note else ""))[:REASON_CHARS] for t in run.tags[-MAX_TAGS:]],
        forked_from=run.forked_from,
        correction=None if run.correction is None else cut(run.correction, TEXT_CHARS),
        steps=len(run.trajectory),
    )


def same_prompt(a: Run, b: Run) -> bool:
    """Whether the two were asked the same thing (instructions, earlier turns, input), as preference
    pairs on one prompt are."""
    return (a.instructions, a.history, a.input) == (b.instructions, b.history, b.input)


def relation(a: Run, b: Run) -> tuple[Relation, str]:
    """How the two runs are related, said in a sentence; two runs with nothing in common are still
    compared, and the sentence says so."""
    if b.forked_from == a.id:
        return "corrects", "b corrects a: b is a made again with a person's correction"
    if a.forked_from == b.id:
        return "corrected_by", "a corrects b: a is b made again with a person's correction"
    if a.machine != b.machine:
        return "machines", f"runs of two machines, {a.machine} and {b.machine}"
    if a.case_id is not None and a.case_id == b.case_id:
        if a.version != b.version:
            versions = f"{a.version or 'no version'} and {b.version or 'no version'}"
            return "versions", f"case {a.case_id} on two versions, {versions}"
        return "trials", f"case {a.case_id} twice on {a.version or 'no version'}"
    if same_prompt(a, b):
        return "prompt", "the same prompt: instructions, earlier turns and input alike"
    return "unrelated", "two runs of the same machine, not of one case nor one prompt"


def pair(a: Run, b: Run) -> Pair:
    """``a`` and ``b`` side by side, bounded in every text, step and criterion."""
    kind, said = relation(a, b)
    aligned, rows_cut = rows(a.trajectory, b.trajectory)
    merged, criteria_cut = criteria(a, b)
    return Pair(
        relation=kind,
        said=said,
        a=side(a),
        b=side(b),
        instructions=both(a.instructions, b.instructions),
        input=both(a.input, b.input),
        output=both(a.output, b.output),
        rows=aligned,
        rows_cut=rows_cut,
        steps_cut=max(len(a.trajectory), len(b.trajectory)) > MAX_ALIGNED,
        criteria=merged,
        criteria_cut=criteria_cut,
    )


__all__ = ["Pair", "pair", "pairs", "relation", "signature"]
