"""The process that vets a rubric draft (``python -m machine.learn.specialize.vetting._draft REQUEST.json``):
the same limits, channel and checks as a child's vetting, on ``rubric_draft.py`` beside the machine. It must
define ``rubric`` (``define_rubric``) and ``graders`` (criterion -> grader) that ``define_evaluator``
accepts, with 2 to 8 criteria (a child's: none named like an inherited one); each check is tried on the
sample runs like a child's."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from dataclasses import replace

from machine.grade import Rubric, define_evaluator
from machine.spec import Machine, MachineLoader

from ._main import (
    MARGIN_S,
    OutOfTime,
    Session,
    describe,
    grade_check,
    hidden_tests_grader,
    main,
    second_looks,
    time_limit,
)
from ._result import Vetting

DRAFT_FILE = "rubric_draft.py"
"""The proposal file ``machine draft-rubric`` writes beside a machine."""
CRITERIA = (2, 8)
"""How many criteria a draft may have."""


def _drafted(session: Session, spec: Machine) -> Machine | None:
    """The machine with the draft's rubric and graders, or None with the problems said."""
    loader = MachineLoader(session.machines)
    try:
        with time_limit(session.left() - MARGIN_S):
            module = importlib.import_module(loader.package_of(session.name) + "." + DRAFT_FILE[:-3])
    except OutOfTime:
        session.problem(f"{DRAFT_FILE} did not finish loading in time: do no work when it is imported")
        return None
    except BaseException as error:  # whatever the author's code raised
        session.problem(f"{DRAFT_FILE} does not load: {describe(error, session.folder)}")
        return None
    rubric, graders = getattr(module, "rubric", None), getattr(module, "graders", None)
    if not isinstance(rubric, Rubric) or not isinstance(graders, Mapping):
        session.problem(
            f"{DRAFT_FILE} must define `rubric = define_rubric({{...}})` and "
            "`graders = {criterion: grader}`"
        )
        return None
    try:
        evaluator = define_evaluator(rubric, dict(graders))
    except Exception as error:
        session.problem(f"its graders do not fit its rubric: {describe(error, session.folder)}")
        return None
    low, high = CRITERIA
    if not low <= len(rubric) <= high:
        session.problem(f"the draft has {len(rubric)} criteria: write {low} to {high}")
    inherited = [c for c in rubric if spec.parent is not None and c in spec.parent.rubric]
    if inherited:
        session.problem(
            f"criterion {inherited[0]!r} is inherited from {spec.parent.name if spec.parent else ''!r}: a "
            "child's draft holds only its own criteria, named otherwise"
        )
    return replace(spec, rubric=rubric, evaluator=evaluator)


def vet_draft(session: Session) -> Vetting:
    """Load the machine, then its draft; try the draft's checks on the sample runs."""
    try:
        with time_limit(session.left() - MARGIN_S):
            spec = MachineLoader(session.machines).load(session.name)
    except BaseException as error:
        session.problem(f"the machine {session.name!r} does not load: {describe(error, session.folder)}")
        return session.vetting
    drafted = _drafted(session, spec)
    if drafted is None:
        return session.vetting
    vetting, graders = session.vetting, drafted.evaluator.graders
    vetting.own = list(drafted.rubric)
    vetting.judged = [c for c in vetting.own if graders[c].kind != "check"]
    vetting.hidden_tests = [c for c in vetting.own if hidden_tests_grader(graders[c])]
    for criterion in vetting.own:
        if graders[criterion].kind != "check" or criterion in vetting.hidden_tests:
            continue
        if session.left() < 1.0:
            session.problem(f"vetting ran out of time before the check of criterion {criterion!r} was run")
            break
        result = grade_check(session, drafted, criterion)
        vetting.checks.append(result)
        vetting.second_look.extend(second_looks(result))
    return vetting


if __name__ == "__main__":
    main(sys.argv, vet_draft)
