"""Grading: rubrics of weighted criteria, and the graders that decide them (checks, model judges, judge
panels, Jev questions) put together by an evaluator into a run's scorecard.

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._evaluator import Evaluator, define_evaluator
    from ._graders import Batch, CheckGrader, GradeContext, Grader, check, unscored
    from ._jev import Jev, JevGrader, jev
    from ._judge import (
        DEFAULT_JUDGE_EFFORT,
        DEFAULT_JUDGE_MODEL,
        JudgeGrader,
        PanelGrader,
        judge,
        judge_panel,
        transcript,
    )
    from ._rubric import Criterion, Rubric, define_rubric

_HOMES = {
    "Evaluator": "._evaluator",
    "define_evaluator": "._evaluator",
    "Batch": "._graders",
    "CheckGrader": "._graders",
    "GradeContext": "._graders",
    "Grader": "._graders",
    "check": "._graders",
    "unscored": "._graders",
    "Jev": "._jev",
    "JevGrader": "._jev",
    "jev": "._jev",
    "DEFAULT_JUDGE_EFFORT": "._judge",
    "DEFAULT_JUDGE_MODEL": "._judge",
    "JudgeGrader": "._judge",
    "PanelGrader": "._judge",
    "judge": "._judge",
    "judge_panel": "._judge",
    "transcript": "._judge",
    "Criterion": "._rubric",
    "Rubric": "._rubric",
    "define_rubric": "._rubric",
}
"""The module each public name is defined in."""

__all__ = [
    "DEFAULT_JUDGE_EFFORT",
    "DEFAULT_JUDGE_MODEL",
    "Batch",
    "CheckGrader",
    "Criterion",
    "Evaluator",
    "GradeContext",
    "Grader",
    "Jev",
    "JevGrader",
    "JudgeGrader",
    "PanelGrader",
    "Rubric",
    "check",
    "define_evaluator",
    "define_rubric",
    "jev",
    "judge",
    "judge_panel",
    "transcript",
    "unscored",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
