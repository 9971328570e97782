"""Model judges: a model grades criteria from their descriptions and the whole run.

``judge()`` grades one criterion per call; ``judge_panel(rubric, ids)`` grades several in one call.
The judge sees the input, the conversation before it, every tool call with its whole result, and
the output. Temperature is pinned to 0 with a fixed seed. A reply without a usable score is asked
again; what still has no usable score is UNSCORED with the reason, and a failed call makes its
criteria UNSCORED with the provider's message. Every call is charged to the budget as grading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from machine.errors import BudgetExceeded, DefinitionError, MachineError, UsageRefused, plain_spelling
from machine.runs import CriterionScore, Effort, Message, Run, parse_effort

from ._graders import GradeContext, Grader
from ._rubric import Criterion, Rubric

DEFAULT_JUDGE_MODEL = "thinkingmachines/Inkling-Small"
DEFAULT_JUDGE_EFFORT = "medium"
JUDGE_SEED = 0

INSTRUCTIONS = """\
You grade one run of an AI agent against the criteria you are given, and nothing else.
Read the whole run: the input, any earlier conversation, every tool call with its result, and the
final output. Judge what the agent actually did, as shown, not what it claims to have done.
For each criterion give a score from 0 to 1 (1: fully met, 0: not met; use values between only for
partial credit) and one or two sentences of reason.
Reply with a single JSON object and nothing else, in this form:
{"criteria": {"<criterion name>": {"reason": "<why>", "score": <number from 0 to 1>}}}"""


def transcript(run: Run) -> str:
    """The run as the judge reads it: nothing summarised, tool results whole."""
    parts: list[str] = []
    if run.history:
        parts.append("## Earlier conversation")
        parts.extend(_line(m) for m in run.history)
    parts.append("## Input\n" + run.input)
    steps = run.trajectory[1:] if run.trajectory and run.trajectory[0].role == "user" else run.trajectory
    if steps and steps[-1].role == "assistant" and not steps[-1].tool_calls:
        steps = steps[:-1]  # the final reply is shown once, as the output
    if any(m.tool_calls or m.role == "tool" for m in steps):
        parts.append("## Steps")
        parts.extend(_line(m) for m in steps)
    parts.append("## Final output\n" + (run.output if run.output.strip() else "(empty)"))
    return "\n\n".join(parts)


def _line(message: Message) -> str:
    if message.role == "tool":
        flag = " (error)" if message.is_error else ""
        return f"[tool result{flag} of {message.name}]\n{message.content}"
    text = f"[{message.role}]\n{message.content}" if message.content else f"[{message.role}]"
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments
        text += f"\n[tool call] {call.name}({arguments})"
    return text


def _prompt(run: Run, criteria: Mapping[str, Criterion]) -> list[dict[str, Any]]:
    listed = "\n".join(f"- {name}: {c.description}" for name, c in criteria.items())
    return [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": f"# Criteria\n{listed}\n\n# The run\n{transcript(run)}"},
    ]


def _score(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and 0.0 <= value <= 1.0:
        return float(value)
    return None


def parse_verdicts(reply: str, names: list[str]) -> dict[str, tuple[float, str]]:
    """The usable verdicts in a judge's reply; criteria without one are simply absent."""
    text = re.sub(r"^```(?:json)?\s*|\s*```$", "", reply.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return {}
    if not isinstance(data, dict):
        return {}
    table = data.get("criteria", data)
    if len(names) == 1 and isinstance(table, dict) and "score" in table and names[0] not in table:
        table = {names[0]: table}  # a bare {"score", "reason"} for a single criterion
    found: dict[str, tuple[float, str]] = {}
    for name in names:
        verdict = table.get(name) if isinstance(table, dict) else None
        if isinstance(verdict, dict):
            score = _score(verdict.get("score"))
            if score is not None:
                found[name] = (score, str(verdict.get("reason", "")))
    return found


@dataclass
class _Ask:
    """One judging of some criteria of one run: the calls made and what they cost."""

    run: Run
    ctx: GradeContext
    model: str
    effort: Effort | None
    grader: str
    replies: list[str] = field(default_factory=list)
    retries: list[dict[str, Any]] = field(default_factory=list)
    """Failed attempts of the judge calls (429s, 5xx ...), as runs record theirs."""
    cost: float = 0.0
    failure: str | None = None
    """Why the judge could not be asked, or its call failed (then no retry helps)."""

    def refused(self) -> str | None:
        """Why no judge call may start, if it may not."""
        if self.ctx.models is None:
            return "no model access was given to the grader, so the judge cannot be asked"
        budget = self.ctx.budget
        if budget is not None:
            if budget.exhausted:
                return f"the budget is spent ({budget.describe()}), so the judge was not asked"
            try:
                budget.probe_price(self.model)
            except MachineError as error:
                return f"judge model {self.model!r}: {error.explain(plain_spelling)}"
        return None

    async def call(self, criteria: Mapping[str, Criterion]) -> dict[str, tuple[float, str]]:
        """One judge call; raises MachineError when the call itself fails."""
        assert self.ctx.models is not None
        budget = self.ctx.budget
        try:
            turn = await self.ctx.models.complete(
                self.model,
                _prompt(self.run, criteria),
                effort=self.effort,
                temperature=0.0,
                seed=JUDGE_SEED,
                budget=budget,
                kind="grading",
            )
        except UsageRefused as refused:
            self.cost += refused.charged
            raise
        self.retries.extend(turn.retries)
        if budget is not None:
            self.cost += turn.charged(budget, self.model, kind="grading")
        self.replies.append(turn.message.content)
        return parse_verdicts(turn.message.content, list(criteria))

    async def grade(self, criteria: Mapping[str, Criterion], attempts: int) -> dict[str, CriterionScore]:
        """Ask up to ``attempts`` times, each time only about the criteria still without a verdict."""
        verdicts: dict[str, tuple[float, str]] = {}
        self.failure = self.refused()
        tries = 0
        while self.failure is None and tries < attempts and len(verdicts) < len(criteria):
            tries += 1
            try:
                verdicts |= await self.call({n: c for n, c in criteria.items() if n not in verdicts})
            except BudgetExceeded as error:  # refused before the call: nothing was asked
                self.failure = f"the judge was not asked: {error.explain(plain_spelling)}"
            except MachineError as error:
                self.retries.extend(getattr(error, "retries", []))
                self.failure = f"the judge call failed: {error.explain(plain_spelling)}"
        return {
            name: self._result(name, definition, verdicts.get(name), tries)
            for name, definition in criteria.items()
        }

    def _result(
        self, name: str, definition: Criterion, verdict: tuple[float, str] | None, tries: int
    ) -> CriterionScore:
        if verdict is not None:
            score, reason = verdict
        else:
            last = self.replies[-1][:200] if self.replies else ""
            plural = "reply" if tries == 1 else "replies"
            unusable = f"the judge gave no usable score in {tries} {plural}: {last!r}"
            score, reason = None, self.failure or unusable
        return CriterionScore(
            criterion=name,
            weight=definition.weight,
            grader=self.grader,
            score=score,
            reason=reason,
            details={
                "model": self.model,
                "effort": None if self.effort is None else str(self.effort),
                "replies": list(self.replies),
                **({"retries": list(self.retries)} if self.retries else {}),
            },
        )


def _settings(model: str | None, effort: str | None, ctx: GradeContext) -> tuple[str, Effort | None]:
    """``--judge-model`` / ``MACHINE_JUDGE_MODEL`` and ``--judge-effort`` (the context) override what the
    machine's file chose, which overrides the defaults: the person grading decides where grading runs."""
    chosen = ctx.judge_model or model or DEFAULT_JUDGE_MODEL
    return chosen, ctx.judge_effort or parse_effort(effort or DEFAULT_JUDGE_EFFORT)


def _share_cost(scores: dict[str, CriterionScore], cost: float) -> dict[str, CriterionScore]:
    """What the calls cost, split evenly over the criteria they graded."""
    each = cost / len(scores) if scores else 0.0
    return {name: s.model_copy(update={"cost_usd": each}) for name, s in scores.items()}


@dataclass(frozen=True)
class JudgeGrader:
    """A model judge for one criterion; a reply without a usable score is asked again twice."""

    model: str | None = None
    effort: str | None = None
    attempts: int = 3
    name: str = "judge"
    kind: str = "judge"

    async def grade(
        self, run: Run, criterion: str, definition: Criterion, ctx: GradeContext
    ) -> CriterionScore:
        model, effort = _settings(self.model, self.effort, ctx)
        ask = _Ask(run, ctx, model, effort, grader=f"judge:{model}")
        scores = await ask.grade({criterion: definition}, self.attempts)
        return _share_cost(scores, ask.cost)[criterion]


def judge(*, model: str | None = None, effort: str | None = None) -> JudgeGrader:
    """A model grader for a criterion that takes open-ended reasoning to decide. ``model`` and ``effort``
    default to ``--judge-model`` / ``MACHINE_JUDGE_MODEL`` (else Inkling-Small) and ``--judge-effort``
    (else medium)."""
    if effort is not None:
        parse_effort(effort)  # a bad effort fails when the machine is defined, not when it is graded
    return JudgeGrader(model=model, effort=effort)


class _Panel:
    """The criteria one judge call grades together: a Batch the evaluator hands all of them at once."""

    def __init__(self, rubric: Rubric, ids: list[str], model: str | None, effort: str | None) -> None:
        self.criteria = {name: rubric[name] for name in ids}
        self.model, self.effort = model, effort

    async def grade_batch(
        self, run: Run, members: Mapping[str, tuple[Criterion, Grader]], ctx: GradeContext
    ) -> dict[str, CriterionScore]:
        model, effort = _settings(self.model, self.effort, ctx)
        ask = _Ask(run, ctx, model, effort, grader=f"panel:{model}")
        scores = await ask.grade({name: definition for name, (definition, _) in members.items()}, attempts=1)
        missing = [name for name, score in scores.items() if score.score is None]
        for name in missing if ask.failure is None else []:  # missing from the reply: once more, alone
            alone = _Ask(run, ctx, model, effort, grader=f"panel:{model}")
            scores[name] = (await alone.grade({name: members[name][0]}, attempts=1))[name]
            ask.cost += alone.cost
        return _share_cost(scores, ask.cost)


@dataclass(frozen=True)
class PanelGrader:
    """One criterion of a judge panel: graded in the panel's single call with the others."""

    batch: _Panel
    name: str = "panel"
    kind: str = "judge"

    async def grade(
        self, run: Run, criterion: str, definition: Criterion, ctx: GradeContext
    ) -> CriterionScore:
        return (await self.batch.grade_batch(run, {criterion: (definition, self)}, ctx))[criterion]


def judge_panel(
    rubric: Rubric, ids: list[str], *, model: str | None = None, effort: str | None = None
) -> dict[str, PanelGrader]:
    """Graders for ``ids`` that one judge call scores together, for when a call per criterion costs
    too much. Spread them into the evaluator: ``{**judge_panel(rubric, ["a", "b"]), "c": check(...)}``.
    A criterion missing from the reply is asked once more alone, then UNSCORED."""
    unknown = [name for name in ids if name not in rubric]
    if unknown:
        raise DefinitionError(
            f"judge_panel: {unknown[0]!r} is not a criterion of the rubric ({', '.join(rubric)})"
        )
    if len(set(ids)) != len(ids) or not ids:
        raise DefinitionError("judge_panel needs a list of distinct criterion names")
    if effort is not None:
        parse_effort(effort)
    panel = _Panel(rubric, list(ids), model, effort)
    return {name: PanelGrader(panel) for name in ids}
