"""Graders: what decides one criterion of a run.

A grader that cannot decide returns ``score=None`` with a reason (UNSCORED). It never guesses
0 or 1: an unscored criterion is kept out of means and gates, and counted on its own.
"""

from __future__ import annotations

import inspect
import math
import os
import sysconfig
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from machine.errors import DefinitionError
from machine.runs import CriterionScore

if TYPE_CHECKING:
    from machine.budget import Budget
    from machine.runs import Effort, ModelAccess, Run

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
        except Exception as error:  # a crashing check is UNSCORED, never 0: a bug to fix, named where it is
            return raised(criterion, definition, self, error)
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


def raised(criterion: str, definition: Criterion, grader: CheckGrader, error: Exception) -> CriterionScore:
    """The UNSCORED grade of a check that raised: the exception and the line of the person's code it came
    from, in the reason and in ``details`` (``raised``, ``at``) for a suite to count."""
    at = where(error)
    grade = unscored(
        criterion,
        definition,
        grader,
        f"check {grader.name!r} raised {type(error).__name__}: {error} at {at}: a bug in the check, so "
        "the criterion was not measured; fix the check and grade the run again",
    )
    grade.details.update(raised=type(error).__name__, at=at)
    return grade


def where(error: BaseException) -> str:
    """``file:line`` of the innermost frame of ``error``'s traceback in the person's code, not this
    library's nor Python's own (a ``KeyError`` raised inside ``json`` names the check's line that called
    it); the innermost frame when none is. The file is relative to the working folder when under it."""
    frames = traceback.extract_tb(error.__traceback__)[1:]  # the first is the grader's call of the check
    if not frames:
        return "an unknown line"
    own = [f for f in frames if not any(f.filename.startswith(prefix) for prefix in _not_theirs())]
    frame = (own or frames)[-1]
    path = Path(frame.filename)
    if path.is_absolute() and path.is_relative_to(Path.cwd()):
        path = path.relative_to(Path.cwd())
    return f"{path}:{frame.lineno}"


@cache
def _not_theirs() -> tuple[str, ...]:
    """The folders whose code is not a person's check: this library and Python's libraries."""
    paths = sysconfig.get_paths()
    folders = {str(Path(__file__).parents[1])} | {
        paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")
    }
    return tuple(folder.rstrip(os.sep) + os.sep for folder in folders)


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
