"""Jev graders: simple questions about a run answered by TypeSafe's Jev with calibrated probabilities.

All of a run's Jev criteria on one Jev model go out in one request (a ``Batch``); a failure of any kind is
UNSCORED with the reason, never 0. How each kind scores, and when a grade is unsure: docs/concepts.md#jev.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from machine.errors import DefinitionError
from machine.runs import CriterionScore, Run

from ._graders import GradeContext, Grader, unscored
from ._jev_answers import (
    API_KEY_ENV,
    UNSURE_HIGH,
    UNSURE_LOW,
    Malformed,
    Option,
    QuestionKind,
    answer_score,
    describe_error,
    load_sdk,
)
from ._rubric import Criterion


class Jev:
    """Makes Jev graders; all the Jev criteria of a run on one Jev model share one request."""

    def __init__(self, *, model: str | None = None) -> None:
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise DefinitionError(f"jev(model=...) must be a non-empty model name, got {model!r}")
        self.model = model
        """The Jev model; None takes the SDK's default (TYPESAFE_DEFAULT_MODEL, else jev-latest)."""

    def __repr__(self) -> str:
        return f"jev(model={self.model!r})"

    def _make(
        self, kind: QuestionKind, levels: tuple[str, ...] = (), options: tuple[Option, ...] = ()
    ) -> JevGrader:
        return JevGrader(name=kind, levels=levels, options=options, model=self.model)

    def noul(self) -> JevGrader:
        """A yes/no grader: the criterion's description is the question; the score is P(yes)."""
        return self._make("noul")

    def score(self, levels: Sequence[str]) -> JevGrader:
        """Ordered levels, worst first (``["rude", "neutral", "warm"]``): the score is Jev's
        expected level scaled to [0, 1]."""
        if isinstance(levels, str) or not isinstance(levels, Sequence):
            raise DefinitionError(
                f"jev().score(levels) takes a list of level descriptions, worst first, got {levels!r}"
            )
        cleaned = tuple(levels)
        bad = [level for level in cleaned if not isinstance(level, str) or not level.strip()]
        if bad:
            raise DefinitionError(
                f"jev().score(levels): every level must be a non-empty string, not {bad[0]!r}"
            )
        if len(cleaned) < 2:
            raise DefinitionError(f"jev().score(levels) needs at least two levels, got {list(cleaned)!r}")
        if len(set(cleaned)) != len(cleaned):
            twice = next(level for level in cleaned if cleaned.count(level) > 1)
            raise DefinitionError(f"jev().score(levels): level {twice!r} is listed twice")
        return self._make("score", levels=cleaned)

    def choice(self, options: Mapping[str, Mapping[str, Any]]) -> JevGrader:
        """Labelled options with a score each, ``{"short": {"score": 1}, "long": {"score": 0}}``
        (an option may add a ``"description"``): the score is the probability-weighted mean."""
        if not isinstance(options, Mapping):
            raise DefinitionError(
                'jev().choice(options) takes a mapping like {"short": {"score": 1}, "long": {"score": 0}}'
            )
        if len(options) < 2:
            raise DefinitionError(f"jev().choice(options) needs at least two options, got {list(options)!r}")
        made: list[Option] = []
        for label, option in options.items():
            if not isinstance(label, str) or not label.strip():
                raise DefinitionError(f"jev().choice(options): label {label!r} must be a non-empty string")
            if not isinstance(option, Mapping) or "score" not in option:
                raise DefinitionError(
                    f'jev().choice(options): option {label!r} must be a mapping with a "score", '
                    f'like {{"score": 1}}, got {option!r}'
                )
            extra = sorted(set(option) - {"score", "description"})
            if extra:
                raise DefinitionError(
                    f"jev().choice(options): option {label!r} has unknown key {extra[0]!r} "
                    '(an option has "score" and, optionally, "description")'
                )
            score = option["score"]
            if (
                isinstance(score, bool)
                or not isinstance(score, int | float)
                or not math.isfinite(score)
                or not 0.0 <= score <= 1.0
            ):
                raise DefinitionError(
                    f"jev().choice(options): option {label!r} has score {score!r}; "
                    "a score is a number in [0, 1]"
                )
            description = option.get("description")
            if description is not None and not isinstance(description, str):
                raise DefinitionError(
                    f"jev().choice(options): option {label!r} has a description that is not text: "
                    f"{description!r}"
                )
            made.append(Option(label, float(score), description))
        return self._make("choice", options=tuple(made))


def jev(*, model: str | None = None) -> Jev:
    """Graders backed by Jev, TypeSafe's decision model (needs ``TYPESAFE_API_KEY`` and the ``jev`` extra).

    Use one ``jev()`` per evaluator and one of its graders per criterion; all of a run's Jev
    criteria are then answered in one request."""
    return Jev(model=model)


@dataclass(frozen=True)
class JevGrader:
    """One Jev question; see the module's docstring for how it scores and shares its request."""

    name: QuestionKind
    levels: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    model: str | None = None
    kind: str = "jev"

    @property
    def batch(self) -> JevRequest:
        return JevRequest(self.model)

    async def grade(
        self, run: Run, criterion: str, definition: Criterion, ctx: GradeContext
    ) -> CriterionScore:
        return (await self.batch.grade_batch(run, {criterion: (definition, self)}, ctx))[criterion]


