"""Secrets kept out of what leaves a run: a run's tools may read a project's ``.env`` or print a key, and
training data (an export, a fine-tune) must not learn it word for word. Three rules, applied to every
string: the value of each environment variable whose name marks a secret (``SECRET_WORDS``; values
shorter than ``MIN_SECRET_CHARS`` or that are file paths are left alone) becomes ``[REDACTED:NAME]``;
``NAME=value`` where NAME marks a secret keeps the name and loses the value; and the common key formats
(``KEY_FORMATS``: OpenAI, Anthropic, GitHub, AWS, Slack, Google, Hugging Face, Tinker, Stripe, JWTs,
private key blocks, bearer tokens) become ``[REDACTED]``. Text with no secret in it is returned as it was,
so the same data keeps the same sha256."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
"""An environment variable whose name holds one of these (any case) holds a secret."""
MIN_SECRET_CHARS = 8
"""A shorter value (``true``, ``1``, a port) is too common to redact by value wherever it appears."""
MARKER = "[REDACTED]"

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

_WORDS = "|".join(SECRET_WORDS)
_NAME = rf"(?P<name>\b(?!(?i:key)\b)(?=[A-Za-z_])[A-Za-z0-9_]*(?i:{_WORDS})[A-Za-z0-9_]*)"
_SEPARATOR = (
    r"(?P<sep>[\"']?[ \t]*=[ \t]*[\"']?"  # NAME=value, NAME="value", name = 'value'
    r"|[\"'][ \t]*:[ \t]*[\"']"  # "name": "value"
    r"|(?<=[A-Z0-9_])[ \t]*:[ \t]+)"  # NAME: value (upper case only: "Primary key: id" is prose)
)
_CHARS = r"[A-Za-z0-9_\-./+=~:@!#$%^*]"
_VALUE = (
    r"(?P<value>(?!\[REDACTED)(?![/~])"
    rf"(?={_CHARS}*[A-Za-z])(?={_CHARS}*[0-9]){_CHARS}{{{MIN_SECRET_CHARS},}})"
    r"(?=$|[\s\"',;&)}\]])"
)


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The key formats, and a value given to a name that marks a secret: a ``.env`` line or shell export,
    a quoted JSON or Python setting, an upper-case YAML key. Only a value shaped like a key is taken (a
    letter and a digit in it, nothing that code or a path would hold): ``tokens = tokenizer.encode(x)``,
    ``MAX_TOKENS=100000000``, ``key=itemgetter(1)`` and ``KEY_FILE=/home/me/key.pem`` are left alone.
    Compiled on first use: only exports and trainings redact, not every command's start."""
    keys = re.compile("|".join(f"(?:{pattern})" for pattern in KEY_FORMATS), re.S)
    return keys, re.compile(_NAME + _SEPARATOR + _VALUE)


def marks_secret(name: str) -> bool:
    """Whether an environment variable named ``name`` holds a secret."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def _is_path(value: str) -> bool:
    return value.startswith(("/", "~/", "./")) and "/" in value[1:] and " " not in value


def secret_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The secret values of ``environ`` worth redacting wherever they appear, each with its name."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        value = value.strip()
        if marks_secret(name) and len(value) >= MIN_SECRET_CHARS and not _is_path(value):
            found.setdefault(value, name)
    return found


def dotenv(path: Path) -> dict[str, str]:
    """The ``NAME=value`` lines of a ``.env`` file (quotes and ``export`` dropped); none when absent."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, equals, value = line.strip().removeprefix("export ").partition("=")
        if equals and name.strip().isidentifier():
            found[name.strip()] = value.strip().strip("\"'")
    return found


class Redactor:
    """Redacts secrets from strings and from the strings inside JSON-shaped data, counting each one."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.count = 0
        """Secrets redacted so far."""
        ordered = sorted(values, key=len, reverse=True)  # a value inside another is redacted with it
        self._names = dict(values)
        self._values = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None

    @classmethod
    def here(cls, root: Path | None = None, environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor for this process's environment (``environ``) and the ``.env`` of ``root``."""
        sources: list[Mapping[str, str]] = [os.environ if environ is None else environ]
        if root is not None:
            sources.append(dotenv(root / ".env"))
        return cls(_merged(secret_values(source) for source in sources))

    def text(self, text: str) -> str:
        """``text`` with its secrets replaced by markers (the very same string when it has none)."""
        if self._values is not None:
            text, n = self._values.subn(lambda m: f"[REDACTED:{self._names[m.group(0)]}]", text)
            self.count += n
        keys, assignment = _patterns()
        text, n = keys.subn(MARKER, text)
        self.count += n
        text, n = assignment.subn(lambda m: f"{m['name']}{m['sep']}[REDACTED:{m['name']}]", text)
        self.count += n
        return text

    def data(self, value: Any) -> Any:
        """Every string in ``value`` (dicts, lists, strings; keys kept) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.data(item) for item in value]
        return value


def _merged(found: Iterable[dict[str, str]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for values in found:
        for value, name in values.items():
            merged.setdefault(value, name)
    return merged
