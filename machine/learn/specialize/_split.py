"""Kept cases split into the ones a machine is rehearsed and improved on (``cases.json``) and the ones
kept apart to check a change (``holdout.json``): enough of those for the gate to be able to pass a
candidate (``floor``, the cases its sign test needs to change at the default ``min_z``) wherever more
than that many are kept, whatever the share."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from machine.errors import BadInputError, Fix

T = TypeVar("T")


def split_cases(
    cases: Sequence[T], holdout_share: float, *, seed: str, floor: int = 0
) -> tuple[list[T], list[T]]:
    """``(cases, holdout)``: about ``holdout_share`` of ``cases`` held out, and at least ``floor`` where
    more than ``floor`` are given, chosen by a shuffle seeded with ``seed`` (the same cases and seed
    always split the same way). With two or more cases and a share above 0 at least one is held out and
    at least one kept; each part keeps the given order."""
    if (
        isinstance(holdout_share, bool)
        or not isinstance(holdout_share, int | float)
        or not 0 <= holdout_share < 1
    ):
        raise BadInputError(
            f"a held-out share of {holdout_share!r} cannot split cases: give a number from 0 up to "
            "(not including) 1, e.g. 0.25",
            fixes=[Fix(argument="holdout_share", value="0.25", purpose="to hold out a quarter of them")],
        )
    count = len(cases)
    held = 0
    if holdout_share > 0 and count >= 2:
        held = min(max(1, round(count * holdout_share)), count - 1)
        if count > floor:
            held = max(held, floor)
    order = list(range(count))
    random.Random(seed).shuffle(order)
    out = set(order[:held])
    return [c for i, c in enumerate(cases) if i not in out], [c for i, c in enumerate(cases) if i in out]
