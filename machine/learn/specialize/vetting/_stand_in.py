"""An untrusted machine run without importing it: a stand-in built outside the sandbox from what a process
inside it reports, and graders that grade its own checks inside it.

A machine a model wrote may be rehearsed before the person trusts it (an agent host specializes, then
rehearses), but only so: its files are loaded inside the library sandbox (``_stand_in_main``), which reports
its parts as plain data (``StandIn``). Outside, the stand-in is rebuilt from that data and from trusted
code alone: the parent (which must load, so be trusted or the person's own), its inherited criteria and
tools, library tools and graders named by name, judges from their settings; the child's own checks are
``SandboxedCheck`` graders that grade each run inside a fresh sandbox. Anything that would need its code to
run outside (a tool or a reasoning transform of its own) keeps it from being rehearsed until it is trusted.
What the sandbox reports is hostile data: every field is bounded, and nothing in it can name code to run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, cast

from pydantic import Field

from machine.errors import NotTrusted
from machine.grade import Criterion, GradeContext, Grader
from machine.runs import CriterionScore, Model, Run, Sandboxes

from ._sandboxed import Limits, Process, Reported, run_sandboxed

Name = Annotated[str, Field(max_length=200)]
Short = Annotated[str, Field(max_length=4_000)]


class ToolNote(Model):
    """One tool of the machine: the parent's own object, a library tool, or one of its own (code)."""

    name: Name
    origin: Literal["parent", "library", "own"]


class CriterionNote(Model):
    """One criterion the machine declares, and how it is graded outside the sandbox: by a judge (its
    settings), by the library's hidden tests (their command), or inside a sandbox (its code)."""

    name: Name
    description: Short
    weight: Annotated[float, Field(ge=0, le=1_000, allow_inf_nan=False)]
    grader: Name
    required: bool = False
    how: Literal["judge", "hidden_tests", "sandbox"]
    judge_model: Name | None = None
    judge_effort: Annotated[str, Field(max_length=40)] | None = None
    command: Short | None = None
    timeout_s: Annotated[float, Field(gt=0, le=3_600)] | None = None


class StandIn(Reported):
    """An untrusted machine's parts, as the process that loaded it in a sandbox reports them."""

    name: Name = ""
    parent: Name | None = None
    intent: Short = ""
    instructions: Annotated[str, Field(max_length=200_000)] = ""
    """Its own instructions (a child's parent's come first, from the parent)."""
    model: Name = ""
    max_steps: Annotated[int, Field(ge=1, le=10_000)] = 8
    tools: Annotated[list[ToolNote], Field(max_length=100)] = Field(default_factory=list)
    criteria: Annotated[list[CriterionNote], Field(max_length=50)] = Field(default_factory=list)
    """Its own criteria (a child's inherited ones are the parent's)."""
    own_transform: bool = False
    """Whether it transforms reasoning with a function of its own (code that would run outside)."""


class GradeNote(Model):
    score: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    reason: Annotated[str, Field(max_length=2_000)] = ""


class Grades(Reported):
    """What the machine's own graders made of one run, inside the sandbox: criterion -> grade."""

    grades: Annotated[dict[Name, GradeNote], Field(max_length=50)] = Field(default_factory=dict)


DESCRIBE = Process(
    "machine.learn.specialize.vetting._stand_in_main", "loading the untrusted machine", StandIn
)
GRADE = Process(
    "machine.learn.specialize.vetting._stand_in_main", "grading with the untrusted machine's checks", Grades
)


async def describe_untrusted(
    machines_dir: Path, name: str, *, sandboxes: Sandboxes | None, limits: Limits | None = None
) -> StandIn:
    """What the untrusted machine ``name`` is, found out by loading it inside a sandbox; NotTrusted when
    it cannot be rehearsed that way (it does not load there, or has code that would have to run outside)."""
    request = {"mode": "describe", "name": name}
    found = await run_sandboxed(
        machines_dir, request, DESCRIBE, sandboxes=sandboxes, limits=limits or Limits()
    )
    stand_in = cast(StandIn, found)
    problems = list(stand_in.problems)
    if stand_in.parent is None and not problems:
        problems.append("it is not a child of a machine of yours, so nothing of it can be run outside")
    own = [t.name for t in stand_in.tools if t.origin == "own"]
    if own:
        problems.append(f"its own tools ({', '.join(own)}) are code a model wrote, which would run outside")
    if stand_in.own_transform:
        problems.append("its reasoning transform is code a model wrote, which would run outside")
    if problems:
        raise NotTrusted(
            f"machine {name!r} holds code a model wrote that you have not trusted, and it cannot be "
            f"rehearsed in the sandbox: {'; '.join(problems)}",
            machine=name,
        )
    return stand_in


@dataclass(eq=False)
class SandboxChecks:
    """The untrusted machine's own code graders: one sandbox a run grades all of them (a Batch)."""

    machines_dir: Path
    machine: str
    sandboxes: Sandboxes | None
    limits: Limits = field(default_factory=Limits)

    async def grade_batch(
        self, run: Run, members: Mapping[str, tuple[Criterion, Grader]], ctx: GradeContext
    ) -> dict[str, CriterionScore]:
        request = {
            "mode": "grade",
            "name": self.machine,
            "run": run.model_dump(mode="json"),
            "criteria": sorted(members),
        }
        found = cast(
            Grades,
            await run_sandboxed(
                self.machines_dir, request, GRADE, sandboxes=self.sandboxes, limits=self.limits
            ),
        )
        scores = {}
        for criterion, (definition, grader) in members.items():
            note = found.grades.get(criterion)
            why = "; ".join(found.problems) or "the sandbox returned no grade for it"
            scores[criterion] = CriterionScore(
                criterion=criterion,
                weight=definition.weight,
                grader=f"{grader.kind}:{grader.name}",
                score=note.score if note is not None else None,
                reason=(note.reason if note is not None else why) + " (graded in the sandbox)",
            )
        return scores


@dataclass(frozen=True)
class SandboxedCheck:
    """A criterion of an untrusted machine whose grader is its own code: graded in the sandbox."""

    name: str
    batch: SandboxChecks
    kind: str = "check"

    async def grade(
        self, run: Run, criterion: str, definition: Criterion, ctx: GradeContext
    ) -> CriterionScore:
        return (await self.batch.grade_batch(run, {criterion: (definition, self)}, ctx))[criterion]
