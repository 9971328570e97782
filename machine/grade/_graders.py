"""Graders: what decides one criterion of a run.

A grader that cannot decide returns ``score=None`` with a reason (UNSCORED). It never guesses
0 or 1: an unscored criterion is kept out of means and gates, and counted on its own.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from machine.errors import DefinitionError
from machine.runs import CriterionScore

if TYPE_CHECKING:
    from machine.runs import Budget, Effort, ModelAccess, Run

    from ._rubric import Criterion

CheckResult = bool | float | int | tuple[bool | float | int | None, str]
CheckFn = Callable[..., CheckResult | Awaitable[CheckResult]]


@dataclass(frozen=True)
class GradeContext:
    """What a grader may use besides the run: the budget to charge, model access and judge settings."""

    budget: Budget | None = None
    judge_model: str | None = None
    judge_effort: Effort | None = None
    models: ModelAccess | None = None
    jev_client: Any = None
    """A TypeSafe client for Jev graders; None builds one from TYPESAFE_API_KEY when first needed."""


@runtime_checkable
class Grader(Protocol):
    """Decides one criterion of a run: a score in [0, 1], or UNSCORED with the reason."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...

    async def grade(
        self, run: Run, criterion: str, definition: Criterion, ctx: GradeContext
    ) -> CriterionScore: ...


class Batch(Protocol):
    """Criteria that one request grades together (a judge panel, Jev's questions about a run).

    A grader with a ``batch`` attribute belongs to it: the evaluator hands the batch every criterion
    of the run it grades, with its grader, in one call; the batch returns a grade for each."""

    async def grade_batch(
        self, run: Run, members: Mapping[str, tuple[Criterion, Grader]], ctx: GradeContext
    ) -> dict[str, CriterionScore]: ...


def unscored(criterion: str, definition: Criterion, grader: Grader, reason: str) -> CriterionScore:
    """An UNSCORED grade of ``criterion`` by ``grader``, with the reason."""
    return CriterionScore(
        criterion=criterion,
        weight=definition.weight,
        grader=f"{grader.kind}:{grader.name}",
        score=None,
        reason=reason,
    )


@dataclass(frozen=True)
class CheckGrader:
    """A deterministic grader: a function of the run (and, if it asks, the run's case)."""

    name: str
    fn: CheckFn
    wants_case: bool
    kind: str = "check"

    async def grade(
        self, run: Run, criterion: str, definition: Criterion, ctx: GradeContext
    ) -> CriterionScore:
        try:
            result = self.fn(run, run.case or {}) if self.wants_case else self.fn(run)
            if inspect.isawaitable(result):
                result = await result
        except Exception as error:  # a crashing check is UNSCORED, never 0
            return unscored(
                criterion, definition, self, f"check {self.name!r} raised {type(error).__name__}: {error}"
            )
        reason = ""
        value: object = result
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], str):
            value, reason = result
            if value is None:  # the check says why it cannot grade this run
                return unscored(criterion, definition, self, reason or f"check {self.name!r} cannot grade it")
        score = _as_score(value)
        if score is None:
            return unscored(
                criterion,
                definition,
                self,
                f"check {self.name!r} returned {value!r}: a check must return a bool or a number in [0, 1]",
            )
        return CriterionScore(
            criterion=criterion,
            weight=definition.weight,
            grader=f"check:{self.name}",
            score=score,
            reason=reason,
        )


def _as_score(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0:
        return float(value)
    return None


def check(name: str, fn: CheckFn) -> CheckGrader:
    """A deterministic grader. ``fn(run)`` or ``fn(run, case)`` returns a bool, a score in [0, 1],
    or ``(score, reason)``; ``(None, reason)`` or an exception makes the criterion UNSCORED with that
    reason."""
    if not isinstance(name, str) or not name:
        raise DefinitionError("check(name, fn) needs a non-empty name")
    if not callable(fn):
        raise DefinitionError(f"check {name!r}: fn must be callable, got {type(fn).__name__}")
    try:
        positional = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):
        positional = []
    if len(positional) > 2:
        raise DefinitionError(
            f"check {name!r}: fn takes (run) or (run, case), not {len(positional)} arguments"
        )
    return CheckGrader(name=name, fn=fn, wants_case=len(positional) == 2)
