"""The process inside the sandbox that loads an untrusted machine
(``python -m machine.learn.specialize.vetting._stand_in_main REQUEST.json``): with ``mode: describe`` it
reports the machine's parts as plain data (``StandIn``), with ``mode: grade`` it grades one run with the
machine's own graders of the criteria asked for (``Grades``). The limits, the channel and the loading are
the vetting process's."""

from __future__ import annotations

import sys

from machine.grade import Grader
from machine.runs import Run, Tool
from machine.spec import Machine

from ._main import Session, grade_once, hidden_tests_grader, load, main
from ._sandboxed import Reported
from ._stand_in import CriterionNote, GradeNote, Grades, StandIn, ToolNote

LIBRARY_TOOLS = "machine.sandboxes.tools"


def _tool(tool: Tool, parent: Machine) -> ToolNote:
    if parent.tool(tool.name) is tool:
        return ToolNote(name=tool.name, origin="parent")
    if getattr(tool.fn, "__module__", "").startswith(LIBRARY_TOOLS + "."):
        return ToolNote(name=tool.name, origin="library")
    return ToolNote(name=tool.name, origin="own")


def _criterion(name: str, child: Machine) -> CriterionNote:
    grader: Grader = child.evaluator.graders[name]
    definition = child.rubric[name]
    kind, module = type(grader).__name__, type(grader).__module__
    note = CriterionNote(
        name=name,
        description=definition.description,
        weight=definition.weight,
        grader=grader.name,
        required=definition.required,
        how="sandbox",
    )
    if module == "machine.grade._judge" and kind in ("JudgeGrader", "PanelGrader"):
        settings = getattr(grader, "batch", grader)
        note.how, note.judge_model = "judge", getattr(settings, "model", None)
        note.judge_effort = getattr(settings, "effort", None)
    elif hidden_tests_grader(grader):
        note.how, note.command = "hidden_tests", getattr(grader, "command", None)
        note.timeout_s = getattr(grader, "timeout_s", None)
    return note


def describe(session: Session) -> Reported:
    """The machine's parts, as data only."""
    loaded = load(session)
    if loaded is None:
        return StandIn()
    parent, child = loaded
    if child.parent is not parent:
        return StandIn(problems=[f"{session.name!r} is not a child of {parent.name!r}"])
    own = [c for c in child.rubric if c not in parent.rubric]
    return StandIn(
        name=child.name,
        parent=parent.name,
        intent=child.intent,
        instructions=child.own_instructions,
        model=child.model,
        max_steps=child.max_steps,
        tools=[_tool(t, parent) for t in child.tools if parent.tool(t.name) is not t],
        criteria=[_criterion(c, child) for c in own],
        own_transform=child.transform_reasoning is not parent.transform_reasoning,
    )


def grade(session: Session) -> Reported:
    """One run graded with the machine's own graders of the criteria asked for."""
    loaded = load(session)
    if loaded is None:
        return Grades()
    _, child = loaded
    run = Run.model_validate(session.request.get("run"))
    grades = {}
    for criterion in session.request.get("criteria", []):
        if criterion not in child.rubric:
            continue
        score, reason = grade_once(
            session, child.evaluator.graders[criterion], run, criterion, child.rubric[criterion]
        )
        grades[criterion] = GradeNote(score=score, reason=reason)
    return Grades(grades=grades)


def work(session: Session) -> Reported:
    return describe(session) if session.request.get("mode") == "describe" else grade(session)


if __name__ == "__main__":
    main(sys.argv, work)
