"""Specialize: the author machine writes a child of a machine for a focus and the cases to rehearse it
on, or drafts a rubric for a machine; nothing it writes is trusted until it is vetted (``vetting``) and
the person trusts it."""

from .._replies import read_cases
from ._authoring import AUTHOR
from ._draft import RubricDraft, draft_rubric
from ._options import DraftRubricOptions, SpecializeOptions
from ._plan import plan_draft_rubric, plan_specialize
from ._render import format_rubric_draft, format_specialization
from ._report import Attempt, Specialization, SpecializeCost
from ._shape import CaseShape, case_shape
from ._specialize import specialize
from ._split import split_cases

__all__ = [
    "AUTHOR",
    "Attempt",
    "CaseShape",
    "DraftRubricOptions",
    "RubricDraft",
    "Specialization",
    "SpecializeCost",
    "SpecializeOptions",
    "case_shape",
    "draft_rubric",
    "format_rubric_draft",
    "format_specialization",
    "plan_draft_rubric",
    "plan_specialize",
    "read_cases",
    "specialize",
    "split_cases",
]
