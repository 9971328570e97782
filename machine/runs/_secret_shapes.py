"""The shapes of what people paste that holds a secret, for ``Redactor``: keys of a known format, the
password of a ``scheme://user:password@host`` URL, a password on a command line (``curl -u user:pass``,
``mysql -pPASS``, ``--password=...``), an ``Authorization`` header's credentials, and a value set for a
name that marks a secret (``db_password=...``, ``"api_key": "..."``, ``password: ...``).

Each shape is one pattern with a few lower-case triggers: the pattern runs only on text that holds one
of them, so text with none of these words costs a substring search, not a regex pass. A shape's
``replace`` says what a match becomes, or None where the match is no secret after all (code, prose, a
path): only what it replaces is counted."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

MARKER = "[REDACTED]"
MIN_KEY_CHARS = 8
"""A value set for a key, token, secret or credential name must be this long, with a letter and a digit."""
MIN_PASSWORD_CHARS = 4
"""A value set for a password name must be this long: ``pw=ok`` is too short to hold anything."""

KEY_FORMATS = (
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    r"(?<![\w-])sk-[A-Za-z0-9_-]{20,}",  # OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-)
    r"(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])",
    r"(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"(?<![\w-])AIza[0-9A-Za-z_-]{35}",  # Google
    r"(?<!\w)hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"(?<![\w-])tml-[A-Za-z0-9_-]{20,}",  # Tinker
    r"(?<!\w)[sr]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe secret and restricted keys
    r"(?<![\w-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",  # a JWT
    r"(?<=[Bb]earer )[A-Za-z0-9._~+/-]{16,}=*",
)
"""Keys recognised by their shape wherever they appear, whoever's they are."""
KEY_TRIGGERS = (
    *("-----begin", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "akia", "asia"),
    *("xox", "aiza", "hf_", "tml-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "eyj", "bearer "),
)
"""What one of ``KEY_FORMATS`` holds, lower-cased: text with none of them holds no such key."""

KINDS = {
    "value": ("value from the environment or .env", "values from the environment or .env"),
    "key": ("key of a known format", "keys of a known format"),
    "url": ("password in a URL", "passwords in URLs"),
    "command": ("password on a command line", "passwords on command lines"),
    "header": ("authorization header", "authorization headers"),
    "setting": ("value set for a secret's name", "values set for secrets' names"),
}
"""What was found, by kind, as a person reads it (one, many)."""


@dataclass(frozen=True)
class Shape:
    """One shape: what kind of thing it finds, when to look, the pattern, and what a match becomes."""

    kind: str
    triggers: tuple[str, ...]
    """Lower-case text one of which is in any text the pattern can match (empty: always run)."""
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str | None]


def _keep(m: re.Match[str], group: str = "secret") -> str | None:
    """The match with its ``group`` replaced by the marker, the rest kept (``user:[REDACTED]@host``)."""
    if m[group].startswith("[REDACTED"):
        return None
    start, end = m.span(group)
    return m.string[m.start() : start] + MARKER + m.string[end : m.end()]


# A URL's userinfo, as libpq and urllib read it: the password runs to the last '@' before the path.
_URL = (
    r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/?#@:\"'<>\[\]]*:"
    r"(?P<secret>[^\s/?#\"'<>]+)@(?=[\w\[%])"
)
_CURL = (
    r"(?<![\w-])(?:-u|-[-](?:proxy-)?user|-[-]auth)(?:[ \t]+|=)?(?P<q>[\"'])?"  # curl's flags
    r"(?P<user>[^\s:\"']*):(?P<secret>(?(q)[^\"'\n]+|[^\s\"']+))"
)
_FLAG = (
    r"(?<![\w-])--(?:\w+-)?pass(?:word|wd)?(?:[ \t]*=[ \t]*|[ \t]+)(?P<q>[\"'])?"
    r"(?P<secret>(?(q)[^\"'\n]+|[^\s\"'<>|;&-][^\s\"']*))"
)
_MYSQL = (
    r"\b(?:mysql\w*|mariadb[\w-]*)[^\n|;&]*?[ \t]-p(?P<q>[\"'])?"
    r"(?P<secret>(?(q)[^\"'\n]+|[^\s\"'-][^\s\"']*))"
)
_SCHEMES = "basic|bearer|token|digest|negotiate|ntlm|apikey|api-key|key|jwt|oauth|ssws|dsn|splunk"
_HEADER = (
    rf"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:{_SCHEMES})[ \t]+(?P<secret>[^\s\"',;]+)"
    r"|(?i:(?:x-)?(?:api|auth|access|private)-(?:key|token))[\"']?[ \t]*:[ \t]*[\"']?"
    r"(?P<header_value>[^\s\"',;]{8,})"
)


def _marker(m: re.Match[str]) -> str:
    return MARKER


def _header(m: re.Match[str]) -> str | None:
    return _keep(m, "secret" if m["secret"] is not None else "header_value")


def _curl(m: re.Match[str]) -> str | None:
    if m["user"].isdigit() and m["secret"].isdigit():
        return None  # docker's -u 1000:1000 is a user and a group
    return _keep(m)


