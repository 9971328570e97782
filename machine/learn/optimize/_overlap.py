"""The memorization guard: a proposal that copies the cases has learned them, not the task. Text is
compared as words, without case, spacing or punctuation. Two rules:

- a case's input or expected answer copied word for word: a run of ``N_GRAM`` words, or the whole of a
  shorter one of at least ``SHORTEST`` words;
- a key and its answer: the whole input of a case together with the whole of one of its answers (any
  other field), however short, such as a table of 2-word keys and 1-word answers. An answer alone is
  not counted, so a proposal may say "yes", "4" or "Paris" without being refused; only beside the
  input it answers is it a row of a table.

Words the machine's intent or the current instructions already hold are not counted: quoting what was
there before is no copying."""

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

    case_id: str
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


class _Held:
    """The word runs of some text, by length, made as they are asked for."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.words = [_words(text) for text in texts]
        self._grams: dict[int, set[tuple[str, ...]]] = {}

    def grams(self, n: int) -> set[tuple[str, ...]]:
        if n not in self._grams:
            self._grams[n] = set().union(*(_grams(words, n) for words in self.words))
        return self._grams[n]

    def holds(self, words: Sequence[str]) -> bool:
        return bool(words) and tuple(words) in self.grams(len(words))


def overlaps(proposal: str, cases: Sequence[Case], *, known: Iterable[str] = ()) -> list[Overlap]:
    """Each case field the proposal copies, first copy per field, then each case whose input and answer
    it holds together (see the module); ``known`` texts are not counted."""
    mine, before = _Held([proposal]), _Held(known)
    found = []
    for case in cases:
        data = {k: v for k, v in case.data().items() if k not in ("id", "files")}
        for field, text in (pair for key, value in data.items() for pair in _texts(value, key)):
            theirs = _words(text)
            n = min(N_GRAM, len(theirs))
            if n < SHORTEST:
                continue
            allowed = before.grams(n)
            ordered = (tuple(theirs[i : i + n]) for i in range(len(theirs) - n + 1))
            copied = next((g for g in ordered if g in mine.grams(n) and g not in allowed), None)
            if copied is not None:
                found.append(Overlap(case_id=case.id, field=field, words=" ".join(copied)))
        copied_key = _key_and_answer(case, data, mine, before)
        if copied_key is not None and not any(o.case_id == case.id for o in found):
            found.append(copied_key)
    return found


def _key_and_answer(case: Case, data: dict[str, Any], mine: _Held, before: _Held) -> Overlap | None:
    """The case's input and one of its answers, both held whole by the proposal (not both there
    before): a row of a key-to-answer table."""
    key = _words(case.input)
    if not mine.holds(key):
        return None
    for field, text in (
        pair for name, value in data.items() if name != "input" for pair in _texts(value, name)
    ):
        answer = _words(text)
        if mine.holds(answer) and not (before.holds(key) and before.holds(answer)):
            return Overlap(
                case_id=case.id, field=f"input and {field}", words=f"{' '.join(key)} → {' '.join(answer)}"
            )
    return None
