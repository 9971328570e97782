"""What vetting a child machine found: the problems to send back to its author, the notes that ask for a
second look, and what each of its check graders made of the sample runs. Plain data, so the separate
process that loads the author's code can hand it back as JSON."""

from __future__ import annotations

from pydantic import Field

from machine.runs import Model

from ._sandboxed import Reported


class SampleScore(Model):
    """One check's grade of one sample run, and of the same run with its output and trajectory removed."""

    run_id: str
    case_id: str | None = None
    passed: bool | None = None
    """Whether the run passed on the machine's own rubric (None: it was not graded), so a check's scores
    can be read against the runs it should tell apart."""
    score: float | None = None
    reason: str = ""
    score_without_output: float | None = None
    """The grade of the run with ``output=""`` and ``trajectory=[]``: equal to ``score`` on every sample,
    the check reads only what the run started with."""


class CheckResult(Model):
    """What one of the child's own check criteria made of every sample run."""

    criterion: str
    grader: str
    samples: list[SampleScore] = Field(default_factory=list)


class Vetting(Reported):
    """Whether an author's child machine may be kept: ``ok`` when nothing in ``problems``.

    ``problems`` are sentences for the author (the child does not load, is not a child of its parent on the
    model asked for, changes an inherited criterion, has a check that raises); ``second_look`` are notes
    about checks that may not grade what the run did. ``judged`` are its own criteria graded by a judge,
    which vetting does not run."""

    second_look: list[str] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    inherited: list[str] = Field(default_factory=list)
    own: list[str] = Field(default_factory=list)
    judged: list[str] = Field(default_factory=list)
    hidden_tests: list[str] = Field(default_factory=list)
    """Its own criteria graded by the library's hidden-tests grader, whose tests come with the cases."""
    model: str | None = None
    seconds: float = 0.0
