"""What a reader cannot see in code a model wrote: every name must be ASCII and no character that renders
blank, as nothing, or acts on the text around it may stand anywhere; visible text in strings and comments
is fine. Each refusal says where (line, column), the character as ``\\uXXXX`` and its Unicode name."""

from __future__ import annotations

import pytest

from machine.spec import hidden_character, show_hidden, unreviewable

HANGUL = 'import os\n\nLABEL, \u3164 = "loud", os.system\n\n\ndef grade(run):\n    \u3164("echo hi")\n'
"""The break: U+3164 (HANGUL FILLER) is a letter, so a legal name, and renders as blank space."""


def test_the_hangul_filler_as_a_name_is_refused_where_it_stands() -> None:
    why = unreviewable(HANGUL)
    assert why is not None
    assert why.startswith("line 3, column 8 holds \\u3164 (HANGUL FILLER)")
    assert "shows as blank space" in why and "in the name \\u3164" in why
    assert "write every name in ASCII" in why
    assert "\u3164" not in why  # the sentence shows it, as an escape


@pytest.mark.parametrize(
    ("code", "where", "char"),
    [
        ("p\u0430ss = 1\n", "line 1, column 2", "\\u0430 (CYRILLIC SMALL LETTER A)"),  # looks like "pass"
        ("caf\u00e9 = 1\n", "line 1, column 4", "\\u00e9 (LATIN SMALL LETTER E WITH ACUTE)"),
        ("\uff46 = 1\n", "line 1, column 1", "\\uff46 (FULLWIDTH LATIN SMALL LETTER F)"),  # Python reads f
        ("x = \u2118\n", "line 1, column 5", "\\u2118 (SCRIPT CAPITAL P)"),  # a name to Python
        ("e\u0301 = 1\n", "line 1, column 2", "\\u0301 (COMBINING ACUTE ACCENT)"),
        ('x = f"caf\u00e9 {\u3164}"\n', "line 1, column 13", "\\u3164 (HANGUL FILLER)"),
        ('x = f"""\n{\n  \u3164\n}"""\n', "line 3, column 3", "\\u3164 (HANGUL FILLER)"),
        ("\u115f = 1\n", "line 1, column 1", "\\u115f (HANGUL CHOSEONG FILLER)"),
        ("\uffa0 = 1\n", "line 1, column 1", "\\uffa0 (HALFWIDTH HANGUL FILLER)"),
        ("x = 1\nif x:\n  \u1160 = 2\n", "line 3, column 3", "\\u1160 (HANGUL JUNGSEONG FILLER)"),
    ],
    ids=["cyrillic", "accent", "fullwidth", "other-id-start", "combining", "f-string", "f-string-lines",
         "choseong", "halfwidth", "jungseong"],
)  # fmt: skip
def test_a_name_that_is_not_ascii_is_refused(code: str, where: str, char: str) -> None:
    why = unreviewable(code)
    assert why is not None and why.startswith(f"{where} holds {char}"), why
    assert "write every name in ASCII" in why


@pytest.mark.parametrize(
    ("char", "name"),
    [
        ("\u3164", "HANGUL FILLER"),
        ("\u200b", "ZERO WIDTH SPACE"),
        ("\u200d", "ZERO WIDTH JOINER"),
        ("\u200f", "RIGHT-TO-LEFT MARK"),
        ("\u2060", "WORD JOINER"),
        ("\u2064", "INVISIBLE PLUS"),
        ("\ufeff", "ZERO WIDTH NO-BREAK SPACE"),
        ("\u00ad", "SOFT HYPHEN"),
        ("\u034f", "COMBINING GRAPHEME JOINER"),
        ("\ufe0f", "VARIATION SELECTOR-16"),
        ("\U000e0100", "VARIATION SELECTOR-17"),
        ("\U000e0041", "TAG LATIN CAPITAL LETTER A"),
        ("\u202e", "RIGHT-TO-LEFT OVERRIDE"),
        ("\u2066", "LEFT-TO-RIGHT ISOLATE"),
        ("\u061c", "ARABIC LETTER MARK"),
        ("\u180e", "MONGOLIAN VOWEL SEPARATOR"),
        ("\u00a0", "NO-BREAK SPACE"),
        ("\u3000", "IDEOGRAPHIC SPACE"),
        ("\u2800", "BRAILLE PATTERN BLANK"),
        ("\U0001d159", "MUSICAL SYMBOL NULL NOTEHEAD"),
        ("\u2028", "LINE SEPARATOR"),
        ("\x1b", "a control character"),
        ("\ue000", "a private-use character"),
        ("\u2065", "a code point Unicode has not assigned"),
    ],
)
@pytest.mark.parametrize("place", ["string", "comment"])
def test_a_character_a_reader_cannot_see_is_refused_in_a_string_or_comment(
    char: str, name: str, place: str
) -> None:
    code = f'x = "a{char}b"\n' if place == "string" else f"x = 1  # a{char}b\n"
    why = unreviewable(code)
    column = 7 if place == "string" else 11
    assert why is not None and why.startswith(f"line 1, column {column} holds {show_hidden(char)} ({name})")
    assert hidden_character(code) is not None  # the same in any text, code or not


@pytest.mark.parametrize(
    "code",
    [
        "def grade(run):\n    return run.output.isupper(), 'all capitals'\n",
        's = "caf\u00e9 \u65e5\u672c \u00bfqu\u00e9?"  # r\u00e9sum\u00e9 \u2014 \u65e5\u672c\n',
        'x = f"caf\u00e9 {len(s)!r:>{w}} {{\u00e9}}"\n',
        "x = 1\r\ny = '\t'\r\n",
        'doc = """\n\u00e9t\u00e9\n"""\n',
    ],
    ids=["ascii", "visible-text", "f-string-text", "crlf-and-tab", "multi-line-string"],
)
def test_ascii_code_and_visible_text_in_strings_and_comments_pass(code: str) -> None:
    assert unreviewable(code) is None and hidden_character(code) is None


def test_source_that_does_not_read_as_python_is_judged_by_its_first_non_ascii_character() -> None:
    why = unreviewable('s = """caf\u00e9\n')
    assert why is not None and why.startswith("line 1, column 11 holds \\u00e9")
    assert "does not read as Python" in why
    assert unreviewable('s = """cafe\n') is None  # ASCII: it fails to import, and hides nothing


def test_show_hidden_writes_what_a_reader_cannot_see_as_escapes_and_leaves_the_rest() -> None:
    text = "+\u3164(x)  # caf\u00e9 \u65e5\u672c\u200b\U000e0041\x1b\ttab\r\nend\rover\n"
    assert (
        show_hidden(text)
        == "+\\u3164(x)  # caf\u00e9 \u65e5\u672c\\u200b\\U000e0041\\u001b\ttab\r\nend\\u000dover\n"
    )
    assert show_hidden("plain ascii\n") == "plain ascii\n"
