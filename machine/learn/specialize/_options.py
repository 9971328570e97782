"""What one ``specialize`` and one ``draft_rubric`` call take: every default and bound once, for the SDK,
the command line and the MCP tool alike. Both ask the author machine, so the options of asking it are
one type each, shared by the two."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .._options import Options

MAX_CASES = 100
MAX_RETRIES = 5
MAX_TIMEOUT_S = 600.0

AuthorModel = Annotated[
    str | None,
    Field(
        default=None, description="The author machine's model (default: its own, thinkingmachines/Inkling)."
    ),
]
Retries = Annotated[
    int,
    Field(default=2, ge=0, le=MAX_RETRIES, strict=True, description="Times refused work is sent back."),
]
TimeoutS = Annotated[
    float,
    Field(
        default=60.0,
        ge=1,
        le=MAX_TIMEOUT_S,
        description="Seconds the author's work may take to load and grade the sample runs (and each "
        "case's tests to run).",
    ),
]


class SpecializeOptions(Options):
    """The options of ``specialize``: the child's focus and name, and how many cases to write for it."""

    operation = "specialize"

    focus: str = Field(description="What the child specializes in, in a phrase.")
    slug: str | None = Field(None, description="The child's name under its parent (default: from the focus).")
    model: str | None = Field(None, description="The child's model (default: its parent's).")
    cases: int = Field(16, ge=1, le=MAX_CASES, strict=True, description="Cases to write for the child.")
    holdout_share: float = Field(
        0.25,
        ge=0,
        lt=1,
        description="Share of the kept cases written to holdout.json (at least 6 of more than 6 kept, "
        "as the gate needs).",
    )
    reuse_cases: bool = Field(False, description="Rewrite only the child's files; keep its cases.")
    author_model: AuthorModel
    retries: Retries
    timeout_s: TimeoutS


class DraftRubricOptions(Options):
    """The options of ``draft_rubric``: how the author machine is asked."""

    operation = "draft_rubric"

    author_model: AuthorModel
    retries: Retries
    timeout_s: TimeoutS
