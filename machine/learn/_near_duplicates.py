"""When two case inputs ask the same thing, for the guards that keep held-out cases unseen. Inputs are
compared without case, width, spacing or punctuation ("What colour is the sky?" is "what colour is the sky? ",
and so is its fullwidth copy "Ｗｈａｔ ｃｏｌｏｕｒ ｉｓ ｔｈｅ ｓｋｙ？": NFKC folds compatibility forms),
and a near duplicate counts as the same input: the same words in the same order but for spelling (each
word the other's, or a variant of it: both at least ``WORD`` letters, matching by at least ``SPELLING``,
"color" for "colour"), with one word left out or put in for every ``LONG`` words of the longer text
("..., please?").

Inputs that hold different numbers are different questions however alike ("12 times 13", "12 times
14"), and so are inputs where a word is swapped for another ("the sky", "the sea"; "fire", "ice")."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from difflib import SequenceMatcher

LONG = 8
SPELLING = 0.75
WORD = 4
_WORD = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"\d+")


def folded(text: str) -> str:
    """``text`` NFKC-normalized and case folded (then normalized again, as casefolding can undo it):
    fullwidth letters and digits, ligatures and other compatibility forms read as the plain ones."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def words(text: str) -> list[str]:
    """The words of ``text``, width and case folded, punctuation and spacing dropped."""
    return _WORD.findall(folded(text))


def normalized(text: str) -> str:
    """``text`` as its words joined by single spaces: the form inputs are compared in."""
    return " ".join(words(text))


def _ratio(a: str, b: str, at_least: float) -> bool:
    """Whether ``a`` and ``b`` match by at least ``at_least`` (difflib's ratio, quick bounds first)."""
    if 2 * min(len(a), len(b)) < at_least * (len(a) + len(b)):  # the ratio cannot reach it
        return False
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.quick_ratio() >= at_least and matcher.ratio() >= at_least


def _variant(a: str, b: str) -> bool:
    """The same word, or another spelling of it."""
    return a == b or (min(len(a), len(b)) >= WORD and not a.isdigit() and _ratio(a, b, SPELLING))


def near(a: str, b: str) -> bool:
    """Whether normalized texts ``a`` and ``b`` are near duplicates (see the module)."""
    if _NUMBER.findall(a) != _NUMBER.findall(b):
        return False
    x, y = a.split(), b.split()
    allowed = max(len(x), len(y)) // LONG
    return abs(len(x) - len(y)) <= allowed and _distance(x, y, allowed) <= allowed


def _distance(x: list[str], y: list[str], band: int) -> float:
    """Words left out or put in to turn ``x`` into ``y``, where a word may stand for its variant but never
    for another word (inf: it cannot be done within ``band`` of the diagonal)."""
    inf = float("inf")
    previous = {j: float(j) for j in range(min(len(y), band) + 1)}
    for i in range(1, len(x) + 1):
        row: dict[int, float] = {}
        for j in range(max(0, i - band), min(len(y), i + band) + 1):
            best = previous.get(j, inf) + 1  # x[i-1] left out
            if j > 0:
                best = min(best, row.get(j - 1, inf) + 1)  # y[j-1] put in
                if _variant(x[i - 1], y[j - 1]):
                    best = min(best, previous.get(j - 1, inf))
            row[j] = best
        previous = row
    return previous.get(len(y), inf)


class Inputs:
    """Inputs to tell others apart from (a machine's held-out cases), normalized once."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.exact = {normalized(text) for text in texts}

    def __bool__(self) -> bool:
        return bool(self.exact)

    def match(self, text: str) -> str | None:
        """The input ``text`` is the same as (normalized, or a near duplicate), if any."""
        mine = normalized(text)
        if mine in self.exact:
            return mine
        return next((other for other in self.exact if near(mine, other)), None)
