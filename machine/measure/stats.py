"""The statistics every decision here rests on, in one small module.

UNSCORED grades and failed runs never enter these figures: callers pass only scored values and
count the rest apart. Every function takes plain floats or booleans, so an "unscored" marker
cannot slip in as a 0 (peers note 1). Pure Python: the inputs are a few hundred numbers at most.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Agreement",
    "Paired",
    "agreement",
    "case_means",
    "kept_bad_share",
    "mean",
    "paired",
    "pass_hat",
    "pass_hat_k",
    "sign_test",
    "standard_error",
    "thresholded",
    "unsure",
]


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean, summed with fsum so long runs of scores lose no precision to rounding.

    Raises ValueError on no values: a mean of nothing is a caller's bug, not a 0.
    """
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def standard_error(values: Sequence[float]) -> float | None:
    """Standard error of the mean: sample standard deviation (n - 1) / sqrt(n).

    None with fewer than two values (no spread can be estimated). Exactly 0.0 when all values are
    equal, so that rounding in the mean never turns "no variance" into a tiny se and a huge z.
    """
    n = len(values)
    if n < 2:
        return None
    if min(values) == max(values):
        return 0.0
    m = mean(values)
    variance = math.fsum((v - m) ** 2 for v in values) / (n - 1)
    return math.sqrt(variance / n)


def case_means(scores: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Mean over trials per case: the unit the paired comparison works on.

    Cases with no scored trial are left out rather than counted as 0.
    """
    return {case: mean(values) for case, values in scores.items() if values}


def pass_hat(passes: int, trials: int, k: int) -> float:
    """pass^k for one case: the chance that k of its trials, drawn without replacement, all pass.

    C(passes, k) / C(trials, k) (an unbiased estimate of p^k), which shows flakiness a mean
    hides: a case passing 3 of 5 has mean 0.6 but pass^5 = 0.
    """
    if trials < 0 or not 0 <= passes <= trials:
        raise ValueError(f"need 0 <= passes <= trials, got passes={passes}, trials={trials}")
    if not 0 <= k <= trials:
        raise ValueError(f"need 0 <= k <= trials, got k={k}, trials={trials}")
    return math.comb(passes, k) / math.comb(trials, k)


def pass_hat_k(per_case: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean pass^k over cases given as (passes, decided trials); None when no case has k trials.

    Give decided trials (``CaseResult.decided``), not scored ones: an undecided run is neither a pass
    nor a fail. Cases with fewer than k of them are left out: pass^k is not defined for them.
    """
    values = [pass_hat(passes, trials, k) for passes, trials in per_case if trials >= k]
    return mean(values) if values else None


@dataclass(frozen=True)
class Paired:
    """Variant B against variant A, paired by case: per-case mean of B minus per-case mean of A."""

    diff: float
    """The mean over cases of the per-case differences."""
    se: float
    """Its standard error over cases (sample standard deviation of the differences / sqrt(cases))."""
    z: float | None
    """diff / se; None when se is 0 or there are fewer than two cases."""
    cases: int
    """Cases with at least one scored run on both sides (the only ones compared)."""
    up: int = 0
    """Of them, the cases whose mean rose (B above A)."""
    down: int = 0
    """Of them, the cases whose mean fell."""

    @property
    def p_value(self) -> float | None:
        """The exact one-sided sign test of B over A on the cases that moved (None when none moved)."""
        return sign_test(self.up, self.down) if self.up + self.down else None


MOVED = 1e-9
"""A per-case difference smaller than this is no change (a rounding error of the means)."""


def sign_test(up: int, down: int) -> float:
    """The exact one-sided sign test: the chance of ``up`` or more rises among ``up + down`` cases that
    moved, were each equally likely to rise or fall (no real difference). Exact for any count (binomial
    sums), so a handful of cases can never look like strong evidence: two cases that both rose give 0.25.
    """
    if up < 0 or down < 0:
        raise ValueError(f"need counts of at least 0, got up={up}, down={down}")
    n = up + down
    if n == 0:
        return 1.0
    return math.fsum(math.comb(n, k) for k in range(up, n + 1)) / (1 << n)


def paired(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]]) -> Paired:
    """Compare two variants' scores per case (case id -> scores of its trials).

    Pairing by case removes the case-to-case spread that dominates unpaired comparisons. Only
    cases with a scored trial on both sides count. With fewer than two cases se is 0.0 and z is
    None (no spread can be estimated); with se 0 z is None even when diff is not 0, because an
    infinite z would read as overwhelming evidence from what is really "no variance" — callers
    say so in words.
    """
    means_a = case_means(a)
    means_b = case_means(b)
    diffs = [means_b[case] - means_a[case] for case in sorted(means_a.keys() & means_b.keys())]
    if not diffs:
        return Paired(diff=0.0, se=0.0, z=None, cases=0)
    diff = mean(diffs)
    se = standard_error(diffs)
    up, down = sum(d > MOVED for d in diffs), sum(d < -MOVED for d in diffs)
    if se is None or se == 0.0:
        return Paired(diff=diff, se=0.0, z=None, cases=len(diffs), up=up, down=down)
    return Paired(diff=diff, se=se, z=diff / se, cases=len(diffs), up=up, down=down)


