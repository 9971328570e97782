"""Fullwidth letters and digits: the form wordmath/fullwidth reasons in.

Only ASCII letters and digits are mapped (to U+FF21..FF3A, U+FF41..FF5A and U+FF10..FF19). Spaces,
punctuation and line breaks stay as they are: the criterion is about letters and digits, and keeping the
rest leaves the reasoning's layout, and the export's text, otherwise unchanged. Mapping spaces to U+3000
would change nothing the criterion checks.
"""

from __future__ import annotations

import string

_OFFSET = 0xFF21 - ord("A")  # the same for digits and lower-case letters
_ASCII_ALNUM = string.ascii_letters + string.digits
_TO_FULLWIDTH = str.maketrans({c: chr(ord(c) + _OFFSET) for c in _ASCII_ALNUM})


def to_fullwidth(text: str) -> str:
    """``text`` with every ASCII letter and digit replaced by its fullwidth form."""
    return text.translate(_TO_FULLWIDTH)


def is_fullwidth_alnum(char: str) -> bool:
    """A fullwidth digit or Latin letter."""
    return "\uff10" <= char <= "\uff19" or "\uff21" <= char <= "\uff3a" or "\uff41" <= char <= "\uff5a"


def is_ascii_alnum(char: str) -> bool:
    return char in _ASCII_ALNUM
