"""What a reader cannot see in text a model wrote, and the names in its code a reader cannot tell apart.

A review is worth only what it shows. ``LABEL, ㅤ = "loud", os.system`` binds ``os.system`` to U+3164
(HANGUL FILLER: a letter, so a legal name, that renders as blank space) and a later ``ㅤ("...")`` runs a
command: a reader sees neither. So in code a model wrote every name must be ASCII, and no character that
renders blank or as nothing may stand anywhere in it; visible text in strings and comments ("é", "日本")
is fine. ``show_hidden`` writes such characters as ``\\uXXXX`` wherever the text is shown.
"""

from __future__ import annotations

import io
import re
import tokenize
import unicodedata

_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters a renderer shows as
nothing when it has no glyph for them, the Hangul fillers, variation selectors and tag characters among
them."""
_BLANK = frozenset({0x2800, 0x1D159, 0x16FE4})
"""Characters that render as blank space though Unicode does not call them ignorable (BRAILLE PATTERN
BLANK, MUSICAL SYMBOL NULL NOTEHEAD, KHITAN SMALL SCRIPT FILLER), as hidden-character warnings list them."""
_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"})
"""Controls, format characters (zero-width, bidirectional), private, surrogate and unassigned code points,
line and paragraph separators, and every space but the ASCII one."""
_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]")
"""What may be hidden: anything but tab, newline and printable ASCII (then looked up one by one)."""
_UNNAMED = {
    "Cc": "a control character",
    "Co": "a private-use character",
    "Cs": "a surrogate",
    "Cn": "a code point Unicode has not assigned",
}
_FSTRING_MIDDLE = getattr(tokenize, "FSTRING_MIDDLE", -1)
"""The literal text of an f-string, a token of its own from Python 3.12; before that the whole f-string
is one STRING token, its code included."""
_TEXT_TOKENS = frozenset({tokenize.STRING, tokenize.COMMENT, _FSTRING_MIDDLE})


def hidden(char: str) -> bool:
    """Whether a reader cannot see ``char`` as what it is: it renders blank or as nothing, or acts on
    what is around it (a control, a bidirectional override). Tab, newline and the ASCII space are not."""
    code = ord(char)
    if 0x20 <= code < 0x7F or char in "\t\n":
        return False
    if unicodedata.category(char) in _CATEGORIES or code in _BLANK:
        return True
    return any(low <= code <= high for low, high in _IGNORABLE)


def escaped(char: str) -> str:
    """``char`` as Python writes it escaped: ``\\u3164``, ``\\U000e0041``."""
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def described(char: str) -> str:
    """``\\u3164 (HANGUL FILLER)``: the character escaped, and its Unicode name."""
    name = unicodedata.name(char, None) or _UNNAMED.get(unicodedata.category(char), "a character")
    return f"{escaped(char)} ({name})"


def show_hidden(text: str) -> str:
    """``text`` with every character a reader cannot see written as its escape (``\\u3164``): newlines,
    tabs and a carriage return before a newline stay. Visible text, "é" or "日本", is left as it is."""

    def shown(found: re.Match[str]) -> str:
        char = found.group()
        if char == "\r" and text.startswith("\n", found.end()):
            return char
        return escaped(char) if hidden(char) else char

    return _CANDIDATE.sub(shown, text)


def _where(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


def hidden_character(text: str) -> str | None:
    """Why ``text`` cannot be read as it is (where it holds a character a reader cannot see), or None.
    A carriage return before a newline is a line end, not hidden."""
    for found in _CANDIDATE.finditer(text):
        char = found.group()
        if char == "\r" and text.startswith("\n", found.end()):
            continue
        if hidden(char):
            return (
                f"{_where(text, found.start())} holds {described(char)}, which a reader cannot see as it "
                "is (it shows as blank space, as nothing, or changes the text around it), so it can hide "
                "what is written; remove it (in code, write it as an escape inside a string)"
            )
    return None


def _in_braces(source: str) -> int | None:
    """The index in an f-string token (whole, as Python 3.11 gives it) of the first non-ASCII character
    inside its braces, where its code is; None if there is none. Doubled braces are literal braces."""
    depth, index = 0, 0
    while index < len(source):
        char = source[index]
        if char in "{}" and depth == 0 and source.startswith(char, index + 1):
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif depth and not char.isascii():
            return index
        index += 1
    return None


def _outside_text(text: str) -> tuple[int, str] | None:
    """The index in ``text`` of the first non-ASCII character of its code (outside string literals and
    comments), and what it stands in; None when the code is ASCII."""
    starts = [0, *(found.end() for found in re.finditer("\n", text))]
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        at: int | None = None
        what = "code outside any string or comment"
        if token.type == tokenize.STRING and "f" in re.split("['\"]", token.string, maxsplit=1)[0].lower():
            at, what = _in_braces(token.string), "the code inside an f-string's braces"
        elif token.type not in _TEXT_TOKENS and not token.string.isascii():
            at = next(i for i, char in enumerate(token.string) if not char.isascii())
            if token.type == tokenize.NAME:
                what = "the name " + "".join(c if c.isascii() else escaped(c) for c in token.string)
        if at is not None:
            before = token.string[:at]
            line = token.start[0] + before.count("\n")
            column = (at - before.rfind("\n") - 1) if "\n" in before else token.start[1] + at
            return starts[line - 1] + column, what
    return None


def foreign_name(text: str) -> str | None:
    """Why the code of Python source ``text`` cannot be reviewed by reading it (a name, or other code
    outside strings and comments, that is not ASCII: it can pass for another name or for blank space),
    or None. Source that does not read as Python tokens is judged by its first non-ASCII character."""
    if text.isascii():
        return None
    try:
        found = _outside_text(text)
    except (tokenize.TokenError, SyntaxError) as error:  # fail closed: it may stand in a name
        first = next(i for i, char in enumerate(text) if not char.isascii())
        found = first, f"a file that does not read as Python ({error.args[0]}), so perhaps in a name"
    if found is None:
        return None
    index, what = found
    char = text[index]
    blank = ", which shows as blank space or as nothing," if hidden(char) else ""
    return (
        f"{_where(text, index)} holds {described(char)}{blank} in {what}: a name or other code that is "
        "not plain ASCII can pass for another, or for blank space, so write every name in ASCII"
    )
