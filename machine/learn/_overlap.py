"""The memorization guard: a proposal that copies a case's input or expected answer word for word (a run
of ``N_GRAM`` words, or the whole of a shorter one of at least ``SHORTEST`` words) has learned the cases,
not the task. Word runs the machine's intent or the current instructions already hold are not counted:
quoting what was there before is no copying."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from machine.spec import Case

N_GRAM = 8
SHORTEST = 5
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Overlap:
    """Where a proposal copies a case: the case, which field, and the words copied."""

    case: str
    field: str
    words: str


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _grams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _texts(value: Any, where: str) -> Iterable[tuple[str, str]]:
    """Every string in a case field, with where it sits (``expected``, ``answers[2]``)."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _texts(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _texts(inner, f"{where}[{index}]")


def overlaps(proposal: str, cases: Sequence[Case], *, known: Iterable[str] = ()) -> list[Overlap]:
    """Each case field the proposal copies, first copy per field; ``known`` texts are not counted."""
    words = _words(proposal)
    allowed: set[tuple[str, ...]] = set()
    for text in known:
        for n in range(SHORTEST, N_GRAM + 1):
            allowed |= _grams(_words(text), n)
    found = []
    for case in cases:
        data = {k: v for k, v in case.data().items() if k not in ("id", "files")}
        for field, text in (pair for key, value in data.items() for pair in _texts(value, key)):
            theirs = _words(text)
            n = min(N_GRAM, len(theirs))
            if n < SHORTEST:
                continue
            mine = _grams(words, n)
            ordered = (tuple(theirs[i : i + n]) for i in range(len(theirs) - n + 1))
            copied = next((g for g in ordered if g in mine and g not in allowed), None)
            if copied is not None:
                found.append(Overlap(case=case.id, field=field, words=" ".join(copied)))
    return found