def thresholded(scores: Sequence[float], threshold: float) -> list[bool]:
    """Scores turned into pass/fail labels: a score passes when it is at least the threshold."""
    return [score >= threshold for score in scores]


def unsure(probability: float) -> bool:
    """True for a candidate's probability in [0.3, 0.7]: too close to a coin flip to trust alone."""
    return 0.3 <= probability <= 0.7


@dataclass(frozen=True)
class Agreement:
    """A candidate grader's pass/fail labels against a reference grader's, on the same samples.

    Rates are None when their denominator is empty, never 0: "no data" is not "perfect".
    """

    n: int
    """Samples compared."""
    agreement: float | None
    """Share of samples where both give the same label; None with no samples."""
    kappa: float | None
    """Cohen's kappa: agreement beyond chance; None when chance agreement is 1 (both constant and equal)."""
    false_pass_rate: float | None
    """Among samples the reference fails, the share the candidate passes (a bad run let through)."""
    false_fail_rate: float | None
    """Among samples the reference passes, the share the candidate fails (a good run rejected)."""
    precision: float | None
    """Among samples the candidate passes, the share the reference passes; None with no candidate passes."""
    bits: float | None
    """Mutual information I(reference; candidate) in bits per label; None with no samples."""


def _entropy_term(joint: float, left: float, right: float) -> float:
    """One cell's share of the mutual information: p(x, y) log2(p(x, y) / (p(x) p(y))).

    0 for an empty cell (the limit of p log p as p goes to 0).
    """
    if joint == 0.0:
        return 0.0
    return joint * math.log2(joint / (left * right))


def agreement(reference: Sequence[bool], candidate: Sequence[bool]) -> Agreement:
    """How well a candidate grader reproduces the reference grader's pass/fail labels.

    Agreement alone flatters a grader on lopsided data (always "pass" agrees 90% when 90% pass),
    so kappa corrects for chance, the two error rates say which way it errs, and bits — the mutual
    information between the two labels from the 2x2 table of empirical frequencies — say how much
    one label tells about the other: H(reference) when the candidate is a perfect copy (or a
    perfect inversion), 0 when it is independent of the reference.
    """
    if len(reference) != len(candidate):
        raise ValueError(f"reference has {len(reference)} labels, candidate {len(candidate)}")
    n = len(reference)
    both_pass = sum(1 for r, c in zip(reference, candidate, strict=True) if r and c)
    ref_only = sum(1 for r, c in zip(reference, candidate, strict=True) if r and not c)
    cand_only = sum(1 for r, c in zip(reference, candidate, strict=True) if c and not r)
    both_fail = n - both_pass - ref_only - cand_only
    ref_pass = both_pass + ref_only
    ref_fail = n - ref_pass
    cand_pass = both_pass + cand_only
    cand_fail = n - cand_pass
    if n == 0:
        return Agreement(0, None, None, None, None, None, None)

    observed = (both_pass + both_fail) / n
    # Chance agreement in counts (times n^2), kept as integers so "exactly 1" is tested exactly.
    chance_n2 = ref_pass * cand_pass + ref_fail * cand_fail
    kappa = None
    if chance_n2 != n * n:
        kappa = (observed - chance_n2 / (n * n)) / (1 - chance_n2 / (n * n))

    cells = [
        (both_pass, ref_pass, cand_pass),
        (ref_only, ref_pass, cand_fail),
        (cand_only, ref_fail, cand_pass),
        (both_fail, ref_fail, cand_fail),
    ]
    bits = math.fsum(_entropy_term(joint / n, left / n, right / n) for joint, left, right in cells)
    return Agreement(
        n=n,
        agreement=observed,
        kappa=kappa,
        false_pass_rate=cand_only / ref_fail if ref_fail else None,
        false_fail_rate=ref_only / ref_pass if ref_pass else None,
        precision=both_pass / cand_pass if cand_pass else None,
        bits=max(bits, 0.0),
    )


def kept_bad_share(false_pass_rate: float, true_pass_rate: float, base_pass_rate: float) -> float:
    """Share of bad samples among those a filter using the candidate grader keeps (Bayes).

    At base pass rate b, bad kept = fpr * (1 - b) and good kept = tpr * b; the share is
    bad / (bad + good). A grader with a small false-pass rate can still keep mostly bad samples
    when good ones are rare, which is why it is shown at several base rates. When the filter keeps
    nothing (both zero) no bad sample is kept: 0.0.
    """
    for name, value in (
        ("false_pass_rate", false_pass_rate),
        ("true_pass_rate", true_pass_rate),
        ("base_pass_rate", base_pass_rate),
    ):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    bad = false_pass_rate * (1 - base_pass_rate)
    good = true_pass_rate * base_pass_rate
    if bad + good == 0.0:
        return 0.0
    return bad / (bad + good)
