"""The agreement report: each run graded by both graders, the figures at each threshold, the
disagreements, and what grading cost."""

from __future__ import annotations

from pydantic import Field, computed_field, field_serializer

from machine.runs import Model

from .stats import Agreement, unsure


class Pair(Model):
    """One run graded by both: the reference's score and the candidate's."""

    run_id: str
    case_id: str | None
    reference: float
    candidate: float
    reason: str
    """The candidate's reason, cut to REASON_CHARS."""
    probability: float
    """The candidate's probability of passing (Jev's), else its score."""

    @property
    def unsure(self) -> bool:
        """Whether the candidate's probability is too near a coin flip to trust alone."""
        return unsure(self.probability)


class AtThreshold(Model):
    """The figures at one threshold on the candidate's score."""

    threshold: float
    n: int
    agreement: float | None
    kappa: float | None
    false_pass_rate: float | None
    false_fail_rate: float | None
    precision: float | None
    bits: float | None
    kept_bad: dict[float, float | None]
    """Base pass rate -> share of bad samples among those a candidate filter keeps; None when a rate
    it needs has no data (no reference passes or no reference fails)."""

    @property
    def stats(self) -> Agreement:
        """The agreement figures at this threshold."""
        return Agreement(**self.model_dump(exclude={"threshold", "kept_bad"}))

    @field_serializer("kept_bad")
    def _kept_bad(self, kept: dict[float, float | None]) -> list[dict[str, float | None]]:
        return [{"base_pass_rate": base, "share": share} for base, share in kept.items()]


class Disagreement(Model):
    """A run where the candidate's label differs from the reference's at some threshold."""

    pair: Pair = Field(exclude=True)
    at: tuple[float, ...]
    """The thresholds at which the candidate's label differs from the reference's."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.pair.run_id

    @computed_field  # type: ignore[prop-decorator]
    @property
    def case_id(self) -> str | None:
        """The run's case."""
        return self.pair.case_id

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reference(self) -> float:
        """The reference's score."""
        return self.pair.reference

    @computed_field  # type: ignore[prop-decorator]
    @property
    def candidate(self) -> float:
        """The candidate's score."""
        return self.pair.candidate

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reason(self) -> str:
        """The candidate's reason."""
        return self.pair.reason


class GraderInfo(Model):
    """Which grader a side of the comparison is, and (for the reference) the score it passes at."""

    grader: str
    pass_mark: float | None = None


class Costs(Model):
    """What each side's grading cost."""

    reference: float = 0.0
    candidate: float = 0.0


def _reasons(counts: dict[str, int]) -> list[dict[str, str | int]]:
    return [{"reason": reason, "count": count} for reason, count in counts.items()]


class AgreementReport(Model):
    """How well a candidate grader reproduces a machine's own grader on its stored runs."""

    machine: str
    criterion: str
    reference: GraderInfo
    candidate: GraderInfo
    runs: int
    """Runs considered: finished, with a scorecard (the newest ``limit``)."""
    reference_reused: int = 0
    reference_regraded: int = 0
    reference_stale: int = 0
    """Runs left out because their stored reference was unusable and regrading was off."""
    reference_unscored: int = 0
    """Runs left out because the reference stayed UNSCORED (after regrading, when on)."""
    candidate_unscored: int = 0
    unscored_reasons: dict[str, int] = Field(default_factory=dict)
    """Why candidates were UNSCORED, with how many times each reason came."""
    reference_unscored_reasons: dict[str, int] = Field(default_factory=dict)
    """Why references stayed UNSCORED after regrading, with counts."""
    pairs: list[Pair] = Field(default_factory=list, exclude=True)
    thresholds: list[AtThreshold] = Field(default_factory=list)
    disagreements: list[Disagreement] = Field(default_factory=list)
    cost_usd: Costs = Field(default_factory=Costs)

    _serialize_reasons = field_serializer("unscored_reasons", "reference_unscored_reasons")(
        lambda self, counts: _reasons(counts)
    )

    @property
    def reference_grader(self) -> str:
        """The machine's own grader of the criterion."""
        return self.reference.grader

    @property
    def candidate_grader(self) -> str:
        """The candidate grader, as the report names it."""
        return self.candidate.grader

    @property
    def reference_cost_usd(self) -> float:
        """What regrading references cost."""
        return self.cost_usd.reference

    @property
    def candidate_cost_usd(self) -> float:
        """What the candidate's grading cost."""
        return self.cost_usd.candidate

    @computed_field  # type: ignore[prop-decorator]
    @property
    def n(self) -> int:
        """Runs with both grades scored: the ones compared."""
        return len(self.pairs)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unsure(self) -> int:
        """Candidates whose probability lies in [0.3, 0.7]."""
        return sum(1 for p in self.pairs if p.unsure)

    def at(self, threshold: float) -> AtThreshold:
        """The figures at ``threshold``."""
        for row in self.thresholds:
            if row.threshold == threshold:
                return row
        raise KeyError(threshold)
