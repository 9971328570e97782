"""Grading: rubrics of weighted criteria, and the graders that decide them (checks, model judges, judge
panels, Jev questions) put together by an evaluator into a run's scorecard."""

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
