"""Jev graders: simple questions about a run answered by TypeSafe's Jev with calibrated probabilities.

``jev()`` makes a factory; its ``.noul()``, ``.score(levels)`` and ``.choice(options)`` make one grader
per criterion, and the criterion's description is the question. Jev answers many questions about one
text in a single request, so all the Jev criteria of one grading of a run go out together.

Every Jev grader belongs to a batch (see ``machine._graders.Batch``) keyed by the Jev model, so the
evaluator hands all of a run's Jev criteria to one batch, which sends one request with a question per
criterion; graders made by different ``jev()`` calls (a parent's and a child's) share it too.

Scores. ``noul``: the probability of yes. ``score(levels)``: Jev's expected level (the
probability-weighted mean of the level positions 0..n-1, which the SDK returns as ``ScoreAnswer.score``)
divided by n-1. ``choice``: the probability-weighted mean of the options' scores (the SDK returns the
probability of every label; the top label's score alone would throw that away, and for a two-option
choice scored 1 and 0 the mean equals the probability, as for ``noul``).

Unsure. ``details["probability"]`` is the probability that the criterion passes: P(yes) for a noul,
and for levels and options the probability mass on those scoring at least 0.5. Between 0.3 and 0.7
(both included) the grade is marked ``details["unsure"] = True``: Jev's answers vary slightly between
identical calls, so such a grade may land on either side and should be escalated to a stronger grader.
The score is kept as it is.

Failures (no key, SDK not installed, rate limit, timeout, rejected key, malformed reply, a question
left unanswered) make the criterion UNSCORED with a reason that names the failure: never 0, never raised.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.to_thread

from ._errors import DefinitionError
from ._graders import GradeContext, Grader, unscored
from ._rubric import Criterion
from ._runs import CriterionScore, Run

API_KEY_ENV = "TYPESAFE_API_KEY"
UNSURE_LOW = 0.3
UNSURE_HIGH = 0.7
PASS_MARK = 0.5
"""A level or option scoring at least this counts towards the probability that the criterion passes."""

QuestionKind = Literal["noul", "score", "choice"]


@dataclass(frozen=True)
class _Option:
    label: str
    score: float
    description: str | None = None


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
        self, kind: QuestionKind, levels: tuple[str, ...] = (), options: tuple[_Option, ...] = ()
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
        made: list[_Option] = []
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
            made.append(_Option(label, float(score), description))
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
    options: tuple[_Option, ...] = ()
    model: str | None = None
    kind: str = "jev"

    @property
    def batch(self) -> JevRequest:
        return JevRequest(self.model)

    async def grade(self, run: Run, criterion: str, spec: Criterion, ctx: GradeContext) -> CriterionScore:
        return (await self.batch.grade_batch(run, {criterion: (spec, self)}, ctx))[criterion]


@dataclass(frozen=True)
class JevRequest:
    """The Batch of every Jev criterion of a run on one Jev model: one System One request."""

    model: str | None

    async def grade_batch(
        self, run: Run, members: Mapping[str, tuple[Criterion, Grader]], ctx: GradeContext
    ) -> dict[str, CriterionScore]:
        questions = {
            name: (spec, grader) for name, (spec, grader) in members.items() if isinstance(grader, JevGrader)
        }
        failure = None
        budget = ctx.budget
        if budget is not None and budget.exhausted:
            failure = f"budget spent ({budget.describe()}): Jev was not asked; raise --budget"
        else:
            try:
                response = await _ask(run, questions, self.model, ctx)
            except _Refused as refused:
                failure = refused.reason
            except Exception as error:  # every SDK and transport error becomes a reason, never a crash
                failure = _describe_error(error)
        if failure is not None:
            return {name: unscored(name, spec, grader, failure) for name, (spec, grader) in questions.items()}
        return {
            name: _scored(response, list(questions), name, spec, grader)
            for name, (spec, grader) in questions.items()
        }


def _sdk() -> Any:
    """The typesafe_sdk module, imported only when a Jev criterion is graded: it is the optional
    ``jev`` extra, and importing it costs start-up time the CLI does not otherwise pay."""
    return importlib.import_module("typesafe_sdk")


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def _ask(
    run: Run, members: Mapping[str, tuple[Criterion, JevGrader]], model: str | None, ctx: GradeContext
) -> Any:
    """One System One request with a question per criterion of the batch."""
    try:
        sdk = _sdk()
    except ImportError:
        raise _Refused(
            "the TypeSafe client is not installed: pip install 'machine[jev]' (the typesafe-sdk package) "
            "to grade Jev criteria"
        ) from None
    questions = {name: build_question(grader, spec, sdk) for name, (spec, grader) in members.items()}
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


def build_question(grader: JevGrader, spec: Criterion, sdk: Any) -> Any:
    """The SDK question (Noul, Score or Choice) for one criterion: its description is the instructions."""
    if grader.name == "noul":
        question = sdk.Noul(instructions=spec.description)
    elif grader.name == "score":
        question = sdk.Score(instructions=spec.description, criteria=list(grader.levels))
    else:
        question = sdk.Choice(
            instructions=spec.description,
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
    response: Any, asked: list[str], criterion: str, spec: Criterion, grader: JevGrader
) -> CriterionScore:
    sdk = _sdk()  # imported already: this batch was answered through it
    answers = getattr(response, "answers", None)
    if not isinstance(answers, Mapping):
        return unscored(
            criterion,
            spec,
            grader,
            f"Jev's reply was malformed: it has no answers ({type(response).__name__})",
        )
    answer = answers.get(criterion)
    if answer is None:
        return unscored(
            criterion,
            spec,
            grader,
            f"Jev's reply has no answer to the question {criterion!r} "
            f"(it answered {', '.join(map(repr, answers)) or 'nothing'})",
        )
    details: dict[str, Any]
    try:
        if grader.name == "noul":
            score, details, reason = _from_noul(answer, sdk)
        elif grader.name == "score":
            score, details, reason = _from_score(answer, grader.levels, sdk)
        else:
            score, details, reason = _from_choice(answer, grader.options, sdk)
    except _Malformed as bad:
        return unscored(criterion, spec, grader, f"Jev's answer to {criterion!r} was malformed: {bad}")
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
        weight=spec.weight,
        grader=f"jev:{grader.name}",
        score=score,
        reason=reason,
        details=details,
    )


class _Malformed(Exception):
    pass


def _probability(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Malformed(f"{what} is {value!r}, not a number")
    if not -1e-6 <= value <= 1 + 1e-6:
        raise _Malformed(f"{what} is {value!r}, outside [0, 1]")
    return min(max(float(value), 0.0), 1.0)


def _expect(answer: Any, answer_type: type, question: str) -> None:
    if not isinstance(answer, answer_type):
        raise _Malformed(f"a {question} question got a {type(answer).__name__}, not a {answer_type.__name__}")


def _from_noul(answer: Any, sdk: Any) -> tuple[float, dict[str, Any], str]:
    _expect(answer, sdk.NoulAnswer, "noul")
    p = _probability(answer.noul, "P(yes)")
    details = {"probability": p, "answer": "yes" if p >= PASS_MARK else "no"}
    return p, details, f"Jev: P(yes) = {p:.3f}"


def _weights(raw: Any, keys: Sequence[Any], names: Sequence[str]) -> dict[str, float]:
    """Probabilities keyed by level or label, checked and normalised to sum to 1."""
    if not isinstance(raw, Mapping) or not raw:
        raise _Malformed(f"its probabilities are {raw!r}")
    unknown = [key for key in raw if key not in keys]
    if unknown:
        raise _Malformed(f"it gives a probability to {unknown[0]!r}, which the question does not have")
    weights = {
        name: _probability(raw.get(key, 0.0), f"the probability of {name!r}")
        for key, name in zip(keys, names, strict=True)
    }
    total = sum(weights.values())
    if total <= 0:
        raise _Malformed("its probabilities sum to 0")
    return {name: w / total for name, w in weights.items()}


def _from_score(answer: Any, levels: tuple[str, ...], sdk: Any) -> tuple[float, dict[str, Any], str]:
    _expect(answer, sdk.ScoreAnswer, "score")
    top = len(levels) - 1
    expected = answer.score
    if isinstance(expected, bool) or not isinstance(expected, int | float) or not math.isfinite(expected):
        raise _Malformed(f"its expected level is {expected!r}, not a number")
    if not -1e-6 <= expected <= top + 1e-6:
        raise _Malformed(f"its expected level {expected!r} is outside the levels 0..{top}")
    weights = _weights(answer.probabilities, range(len(levels)), levels)
    score = min(max(float(expected) / top, 0.0), 1.0)
    p_pass = sum(w for i, w in enumerate(weights.values()) if i / top >= PASS_MARK - 1e-9)
    likeliest = max(weights, key=lambda level: weights[level])
    details = {
        "probability": p_pass,
        "answer": likeliest,
        "expected_level": float(expected),
        "probabilities": weights,
        "confidence": answer.confidence,
    }
    return score, details, f"Jev: expected level {expected:.2f} of 0..{top}, most likely {likeliest!r}"


def _from_choice(answer: Any, options: tuple[_Option, ...], sdk: Any) -> tuple[float, dict[str, Any], str]:
    _expect(answer, sdk.ChoiceAnswer, "choice")
    labels = [option.label for option in options]
    if answer.choice not in labels:
        raise _Malformed(f"it chose {answer.choice!r}, which is not one of {labels!r}")
    weights = _weights(answer.probabilities, labels, labels)
    scores = {option.label: option.score for option in options}
    score = min(max(sum(weights[label] * scores[label] for label in labels), 0.0), 1.0)
    p_pass = sum(weights[label] for label in labels if scores[label] >= PASS_MARK - 1e-9)
    details = {
        "probability": p_pass,
        "answer": answer.choice,
        "probabilities": weights,
        "confidence": answer.confidence,
    }
    return (
        score,
        details,
        f"Jev: chose {answer.choice!r} (p={weights[answer.choice]:.3f}), expected score {score:.3f}",
    )


# --- errors to reasons -------------------------------------------------------------------------


def _describe_error(error: Exception) -> str:
    """A sentence naming what went wrong with the Jev request and what to do."""
    try:
        sdk = _sdk()
    except ImportError:  # pragma: no cover - an error from the SDK implies it is installed
        return f"the Jev request failed: {type(error).__name__}: {error}"
    name = type(error).__name__
    if isinstance(error, sdk.TypeSafeRateLimitError):
        wait = error.retry_after_ms
        after = f"; TypeSafe asks to wait {wait / 1000:.1f} s" if wait is not None else ""
        return (
            f"Jev rate limit: TypeSafe answered 429 after the SDK's retries ({name}: {error}){after}; "
            "try again later"
        )
    if isinstance(error, sdk.TypeSafeAPITimeoutError):
        return f"the Jev request timed out ({name}: {error}); try again, or raise the client's timeout"
    if isinstance(error, sdk.TypeSafeAuthenticationError):
        return f"TypeSafe rejected the API key ({name}: {error}): check {API_KEY_ENV}"
    if isinstance(error, sdk.TypeSafePermissionDeniedError):
        return f"TypeSafe refused this request for the API key ({name}: {error}): check the key's access"
    if isinstance(error, sdk.TypeSafeAPIResponseValidationError):
        return f"Jev's reply was malformed at {error.field_path!r} ({name}: {error})"
    if isinstance(error, sdk.TypeSafeNotFoundError):
        return f"TypeSafe found no such resource ({name}: {error}): check the Jev model name"
    if isinstance(error, sdk.TypeSafeBadRequestError | sdk.TypeSafeUnprocessableEntityError):
        return f"TypeSafe rejected the Jev request as invalid ({name}: {error})"
    if isinstance(error, sdk.TypeSafeInternalServerError):
        return (
            f"TypeSafe failed with a server error after the SDK's retries ({name}: {error}); try again later"
        )
    if isinstance(error, sdk.TypeSafeAPIConnectionError):
        return f"could not reach TypeSafe ({name}: {error}); check the network or TYPESAFE_BASE_URL"
    if isinstance(error, sdk.TypeSafeError):
        return f"the Jev request failed ({name}: {error})"
    return f"the Jev request failed with an unexpected error ({name}: {error})"
