"""Readable names for machines, runs, sessions and suites: what the store and the loader accept."""

from __future__ import annotations

import re

from machine.errors import DefinitionError

NAME_SEGMENT = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
"""One ``/``-separated part of a name: lower-case letters, digits, ``.``, ``_`` and ``-``."""


def check_name(name: str, what: str = "machine name") -> str:
    """``name`` itself when every ``/``-separated part is a ``NAME_SEGMENT``; else a DefinitionError."""
    if not isinstance(name, str) or not name or not all(NAME_SEGMENT.match(s) for s in name.split("/")):
        raise DefinitionError(
            f"{what} {name!r} is not valid: each '/'-separated part must match ^[a-z0-9][a-z0-9._-]*$"
        )
    return name
