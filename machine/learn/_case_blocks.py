"""The cases in an author's reply: each one JSON object between ``<case>`` and ``</case>``. Any chat
model can answer in this shape; what is in a block is still only a proposal, vetted before it is kept."""

from __future__ import annotations

import json
import re
from typing import Any

from machine.spec._cases import MAX_DEPTH, depth

OPEN, CLOSE = "<case>", "</case>"
_BLOCK = re.compile(re.escape(OPEN) + r"(.*?)" + re.escape(CLOSE), re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(re.escape(OPEN), re.IGNORECASE)
MAX_CASE_CHARS = 200_000
"""A case block longer than this is refused unread (a case is a small project, not a repository)."""
MAX_CASES = 100
"""Blocks after this many in one reply are refused."""


def read_cases(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects in the ``<case>`` blocks of ``text``, in order, and a sentence for each block
    that could not be read as one (naming its number and where it starts)."""
    cases: list[dict[str, Any]] = []
    problems: list[str] = []
    blocks = list(_BLOCK.finditer(text))
    for number, match in enumerate(blocks, start=1):
        where = f"case block {number} (at character {match.start():,})"
        if number > MAX_CASES:
            problems.append(f"the reply has {len(blocks)} case blocks; only the first {MAX_CASES} were read")
            break
        body = match.group(1).strip()
        if len(body) > MAX_CASE_CHARS:
            problems.append(f"{where} is {len(body):,} characters, over the {MAX_CASE_CHARS:,} a case may be")
            continue
        found, problem = _one_object(body)
        if problem is not None:
            problems.append(f"{where} {problem}")
        elif found is not None:
            cases.append(found)
    last_close = blocks[-1].end() if blocks else 0
    dangling = _OPEN.search(text, last_close)
    if dangling is not None and len(blocks) <= MAX_CASES:
        problems.append(f"a {OPEN} at character {dangling.start():,} has no {CLOSE}, so it was not read")
    return cases, problems


def _one_object(body: str) -> tuple[dict[str, Any] | None, str | None]:
    """The block's object, or why it is not one."""
    if not body:
        return None, "is empty"
    try:
        value = json.loads(body)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data":
            return None, "holds more than one JSON value: give each case a block of its own"
        return None, f"is not JSON: {error.msg} at line {error.lineno} column {error.colno}"
    except RecursionError:
        return None, f"nests more than {MAX_DEPTH} levels deep"
    if not isinstance(value, dict):
        return None, f"holds a JSON {_kind(value)}, not one object"
    if depth(value) > MAX_DEPTH:
        return None, f"nests more than {MAX_DEPTH} levels deep"
    return value, None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return type(value).__name__
