"""Kept cases split into cases.json and holdout.json: deterministic by the seed, disjoint, covering."""

from __future__ import annotations

import pytest

from machine.errors import BadInputError
from machine.learn.specialize import split_cases

CASES = [{"id": f"c{i}", "input": f"question {i}"} for i in range(12)]


def ids(cases: list[dict[str, str]]) -> list[str]:
    return [c["id"] for c in cases]


def test_the_split_is_deterministic_disjoint_and_covers_every_case() -> None:
    kept, held = split_cases(CASES, 0.25, seed="dev/datetime")
    assert (ids(kept), ids(held)) == tuple(map(ids, split_cases(list(CASES), 0.25, seed="dev/datetime")))
    assert len(held) == 3 and len(kept) == 9
    assert set(ids(kept)).isdisjoint(ids(held))
    assert sorted(ids(kept) + ids(held)) == sorted(ids(CASES))
    assert ids(kept) == [i for i in ids(CASES) if i in ids(kept)]  # each part keeps the given order


def test_another_seed_holds_out_other_cases() -> None:
    held = {tuple(ids(split_cases(CASES, 0.25, seed=f"child-{n}")[1])) for n in range(6)}
    assert len(held) > 1


@pytest.mark.parametrize(
    ("count", "share", "expected"), [(2, 0.1, 1), (3, 0.9, 2), (5, 0.5, 2), (1, 0.5, 0), (0, 0.5, 0)]
)
def test_at_least_one_held_out_and_one_kept_from_two_cases(count: int, share: float, expected: int) -> None:
    kept, held = split_cases(CASES[:count], share, seed="s")
    assert len(held) == expected and len(kept) == count - expected


def test_a_share_of_zero_holds_out_nothing() -> None:
    assert split_cases(CASES, 0, seed="s") == (CASES, [])


@pytest.mark.parametrize("share", [1, 1.5, -0.1, float("nan"), True])
def test_a_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(BadInputError, match="held-out share") as error:
        split_cases(CASES, share, seed="s")
    assert error.value.fixes and error.value.fixes[0].argument == "holdout_share"


@pytest.mark.parametrize(
    ("count", "share", "held_out"), [(12, 0.25, 6), (16, 0.25, 6), (7, 0.25, 6), (30, 0.25, 8), (6, 0.25, 2)]
)
def test_more_cases_than_the_floor_hold_out_at_least_the_floor(
    count: int, share: float, held_out: int
) -> None:
    many = [{"id": f"c{i}", "input": f"question {i}"} for i in range(count)]
    kept, held = split_cases(many, share, seed="s", floor=6)
    assert (len(kept), len(held)) == (count - held_out, held_out)


def test_a_share_of_zero_holds_out_nothing_whatever_the_floor() -> None:
    assert split_cases(CASES, 0, seed="s", floor=6) == (CASES, [])
