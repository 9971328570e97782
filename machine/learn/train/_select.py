"""Which stored runs are good examples to learn from: graded under the machine's current rubric, scoring at
least ``min_score`` (or marked good by a person), never marked bad, never a held-out case (by id, or by
input: compared without case, spacing or punctuation, near duplicates too; see ``_near_duplicates``),
optionally only the runs a given model produced itself, and each case's best ``best`` runs. Every filter's
count is kept, so an empty selection says which filter emptied it."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from machine.errors import BadInputError, Fix
from machine.runs import Run, Scorecard, TrainingStore, is_replayed
from machine.spec import Case

from .._near_duplicates import Inputs

TagFilter = Literal["good", "bad", "all"]
NOT_SAMPLES = "runs not sampled by an RL training, unless marked good"
"""The filter that keeps a policy's samples out, said in the funnel only where it left some out."""


@dataclass
class Funnel:
    """How many runs each filter let through, in order."""

    stored: int = 0
    steps: list[tuple[str, int, str]] = field(default_factory=list)
    """(what the filter keeps, runs left, how to widen it)."""
    fixes: list[tuple[Fix, ...]] = field(default_factory=list)
    """The arguments that widen each step, for the error an empty selection raises."""

    def empty_error(self, machine: str) -> BadInputError:
        stored = self.stored
        if stored == 0:
            return BadInputError(
                f"machine {machine!r} has no stored runs to learn from: run a suite first, or have train "
                "sample some",
                fixes=[
                    Fix(operation="suite", machine=machine, purpose="makes some"),
                    Fix("samples", "4", "to run each case 4 times first"),
                ],
            )
        before = stored
        for index, (what, left, widen) in enumerate(self.steps):
            if left == 0:
                fixes = self.fixes[index] if index < len(self.fixes) else ()
                return BadInputError(
                    f"no run of machine {machine!r} is left once only {what} are kept ({before} were before "
                    f"that filter): {widen}",
                    fixes=[
                        replace(fix, machine=fix.machine or machine) if fix.operation else fix
                        for fix in fixes
                    ],
                )
            before = left
        return BadInputError(f"no run of machine {machine!r} was selected")


def _since(value: str | None) -> tuple[str | None, datetime | None]:
    """``--since``: a suite id, or a time (ISO 8601)."""
    if value is None:
        return None, None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value, None
    return None, when if when.tzinfo else when.astimezone()


