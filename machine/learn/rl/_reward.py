"""The reward of one sampled run: the rubric's weighted sum over *all* its criteria, an UNSCORED criterion
counting 0. Not the run's score: the score leaves unscored criteria out, so a policy trained on it would
learn to make a hard judge fail (its criterion then drops out and the rest count for more). A run with
nothing scored has no reward at all (no gradient, counted), and a failed run is 0."""

from __future__ import annotations

from pydantic import Field

from machine.errors import BadInputError
from machine.grade import Rubric
from machine.runs import Record, Run


class Reward(Record):
    """One run's reward, with what went into it, for the step's statistics and the training record."""

    run_id: str
    case_id: str | None = None
    reward: float | None
    """In [0, 1]: the weighted sum over the rubric's criteria (weights normalised to sum to 1), UNSCORED
    counting 0; None when nothing was scored (the run carries no gradient); 0 for a failed run."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    """Each criterion's grade as given (None: UNSCORED, or no scorecard): the step's criterion means
    leave the None out, as every mean in this product does."""
    unscored: list[str] = Field(default_factory=list)
    """The criteria that counted 0 because they were not scored."""
    failed: bool = False
    """The run ended in an error: reward 0 whatever was graded, so failing is never a way out."""

    @property
    def no_signal(self) -> bool:
        """Whether the run carries no gradient: nothing of it was scored."""
        return self.reward is None


def reward_of(run: Run, rubric: Rubric) -> Reward:
    """``run``'s reward under ``rubric`` (the machine's current one): refused when the run was graded under
    another rubric, whose criteria and weights would be summed as this one's."""
    card = run.scorecard
    if card is not None and card.rubric_fingerprint != rubric.fingerprint:
        raise BadInputError(
            f"run {run.id} was graded under another rubric ({card.rubric_fingerprint}, not "
            f"{rubric.fingerprint}): grade it again with the machine's evaluator before rewarding it"
        )
    grades = card.criteria if card is not None else {}
    scores = {name: (grades[name].score if name in grades else None) for name in rubric}
    unscored = [name for name, score in scores.items() if score is None]
    failed = run.status == "error"
    made = {"run_id": run.id, "case_id": run.case_id, "scores": scores, "unscored": unscored}
    if failed:
        return Reward(reward=0.0, failed=True, **made)
    if len(unscored) == len(scores):
        return Reward(reward=None, **made)
    return Reward(reward=weighted_sum(scores, rubric), **made)


def weighted_sum(scores: dict[str, float | None], rubric: Rubric) -> float:
    """Σ weight·score over every criterion of ``rubric`` divided by Σ weight: the scorecard's
    normalisation, but over all criteria, so an UNSCORED one weighs in at 0 instead of dropping out."""
    total = sum(criterion.weight for criterion in rubric.values())
    got = sum(criterion.weight * (scores.get(name) or 0.0) for name, criterion in rubric.items())
    return got / total