_WORDS = "KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PASS|PWD"
_NAME = rf"(?P<name>\b(?!(?i:key)\b)(?=[A-Za-z_])[A-Za-z0-9_]*(?i:{_WORDS})[A-Za-z0-9_]*)"
_SETTING = (
    _NAME + r"(?P<sep>[\"']?[ \t]*(?P<colon>:)?(?(colon)|=)[ \t]*)(?P<q>[\"'])?"
    r"(?(q)(?P<quoted>(?:(?!(?P=q))[^\n\\]|\\.){1,256})(?P=q)"
    r"|(?P<bare>[A-Za-z0-9_\-./+=~:@!#$%^*]{1,256})(?=$|[\s\"',;&)}\]]))"
)
_KEY_CHARS = re.compile(r"[A-Za-z0-9_\-./+=~:@!#$%^*]+")
_PASSWORD_NAME = re.compile(r"(?i).*(?:PASSWORD|PASSWD|PASSPHRASE)\w*|(?:\w*_)?(?:PASS|PWD|PGPASS)")
_SECRET_NAME = re.compile(r"(?i).*(?:KEY|TOKEN|SECRET|CREDENTIAL)")
_NAMES_A_SECRET = re.compile(r"(?i)pass|secret|pwd")
_NOT_A_VALUE = frozenset(
    ("none", "null", "nil", "true", "false", "undefined", "required", "optional", "str", "string", "bytes",
     "int", "password", "secret", "hidden", "redacted", "empty")
)  # fmt: skip
_REFERENCE = re.compile(r"[A-Za-z_][\w]*(?:\.[\w]+)+|\$\{?\w+\}?|\{[^}]*\}|<[^>]*>|%\(\w+\)s|\*+")
"""A value that names where the secret is, not the secret: ``self.password``, ``$PW``, ``{pw}``."""


def _setting(m: re.Match[str]) -> str | None:
    """``NAME=value`` and the like where NAME marks a secret and the value is one: a password's value
    whatever its letters (``db_password=correcthorsebattery``), a key's only when shaped like a key."""
    name, quoted = m["name"], m["quoted"] is not None
    value = m["quoted"] if quoted else m["bare"]
    if value.startswith("[REDACTED") or value.startswith(("/", "~/")):
        return None
    colon = m["colon"] is not None and not quoted and not m["sep"].startswith(("'", '"'))
    if _PASSWORD_NAME.fullmatch(name):
        if colon and not _ends_line(m):
            return None  # "Password: must be 8 characters long" is prose
        plain = value.rstrip(".").lower()
        if len(value) < MIN_PASSWORD_CHARS or plain in _NOT_A_VALUE or _REFERENCE.fullmatch(value):
            return None
        if value.isidentifier() and _NAMES_A_SECRET.search(value) and not any(c.isdigit() for c in value):
            return None  # password=password, db_password=self_password: code passing a variable on
    elif _SECRET_NAME.match(name):
        if colon and not name.isupper():
            return None  # "Primary key: id" is prose
        if not _KEY_CHARS.fullmatch(value) or len(value) < MIN_KEY_CHARS:
            return None
        if not (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)):
            return None  # MAX_TOKENS=100000000, key=itemgetter
    else:
        return None  # compass_heading=..., bypass=...
    start, end = m.span("quoted" if quoted else "bare")
    return m.string[m.start() : start] + f"[REDACTED:{name}]" + m.string[end : m.end()]


def _ends_line(m: re.Match[str]) -> bool:
    rest = m.string[m.end() : m.end() + 80].lstrip(" \t")
    return not rest or rest[0] in "\r\n,;}"


@cache
def any_trigger() -> re.Pattern[str] | None:
    """A pattern found in lower-cased text exactly when some shape's trigger is in it; None when a shape
    has no triggers (it always runs). Text without one, the common case, skips every shape at once."""
    if any(not shape.triggers for shape in shapes()):
        return None
    return re.compile(_trie({t for shape in shapes() for t in shape.triggers}))


def _trie(words: set[str]) -> str:
    """A pattern matching where any of ``words`` (none empty) starts, its alternatives grouped by first
    character: the regex engine tries a handful of branches a position, not every word. A word that
    begins another stands for both (a screen needs only to know that one is there)."""
    branches: dict[str, set[str]] = {}
    for word in words:
        branches.setdefault(word[0], set()).add(word[1:])
    alternatives = [
        re.escape(first) + ("" if "" in rests else _trie(rests)) for first, rests in sorted(branches.items())
    ]
    return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"


@cache
def shapes() -> tuple[Shape, ...]:
    """Every shape, in the order they are applied. Compiled on first use: only exports and trainings
    redact, not every command's start."""
    words = tuple(w.lower() for w in _WORDS.split("|"))
    return (
        Shape("key", KEY_TRIGGERS, re.compile("|".join(f"(?:{p})" for p in KEY_FORMATS), re.S), _marker),
        Shape("url", ("://",), re.compile(_URL), _keep),
        Shape("header", ("authorization", "-key", "-token"), re.compile(_HEADER), _header),
        Shape("command", ("-u", "--user", "--auth"), re.compile(_CURL), _curl),
        Shape("command", ("--",), re.compile(_FLAG, re.I), _keep),
        Shape("command", ("mysql", "mariadb"), re.compile(_MYSQL), _keep),
        Shape("setting", words, re.compile(_SETTING), _setting),
    )


def url_password(value: str) -> str | None:
    """The password of the first ``scheme://user:password@host`` URL in ``value``, if any."""
    found = re.search(_URL, value)
    return None if found is None else found["secret"]