@dataclass
class Selection:
    """What to keep of a machine's stored runs."""

    fingerprint: str
    min_score: float = 1.0
    best: int | None = None
    since: str | None = None
    cases: Sequence[Case] | None = None
    held_out: Sequence[Case] = ()
    tags: TagFilter = "all"
    own_model: str | None = None
    from_model: str | None = None
    """Only runs of this model (a teacher's too: whatever harness made them)."""
    rl_samples: bool = False
    """Keep the runs an RL training sampled too (else only those a person marked good)."""

    def _filters(self) -> list[tuple[str, str, tuple[Fix, ...]]]:
        """Each filter: what it keeps, how to widen it in words, and the arguments that do it."""
        found: list[tuple[str, str, tuple[Fix, ...]]] = [
            ("runs that finished", "the stored runs all failed", ())
        ]
        if self.tags == "all":
            lower = Fix("min_score", "0.5", "to keep runs that score less")
            found.append((f"runs scoring at least {self.min_score:g}", "lower the score asked for", (lower,)))
        else:
            every = Fix("tags", "all", "to take graded runs whatever their marks")
            found.append((f"runs marked {self.tags}", "mark some, or take every graded run", (every,)))
        found.append(
            (
                "runs graded under the current rubric",
                "grade the stored runs again under it, or run a new suite",
                (Fix(operation="suite", machine="", purpose="grades new runs under it"),),
            )
        )
        if not self.rl_samples:
            found.append(
                (
                    NOT_SAMPLES,
                    "mark the samples worth learning from good, or take RL samples too",
                    (Fix("rl_samples", purpose="to take the runs RL trainings sampled too"),),
                )
            )
        if self.since:
            found.append((f"runs since {self.since}", "start from an earlier suite or time", ()))
        if self.cases is not None:
            found.append(("runs of the cases given", "check the case ids of the cases given", ()))
        if self.held_out:
            found.append(("runs of cases not held out", "run cases that are not in holdout.json", ()))
        if self.from_model:
            found.append(
                (
                    f"runs of model {self.from_model}",
                    "name a model whose runs are stored (machine runs NAME lists them)",
                    (Fix("from_model", "MODEL", "to learn from another model's runs"),),
                )
            )
        if self.own_model:
            found.append(
                (
                    f"runs {self.own_model} produced itself",
                    "sample the model, or learn from other models' runs too",
                    (
                        Fix("samples", "4", "to sample the model first"),
                        Fix("any_model", purpose="to learn from other models' runs too"),
                    ),
                )
            )
        return found

    def select(self, runs: Iterable[Run], funnel: Funnel) -> Iterator[Run]:
        """The runs kept of ``runs``, as they stream past (each case's best ``best``, best first, at the
        end)."""
        yield from self._select(runs, funnel, None)

    def from_store(self, store: TrainingStore, machine: str, funnel: Funnel) -> Iterator[Run]:
        """The runs kept of ``machine``'s stored runs; the store leaves out, before parsing them, the
        runs that cannot pass the score rule (the funnel's first counts come from it)."""
        marks = ("good",) if self.tags == "all" else (self.tags,)
        runs = store.iter_learnable(
            machine, min_score=self.min_score if self.tags == "all" else None, marks=marks
        )
        yield from self._select(runs, funnel, store.tally(machine))

    def _select(self, runs: Iterable[Run], funnel: Funnel, tally: tuple[int, int] | None) -> Iterator[Run]:
        filters = self._filters()
        counts = [0] * (len(filters) + 1)
        try:
            kept = self._kept(runs, counts, tally is None)
            yield from (kept if self.best is None else _best_of(kept, self.best))
        finally:
            if tally is not None:
                counts[0], counts[1] = tally
            funnel.stored = counts[0]
            steps = [(what, n, widen) for (what, widen, _), n in zip(filters, counts[1:], strict=True)]
            fixes = [fixes for _, _, fixes in filters]
            quiet = [
                i for i, step in enumerate(steps) if step[0] == NOT_SAMPLES and steps[i - 1][1] == step[1]
            ]
            funnel.steps = [step for i, step in enumerate(steps) if i not in quiet]
            funnel.fixes = [fix for i, fix in enumerate(fixes) if i not in quiet]

    def _kept(self, runs: Iterable[Run], counts: list[int], count_all: bool) -> Iterator[Run]:
        """The runs that pass every filter; ``counts`` gets how many passed each (the first two are the
        store's when it chose the runs, ``count_all`` False)."""
        suite, when = _since(self.since)
        case_ids = None if self.cases is None else {c.id: c.input for c in self.cases}
        held_ids = {c.id for c in self.held_out}
        held_inputs = Inputs(c.input for c in self.held_out)
        for run in runs:
            if count_all:
                counts[0] += 1
                if run.status != "ok":
                    continue
                counts[1] += 1
            mark = run.verdict.kind if run.verdict else None
            checks = [
                self._scores(mark, run.score),  # a weighted mean: computed once here
                mark is not None or self._graded(run.scorecard),
            ]
            if not self.rl_samples:
                checks.append(run.sampled_for is None or mark == "good")
            if self.since:
                checks.append(run.suite_id == suite if when is None else run.created_at >= when)
            if case_ids is not None:
                checks.append(case_ids.get(run.case_id or "") == run.input)
            if self.held_out:  # by id, then (only for a run every filter before kept) by input
                unseen = all(checks) and run.case_id not in held_ids and held_inputs.match(run.input) is None
                checks.append(unseen)
            if self.from_model:
                checks.append(run.model == self.from_model)
            if self.own_model:
                checks.append(run.model == self.own_model and not is_replayed(run.harness))
            step = 2
            for ok in checks:
                if not ok:
                    break
                counts[step] += 1
                step += 1
            else:
                yield run

    def _graded(self, card: Scorecard | None) -> bool:
        """Graded under the current rubric (a person's mark also stands for a grade)."""
        return card is not None and card.rubric_fingerprint == self.fingerprint

    def _scores(self, mark: str | None, score: float | None) -> bool:
        """A person's mark stands for the grade (bad: only with ``--tags bad``)."""
        if self.tags != "all":
            return mark == self.tags
        if mark is not None:
            return mark == "good"
        return score is not None and score >= self.min_score


def source_of(run: Run) -> str:
    """Where a run came from: its model on its harness (``teacher on scripted``)."""
    return f"{run.model} on {run.harness}"


def sources(runs: Iterable[Run]) -> dict[str, int]:
    """The runs by where they came from (``teacher on scripted``), most first."""
    return dict(Counter(source_of(run) for run in runs).most_common())


def _best_of(runs: Iterable[Run], k: int) -> list[Run]:
    """Each case's best ``k`` runs (by score, then newest), cases in the order first seen; memory holds
    ``k`` runs a case, whatever the number of runs."""
    heaps: dict[str, list[tuple[float, float, int, Run]]] = {}
    for index, run in enumerate(runs):
        key = run.case_id or f"input:{run.input}"
        item = ((run.score if run.score is not None else 1.0), run.created_at.timestamp(), index, run)
        heap = heaps.setdefault(key, [])
        if len(heap) < k:
            heapq.heappush(heap, item)
        else:
            heapq.heappushpop(heap, item)
    return [item[3] for heap in heaps.values() for item in sorted(heap, reverse=True)]