@dataclass(frozen=True)
class JevRequest:
    """The Batch of every Jev criterion of a run on one Jev model: one System One request."""

    model: str | None

    async def grade_batch(
        self, run: Run, members: Mapping[str, tuple[Criterion, Grader]], ctx: GradeContext
    ) -> dict[str, CriterionScore]:
        questions = {
            name: (definition, grader)
            for name, (definition, grader) in members.items()
            if isinstance(grader, JevGrader)
        }
        failure = None
        budget = ctx.budget
        if budget is not None and budget.exhausted:
            failure = f"budget spent ({budget.describe()}): Jev was not asked; raise the budget"
        else:
            try:
                response = await _ask(run, questions, self.model, ctx)
            except _Refused as refused:
                failure = refused.reason
            except Exception as error:  # every SDK and transport error becomes a reason, never a crash
                failure = describe_error(error)
        if failure is not None:
            return {
                name: unscored(name, definition, grader, failure)
                for name, (definition, grader) in questions.items()
            }
        return {
            name: _scored(response, list(questions), name, definition, grader)
            for name, (definition, grader) in questions.items()
        }


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def _ask(
    run: Run, members: Mapping[str, tuple[Criterion, JevGrader]], model: str | None, ctx: GradeContext
) -> Any:
    """One System One request with a question per criterion of the batch."""
    try:
        sdk = load_sdk()
    except ImportError:
        raise _Refused(
            "the TypeSafe client is not installed: pip install 'machine[jev]' (the typesafe-sdk package) "
            "to grade Jev criteria"
        ) from None
    questions = {
        name: build_question(grader, definition, sdk) for name, (definition, grader) in members.items()
    }
    state = run_state(run)
    client = ctx.jev_client
    if client is not None:
        if inspect.iscoroutinefunction(client.system_one):
            return await client.system_one(state, questions, model=model)
        call = functools.partial(client.system_one, state, questions, model=model)
        return await anyio.to_thread.run_sync(call)  # a synchronous TypeSafeClient
    if not os.environ.get(API_KEY_ENV, "").strip():
        raise _Refused(
            f"{API_KEY_ENV} is not set: set it to your TypeSafe API key to grade Jev criteria "
            "(or choose another grader for this criterion)"
        )
    # A client per request: an httpx client must not outlive the event loop it was made in, and
    # each command runs its own loop. The key and base URL (TYPESAFE_BASE_URL) come from the env.
    async with sdk.AsyncTypeSafeClient() as made:
        return await made.system_one(state, questions, model=model)


def build_question(grader: JevGrader, definition: Criterion, sdk: Any) -> Any:
    """The SDK question (Noul, Score or Choice) for one criterion: its description is the instructions."""
    if grader.name == "noul":
        question = sdk.Noul(instructions=definition.description)
    elif grader.name == "score":
        question = sdk.Score(instructions=definition.description, criteria=list(grader.levels))
    else:
        question = sdk.Choice(
            instructions=definition.description,
            criteria={option.label: option.description for option in grader.options},
        )
    return question


def run_state(run: Run) -> dict[str, Any]:
    """What Jev reads: the input, every tool call with its whole result, and the final output, in
    that order (and the earlier turns of a conversation when there are any). A JSON object keeps
    the parts apart however much text each holds."""
    calls: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for message in run.trajectory:
        for call in message.tool_calls:
            entry: dict[str, Any] = {
                "tool": call.name,
                "arguments": call.arguments if call.arguments is not None else call.raw_arguments,
                "result": None,
                "is_error": False,
            }
            calls.append(entry)
            by_id[call.id] = entry
        if message.role == "tool":
            found = by_id.get(message.tool_call_id or "")
            if found is None or found["result"] is not None:
                found = {"tool": message.name, "arguments": None, "result": None, "is_error": False}
                calls.append(found)
            found["result"] = message.content
            found["is_error"] = message.is_error
    state: dict[str, Any] = {}
    if run.history:
        state["conversation_before"] = [{"role": m.role, "content": m.content} for m in run.history]
    state["input"] = run.input
    state["tool_calls"] = calls
    state["output"] = run.output
    return state


# --- answers to scores -------------------------------------------------------------------------


def _scored(
    response: Any, asked: list[str], criterion: str, definition: Criterion, grader: JevGrader
) -> CriterionScore:
    sdk = load_sdk()  # imported already: this batch was answered through it
    answers = getattr(response, "answers", None)
    if not isinstance(answers, Mapping):
        return unscored(
            criterion,
            definition,
            grader,
            f"Jev's reply was malformed: it has no answers ({type(response).__name__})",
        )
    answer = answers.get(criterion)
    if answer is None:
        return unscored(
            criterion,
            definition,
            grader,
            f"Jev's reply has no answer to the question {criterion!r} "
            f"(it answered {', '.join(map(repr, answers)) or 'nothing'})",
        )
    details: dict[str, Any]
    try:
        score, details, reason = answer_score(answer, grader.name, grader.levels, grader.options, sdk)
    except Malformed as bad:
        return unscored(criterion, definition, grader, f"Jev's answer to {criterion!r} was malformed: {bad}")
    probability = details["probability"]
    unsure = UNSURE_LOW <= probability <= UNSURE_HIGH
    details["unsure"] = unsure
    details["model"] = getattr(response, "model", None)
    usage = getattr(response, "usage", None)
    # Jev's reply reports tokens (input billable, output free) but no price, and machine's pricing
    # table has no TypeSafe rate, so nothing is charged to the budget and cost_usd stays 0. The
    # usage (of the whole shared request) is kept so a price can be applied later.
    details["usage"] = {
        "input_tokens": getattr(usage, "input_tokens", None),
        "output_tokens": getattr(usage, "output_tokens", None),
    }
    details["request_criteria"] = asked
    if unsure:
        reason += f"; unsure (between {UNSURE_LOW} and {UNSURE_HIGH}): escalate to a stronger grader"
    return CriterionScore(
        criterion=criterion,
        weight=definition.weight,
        grader=f"jev:{grader.name}",
        score=score,
        reason=reason,
        details=details,
    )
