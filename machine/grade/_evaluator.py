"""Evaluators: exactly one grader for every criterion of a rubric."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from machine.errors import DefinitionError
from machine.runs import Scorecard, checked_score

from ._graders import GradeContext, Grader, unscored
from ._rubric import Rubric

if TYPE_CHECKING:
    from machine.runs import CriterionScore, Run

    from ._graders import Batch
    from ._rubric import Criterion


@dataclass(frozen=True)
class Evaluator:
    """A rubric with one grader per criterion: what turns a run into its scorecard."""

    rubric: Rubric
    graders: Mapping[str, Grader]
    origins: Mapping[str, str] = field(default_factory=dict)
    """Criterion name -> the machine that declared it (set for inherited criteria)."""

    async def grade(self, run: Run, ctx: GradeContext | None = None, *, pass_score: float = 1.0) -> Scorecard:
        """Grade every criterion: graders one by one, and each batch (panel, Jev) in one call."""
        checked_score(pass_score)
        ctx = ctx or GradeContext()
        results: dict[str, CriterionScore] = {}
        batches: dict[Batch, dict[str, tuple[Criterion, Grader]]] = {}
        singles: list[str] = []
        for name in self.rubric:
            batch = getattr(self.graders[name], "batch", None)
            if batch is None:
                singles.append(name)
            else:
                batches.setdefault(batch, {})[name] = (self.rubric[name], self.graders[name])

        async def one(name: str) -> None:
            grader = self.graders[name]
            try:
                results[name] = await grader.grade(run, name, self.rubric[name], ctx)
            except Exception as error:  # a bug in a grader leaves its criterion UNSCORED; grading goes on
                reason = f"grader {grader.kind}:{grader.name} raised {type(error).__name__}: {error}"
                results[name] = unscored(name, self.rubric[name], grader, reason)

        async def many(batch: Batch, members: dict[str, tuple[Criterion, Grader]]) -> None:
            try:
                grades = await batch.grade_batch(run, members, ctx)
                failure = "its batch returned no grade for it"
            except Exception as error:
                grades, failure = {}, f"its batch raised {type(error).__name__}: {error}"
            for name, (definition, grader) in members.items():
                results[name] = grades.get(name) or unscored(name, definition, grader, failure)

        if not batches and all(self.graders[name].kind == "check" for name in singles):
            for name in singles:  # checks are quick: a task group would only add overhead
                await one(name)
        else:
            import anyio  # loaded by the first run graded with a judge, not by every command

            async with anyio.create_task_group() as group:
                for name in singles:
                    group.start_soon(one, name)
                for batch, members in batches.items():
                    group.start_soon(many, batch, members)
        return Scorecard(
            rubric_fingerprint=self.rubric.fingerprint,
            criteria={name: results[name] for name in self.rubric},
            pass_score=pass_score,
        )

    def merged(self, other: Evaluator, *, origin: str) -> Evaluator:
        """This evaluator plus ``other``'s criteria, which ``origin`` declared."""
        rubric = self.rubric.merged(other.rubric)
        origins = {**self.origins, **{name: origin for name in other.rubric}}
        return Evaluator(rubric, {**self.graders, **other.graders}, origins)


def define_evaluator(rubric: Rubric, graders: Mapping[str, Grader]) -> Evaluator:
    """Pair every criterion with its grader; a missing or extra one is an error naming it."""
    if not isinstance(rubric, Rubric):
        raise DefinitionError("define_evaluator takes a Rubric from define_rubric as its first argument")
    missing = [name for name in rubric if name not in graders]
    extra = [name for name in graders if name not in rubric]
    if missing:
        raise DefinitionError(
            f"criterion {missing[0]!r} has no grader: give define_evaluator a grader for every criterion"
            + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else "")
        )
    if extra:
        raise DefinitionError(
            f"grader for {extra[0]!r} matches no criterion of the rubric (criteria: {', '.join(rubric)})"
        )
    for name, grader in graders.items():
        if not isinstance(grader, Grader):
            raise DefinitionError(
                f"grader for {name!r} is {type(grader).__name__}, not a grader: use check(), judge() or jev()"
            )
    return Evaluator(rubric, {name: graders[name] for name in rubric})
