"""What a round shows the optimizer: the cases the parent instructions fell short on (each with its
worst run) and a few it passed (each with its best), every proposal of the round a different sample of
the failures, drawn with a seed so a search can be repeated."""

from __future__ import annotations

import random
from collections.abc import Sequence

from machine.runs import Run, passes
from machine.spec import Case

from ._brief import Example


def examples(
    graded: dict[str, list[Run]], cases: Sequence[Case], pass_score: float
) -> tuple[list[Example], list[Example]]:
    """The failing and the passing cases, from each case's scored runs (failed runs and runs with
    nothing scored are left out, as they are of every figure)."""
    failing, passing = [], []
    for case in cases:
        scored = [r for r in graded.get(case.id, []) if r.status == "ok" and r.score is not None]
        if not scored:
            continue
        passed = sum(passes(r.score or 0.0, pass_score) for r in scored)
        ranked = sorted(scored, key=lambda r: (r.score or 0.0, r.created_at))
        if passed < len(scored):
            failing.append(Example(case, ranked[0], len(scored), passed))
        else:
            passing.append(Example(case, ranked[-1], len(scored), passed))
    return failing, passing


def samples(
    failing: Sequence[Example],
    passing: Sequence[Example],
    count: int,
    *,
    shown: int,
    passes_shown: int,
    seed: str,
) -> list[tuple[list[Example], list[Example]]]:
    """``count`` samples of up to ``shown`` failures (and ``passes_shown`` passes) each: the failures
    shuffled once and dealt in turn, so the samples differ wherever there are enough to go round."""
    rng = random.Random(seed)
    deck = list(failing)
    rng.shuffle(deck)
    good = list(passing)
    rng.shuffle(good)
    size = min(shown, len(deck))
    dealt = []
    for k in range(count):
        start = (k * size) % len(deck) if deck else 0
        picked = [deck[(start + i) % len(deck)] for i in range(size)]
        extra = [good[(k * passes_shown + i) % len(good)] for i in range(min(passes_shown, len(good)))]
        dealt.append((picked, extra))
    return dealt
