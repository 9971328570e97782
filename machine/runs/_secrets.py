"""Secrets kept out of what leaves a run: a run's tools may read a project's ``.env`` or print a key, and
training data (an export, a fine-tune) must not learn it word for word. Applied to every string: the
value of each environment variable whose name marks a secret (``SECRET_WORDS``), and every value of the
workspace's ``.env`` whatever its name, become ``[REDACTED:NAME]`` (values shorter than
``MIN_SECRET_CHARS``, paths and numbers are left alone); then the shapes of ``_secret_shapes`` (keys of a
known format, a URL's password, a password on a command line, an ``Authorization`` header, a value set
for a secret's name) lose their secret part. What is found is counted by kind: a redactor reports what
it found, it cannot promise that nothing secret is left. Text with no secret in it is returned as it
was, so the same data keeps the same sha256."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ._secret_shapes import KINDS, Shape, any_trigger, shapes, url_password

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
"""An environment variable whose name holds one of these (any case) holds a secret."""
MIN_SECRET_CHARS = 8
"""A shorter value (``true``, ``1``, a port) is too common to redact by value wherever it appears."""
PLAIN_SETTINGS = frozenset(
    ["production", "development", "staging", "localhost", "warning", "critical", "disabled", "enabled"]
)
"""Values of a ``.env`` line not named as a secret that are too common to redact wherever they appear."""
_NUMBER = re.compile(r"[0-9][0-9.:_-]*")


def marks_secret(name: str) -> bool:
    """Whether an environment variable named ``name`` holds a secret."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def _is_path(value: str) -> bool:
    return value.startswith(("/", "~/", "./")) and "/" in value[1:] and " " not in value


def secret_values(environ: Mapping[str, str], *, every_name: bool = False) -> dict[str, str]:
    """The values of ``environ`` worth redacting wherever they appear, each with its name: those whose
    name marks a secret (with ``every_name``, a ``.env``'s: all but plain numbers and common words), and
    the password of any URL among them, so that it is found on its own too."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        value = value.strip()
        password = url_password(value)
        if password is not None and len(password) >= MIN_SECRET_CHARS:
            found.setdefault(password, name)
        if len(value) < MIN_SECRET_CHARS or _is_path(value) or not (every_name or marks_secret(name)):
            continue
        plain = _NUMBER.fullmatch(value) or value.lower() in PLAIN_SETTINGS
        if marks_secret(name) or not plain:
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
    """Redacts secrets from strings and from the strings inside JSON-shaped data, counting what it found
    by kind (``KINDS``)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.kinds: Counter[str] = Counter()
        """What was redacted so far, by kind."""
        ordered = sorted(values, key=len, reverse=True)  # a value inside another is redacted with it
        self._names = dict(values)
        self._values = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None

    @property
    def count(self) -> int:
        """Things redacted so far."""
        return sum(self.kinds.values())

    @classmethod
    def here(cls, root: Path | None = None, environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor for this process's environment (``environ``) and the ``.env`` of ``root``."""
        found = [secret_values(os.environ if environ is None else environ)]
        if root is not None:
            found.append(secret_values(dotenv(root / ".env"), every_name=True))
        return cls(_merged(found))

    def text(self, text: str) -> str:
        """``text`` with its secrets replaced by markers (the very same string when it has none)."""
        if self._values is not None:
            text, n = self._values.subn(lambda m: f"[REDACTED:{self._names[m.group(0)]}]", text)
            self.kinds["value"] += n
        lower = text.lower()
        screen = any_trigger()
        if screen is not None and screen.search(lower) is None:
            return text
        for shape in shapes():
            if not shape.triggers or any(t in lower for t in shape.triggers):
                text = shape.pattern.sub(partial(self._replaced, shape), text)
        return text

    def finds(self, text: str) -> bool:
        """Whether ``text`` holds something ``text()`` would redact; nothing is counted."""
        counted, self.kinds = self.kinds, Counter()
        try:
            return self.text(text) != text
        finally:
            self.kinds = counted

    def _replaced(self, shape: Shape, m: re.Match[str]) -> str:
        new = shape.replace(m)
        if new is None:
            return m.group(0)
        self.kinds[shape.kind] += 1
        return new

    def data(self, value: Any) -> Any:
        """Every string in ``value`` (dicts, lists, strings; keys kept) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.data(item) for item in value]
        return value

    @staticmethod
    def described(kinds: Mapping[str, int]) -> str:
        """What was found, in words: ``2 passwords in URLs, 1 authorization header``."""
        said = [(n, KINDS.get(kind, (kind, kind))) for kind, n in kinds.items() if n]
        return ", ".join(f"{n} {one if n == 1 else many}" for n, (one, many) in said)


def _merged(found: Iterable[dict[str, str]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for values in found:
        for value, name in values.items():
            merged.setdefault(value, name)
    return merged
