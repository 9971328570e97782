"""machine.measure.stats against values worked out by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import inspect
import math
import typing

import pytest

from machine.measure import stats as _stats
from machine.measure.stats import (
    Agreement,
    Paired,
    agreement,
    case_means,
    kept_bad_share,
    mean,
    paired,
    pass_hat,
    pass_hat_k,
    sign_test,
    standard_error,
    thresholded,
    unsure,
)

# --- mean and standard error -------------------------------------------------------------------


def test_mean_by_hand() -> None:
    # (1 + 2 + 6) / 3 = 3
    assert mean([1.0, 2.0, 6.0]) == 3.0
    # (0.5 + 0.25) / 2 = 0.375
    assert mean([0.5, 0.25]) == 0.375


def test_mean_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        mean([])


def test_standard_error_by_hand() -> None:
    # values 1, 2, 6: mean 3, deviations -2, -1, 3, squares 4 + 1 + 9 = 14,
    # sample variance 14 / 2 = 7, se = sqrt(7 / 3)
    assert standard_error([1.0, 2.0, 6.0]) == pytest.approx(math.sqrt(7 / 3))
    # two values 0, 1: mean 0.5, squares 0.25 + 0.25 = 0.5, variance 0.5 / 1, se = sqrt(0.5 / 2) = 0.5
    assert standard_error([0.0, 1.0]) == pytest.approx(0.5)


def test_standard_error_edges() -> None:
    assert standard_error([]) is None
    assert standard_error([0.7]) is None
    # equal values are exactly 0, even where the float mean would round (0.1 three times)
    assert standard_error([0.1, 0.1, 0.1]) == 0.0


# --- per-case means and pass^k -----------------------------------------------------------------


def test_case_means_leaves_out_cases_without_scored_trials() -> None:
    # a: (1 + 0 + 1) / 3 = 2/3; b: 0.5 / 1; c has no scored trial: left out, not 0
    means = case_means({"a": [1.0, 0.0, 1.0], "b": [0.5], "c": []})
    assert means == {"a": pytest.approx(2 / 3), "b": 0.5}
    assert case_means({}) == {}


def test_pass_hat_by_hand() -> None:
    # 3 of 5 passed, k = 2: C(3, 2) / C(5, 2) = 3 / 10
    assert pass_hat(3, 5, 2) == pytest.approx(0.3)
    # k = 1 is the pass rate: C(3, 1) / C(5, 1) = 3 / 5
    assert pass_hat(3, 5, 1) == pytest.approx(0.6)
    # k = 5: C(3, 5) = 0, a flaky case never passes five in a row
    assert pass_hat(3, 5, 5) == 0.0
    # all passed: C(5, 5) / C(5, 5) = 1; k = 0 is 1 by definition
    assert pass_hat(5, 5, 5) == 1.0
    assert pass_hat(2, 4, 0) == 1.0
    # 4 of 6, k = 3: C(4, 3) / C(6, 3) = 4 / 20 = 0.2
    assert pass_hat(4, 6, 3) == pytest.approx(0.2)


def test_pass_hat_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        pass_hat(6, 5, 1)
    with pytest.raises(ValueError):
        pass_hat(-1, 5, 1)
    with pytest.raises(ValueError):
        pass_hat(2, 3, 4)
    with pytest.raises(ValueError):
        pass_hat(2, 3, -1)


def test_pass_hat_k_by_hand() -> None:
    # k = 2: (3, 5) -> 3/10, (2, 2) -> 1, (1, 1) has only one trial: left out.
    # mean (0.3 + 1) / 2 = 0.65
    assert pass_hat_k([(3, 5), (2, 2), (1, 1)], 2) == pytest.approx(0.65)
    # k = 1: (3/5 + 2/2 + 1/1) / 3 = 2.6 / 3
    assert pass_hat_k([(3, 5), (2, 2), (1, 1)], 1) == pytest.approx(2.6 / 3)


def test_pass_hat_k_without_enough_trials_is_none() -> None:
    assert pass_hat_k([], 1) is None
    assert pass_hat_k([(1, 1), (0, 2)], 3) is None


# --- paired comparison -------------------------------------------------------------------------


def test_paired_by_hand() -> None:
    a = {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0]}
    b = {"a": [1.0, 1.0], "b": [0.0, 1.0], "c": [1.0]}
    # per-case means A: 0.5, 1, 0; B: 1, 0.5, 1 -> diffs (B - A): 0.5, -0.5, 1
    # mean diff (0.5 - 0.5 + 1) / 3 = 1/3
    # deviations 1/6, -5/6, 2/3 -> squares 1/36 + 25/36 + 16/36 = 42/36 = 7/6
    # sample sd sqrt((7/6) / 2) = sqrt(7/12); se = sqrt(7/12) / sqrt(3) = sqrt(7/36) = sqrt(7)/6
    # z = (1/3) / (sqrt(7)/6) = 2 / sqrt(7)
    result = paired(a, b)
    assert isinstance(result, Paired)
    assert result.cases == 3
    assert result.diff == pytest.approx(1 / 3)
    assert result.se == pytest.approx(math.sqrt(7) / 6)
    assert result.z == pytest.approx(2 / math.sqrt(7))


def test_paired_is_antisymmetric() -> None:
    a = {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0]}
    b = {"a": [1.0, 1.0], "b": [0.0, 1.0], "c": [1.0]}
    forward, backward = paired(a, b), paired(b, a)
    assert backward.diff == pytest.approx(-forward.diff)
    assert backward.se == pytest.approx(forward.se)
    assert forward.z is not None and backward.z == pytest.approx(-forward.z)


def test_paired_leaves_out_cases_on_one_side_only() -> None:
    # "only_a" is missing from B, "only_b" from A, "empty" has no scored trial on B:
    # none of them is compared or counted. Remaining: x: 1 - 0 = 1, y: 0.5 - 0 = 0.5
    # mean 0.75; deviations +-0.25, squares 0.125, variance 0.125 / 1, se = sqrt(0.125 / 2) = 0.25
    # z = 0.75 / 0.25 = 3
    a = {"x": [0.0], "y": [0.0, 0.0], "only_a": [1.0], "empty": [1.0]}
    b = {"x": [1.0], "y": [1.0, 0.0], "only_b": [0.0], "empty": []}
    result = paired(a, b)
    assert result.cases == 2
    assert result.diff == pytest.approx(0.75)
    assert result.se == pytest.approx(0.25)
    assert result.z == pytest.approx(3.0)
    assert (result.up, result.down, result.p_value) == (2, 0, 0.25)


def test_the_sign_test_is_exact_and_never_strong_on_a_handful_of_cases() -> None:
    assert sign_test(2, 0) == 0.25  # two cases that both rose: a one in four chance with no difference
    assert sign_test(6, 0) == 1 / 64
    assert sign_test(5, 1) == pytest.approx(7 / 64)
    assert sign_test(0, 3) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(8, 2) == pytest.approx((45 + 10 + 1) / 1024)
    with pytest.raises(ValueError):
        sign_test(-1, 2)
    # a difference of rounding size is no change
    assert paired({"a": [0.1 + 0.2]}, {"a": [0.3]}).up == 0


def test_paired_identical_variants() -> None:
    scores = {"a": [0.2, 0.4], "b": [1.0], "c": [0.1, 0.1, 0.1]}
    result = paired(scores, scores)
    assert result == Paired(diff=0.0, se=0.0, z=None, cases=3)


def test_paired_constant_shift_has_no_variance_and_no_z() -> None:
    # every case improves by exactly 0.5: diff 0.5, se 0; z stays None (not +inf)
    result = paired({"a": [0.0], "b": [0.5]}, {"a": [0.5], "b": [1.0]})
    assert result == Paired(diff=0.5, se=0.0, z=None, cases=2, up=2)


def test_paired_one_case_and_no_case() -> None:
    # one case: diff 1 - 0.5 = 0.5, no spread can be estimated
    assert paired({"a": [0.0, 1.0]}, {"a": [1.0]}) == Paired(diff=0.5, se=0.0, z=None, cases=1, up=1)
    assert paired({}, {}) == Paired(diff=0.0, se=0.0, z=None, cases=0)
    assert paired({"a": [1.0]}, {"b": [1.0]}) == Paired(diff=0.0, se=0.0, z=None, cases=0)


# --- agreement ---------------------------------------------------------------------------------


def _table(both_pass: int, ref_only: int, cand_only: int, both_fail: int) -> tuple[list[bool], list[bool]]:
    reference = [True] * both_pass + [True] * ref_only + [False] * cand_only + [False] * both_fail
    candidate = [True] * both_pass + [False] * ref_only + [True] * cand_only + [False] * both_fail
    return reference, candidate


def test_agreement_on_a_known_table() -> None:
    #                candidate pass  candidate fail
    # reference pass       20              5          (25)
    # reference fail       10             15          (25)
    #                     (30)           (20)         n = 50
    reference, candidate = _table(20, 5, 10, 15)
    result = agreement(reference, candidate)
    assert result.n == 50
    # observed (20 + 15) / 50 = 0.7
    assert result.agreement == pytest.approx(0.7)
    # chance (25 * 30 + 25 * 20) / 50^2 = 1250 / 2500 = 0.5; kappa (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert result.kappa == pytest.approx(0.4)
    # false pass: 10 of the 25 reference fails; false fail: 5 of the 25 reference passes
    assert result.false_pass_rate == pytest.approx(0.4)
    assert result.false_fail_rate == pytest.approx(0.2)
    # precision: 20 of the 30 candidate passes
    assert result.precision == pytest.approx(2 / 3)
    # cells 0.4, 0.1, 0.2, 0.3; marginals reference 0.5 / 0.5, candidate 0.6 / 0.4
    # I = 0.4 log2(0.4/0.3) + 0.1 log2(0.1/0.2) + 0.2 log2(0.2/0.3) + 0.3 log2(0.3/0.2)
    #   = 0.4 (2 - L) - 0.1 + 0.2 (1 - L) + 0.3 (L - 1)   with L = log2 3
    #   = 0.6 - 0.3 L ~= 0.1245
    assert result.bits == pytest.approx(0.6 - 0.3 * math.log2(3))


def test_agreement_second_table_kappa() -> None:
    # Classic example: 45 both pass, 15 ref only, 25 cand only, 15 both fail (n = 100)
    # observed 0.60; reference passes 60, candidate passes 70
    # chance 0.6 * 0.7 + 0.4 * 0.3 = 0.42 + 0.12 = 0.54; kappa (0.60 - 0.54) / 0.46 = 0.06 / 0.46
    result = agreement(*_table(45, 15, 25, 15))
    assert result.kappa == pytest.approx(0.06 / 0.46)


def test_perfect_agreement_carries_the_reference_entropy() -> None:
    # reference 3 pass, 1 fail; candidate identical.
    # H(reference) = -(3/4 log2 3/4 + 1/4 log2 1/4) = 3/4 (2 - log2 3) + 1/4 * 2 = 2 - 3/4 log2 3 ~= 0.811
    reference = [True, True, True, False]
    result = agreement(reference, list(reference))
    assert result.agreement == 1.0
    assert result.bits == pytest.approx(2 - 0.75 * math.log2(3))
    # chance 3/4 * 3/4 + 1/4 * 1/4 = 10/16; kappa (1 - 10/16) / (1 - 10/16) = 1
    assert result.kappa == pytest.approx(1.0)
    assert result.false_pass_rate == 0.0
    assert result.false_fail_rate == 0.0
    assert result.precision == 1.0


def test_balanced_perfect_agreement_is_one_bit() -> None:
    result = agreement([True, False], [True, False])
    assert result.bits == pytest.approx(1.0)


def test_inverted_candidate_has_full_information_but_negative_kappa() -> None:
    # candidate always says the opposite: agreement 0, chance 0.5 * 0.5 * 2 = 0.5, kappa (0 - 0.5) / 0.5 = -1
    # it still tells everything about the reference: 1 bit
    result = agreement([True, False, True, False], [False, True, False, True])
    assert result.agreement == 0.0
    assert result.kappa == pytest.approx(-1.0)
    assert result.bits == pytest.approx(1.0)
    assert result.false_pass_rate == 1.0
    assert result.false_fail_rate == 1.0
    assert result.precision == 0.0


def test_independent_candidate_carries_no_information() -> None:
    # table 1, 1, 1, 1: observed 0.5, chance 0.5 * 0.5 + 0.5 * 0.5 = 0.5, kappa 0; every cell
    # 1/4 = 1/2 * 1/2 so I = 0
    result = agreement([True, True, False, False], [True, False, True, False])
    assert result.kappa == pytest.approx(0.0)
    assert result.bits == pytest.approx(0.0)
    assert result.agreement == 0.5


def test_kappa_undefined_when_chance_agreement_is_one() -> None:
    # both always pass: chance 1 * 1 + 0 * 0 = 1, kappa 0 / 0 -> None; no information either
    result = agreement([True, True, True], [True, True, True])
    assert result.kappa is None
    assert result.agreement == 1.0
    assert result.bits == 0.0
    assert result.false_pass_rate is None  # no reference fails
    assert result.false_fail_rate == 0.0
    assert result.precision == 1.0


def test_rates_with_empty_denominators_are_none() -> None:
    # reference always passes, candidate always fails: chance 1 * 0 + 0 * 1 = 0, kappa (0 - 0) / 1 = 0
    result = agreement([True, True], [False, False])
    assert result.kappa == 0.0
    assert result.false_pass_rate is None
    assert result.false_fail_rate == 1.0
    assert result.precision is None  # candidate never passes
    assert result.bits == 0.0


def test_agreement_on_no_samples() -> None:
    assert agreement([], []) == Agreement(0, None, None, None, None, None, None)


def test_agreement_needs_the_same_samples() -> None:
    with pytest.raises(ValueError):
        agreement([True], [True, False])


def test_thresholded_scores() -> None:
    # at least the threshold passes
    assert thresholded([0.2, 0.5, 0.9], 0.5) == [False, True, True]
    reference = thresholded([1.0, 0.8, 0.1, 0.0], 0.5)
    candidate = thresholded([0.6, 0.4, 0.7, 0.0], 0.5)
    # reference T T F F, candidate T F T F: table 1, 1, 1, 1 -> independent
    assert agreement(reference, candidate).bits == pytest.approx(0.0)


def test_kept_bad_share_by_hand() -> None:
    # fpr 0.1, tpr 0.9, base 10%: bad 0.1 * 0.9 = 0.09, good 0.9 * 0.1 = 0.09 -> 0.5
    assert kept_bad_share(0.1, 0.9, 0.1) == pytest.approx(0.5)
    # base 50%: bad 0.1 * 0.5 = 0.05, good 0.9 * 0.5 = 0.45 -> 0.05 / 0.5 = 0.1
    assert kept_bad_share(0.1, 0.9, 0.5) == pytest.approx(0.1)
    # fpr 0.4, tpr 0.8 (false fail 0.2), base 10%: bad 0.36, good 0.08 -> 0.36 / 0.44 = 9/11
    assert kept_bad_share(0.4, 0.8, 0.1) == pytest.approx(9 / 11)
    # a perfect filter keeps no bad sample; a filter that keeps nothing keeps no bad sample either
    assert kept_bad_share(0.0, 1.0, 0.1) == 0.0
    assert kept_bad_share(0.0, 0.0, 0.5) == 0.0
    # base 0: everything kept is bad
    assert kept_bad_share(0.2, 0.9, 0.0) == 1.0


def test_kept_bad_share_rejects_rates_outside_zero_one() -> None:
    with pytest.raises(ValueError):
        kept_bad_share(1.5, 0.9, 0.1)
    with pytest.raises(ValueError):
        kept_bad_share(0.1, -0.1, 0.1)
    with pytest.raises(ValueError):
        kept_bad_share(0.1, 0.9, 2.0)


def test_unsure_band() -> None:
    assert [unsure(p) for p in (0.0, 0.29, 0.3, 0.5, 0.7, 0.71, 1.0)] == [
        False,
        False,
        True,
        True,
        True,
        False,
        False,
    ]


# --- UNSCORED never enters ---------------------------------------------------------------------


def test_the_api_takes_only_scored_values() -> None:
    """No parameter admits None (UNSCORED) or any marker: only floats, ints and booleans."""
    allowed = {"float", "int", "bool", "str"}
    for name in _stats.__all__:
        function = getattr(_stats, name)
        if inspect.isclass(function):
            continue
        hints = typing.get_type_hints(function)
        hints.pop("return", None)
        for parameter, hint in hints.items():
            leaves = {a.__name__ for a in _leaf_types(hint)}
            assert leaves <= allowed, f"{name}({parameter}) admits {leaves - allowed}"


def _leaf_types(hint: object) -> list[type]:
    args = typing.get_args(hint)
    if not args:
        assert isinstance(hint, type)
        return [hint]
    return [leaf for arg in args for leaf in _leaf_types(arg)]


def test_an_unscored_value_slipped_in_is_an_error_not_a_zero() -> None:
    # None is what an UNSCORED grade carries; if a caller forgets to filter, fail loudly
    unscored: typing.Any = None
    with pytest.raises(TypeError):
        mean([1.0, unscored])
    with pytest.raises(TypeError):
        paired({"a": [1.0, unscored]}, {"a": [1.0]})
