"""Every reader of the tagged blocks a model answers in: the optimizer's ``<instructions>``, the author's
``<case>`` objects, ``<topic>`` phrases and ``<file path="...">`` files. Any chat model can answer in this
shape, so any can be the optimizer or the author; what a block holds is still only a proposal, measured or
vetted before anything of it is kept."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from machine.spec import MAX_DEPTH, depth, show_hidden


def _tagged(tag: str) -> re.Pattern[str]:
    return re.compile(f"<{tag}>(.*?)</{tag}>", re.DOTALL | re.IGNORECASE)


OPEN, CLOSE = "<instructions>", "</instructions>"
CASE_OPEN, CASE_CLOSE = "<case>", "</case>"
_INSTRUCTIONS = _tagged("instructions")
_CASE = _tagged("case")
_CASE_OPEN = re.compile(re.escape(CASE_OPEN), re.IGNORECASE)
_TOPIC = _tagged("topic")
_FILE = re.compile(
    r"<file\s+path\s*=\s*(?P<quote>[\"'])(?P<path>.*?)(?P=quote)\s*>(?P<body>.*?)</file\s*>",
    re.DOTALL | re.IGNORECASE,
)


@dataclass(frozen=True)
class Reply:
    """What a reply proposed (None: no non-empty block), what it said around it, and how many blocks."""

    instructions: str | None
    explanation: str
    blocks: int


def read_reply(text: str) -> Reply:
    """The proposal in ``text``: the last non-empty block (a model that drafts before it settles puts the
    settled one last); everything outside the blocks is the explanation."""
    found = [m.group(1).strip() for m in _INSTRUCTIONS.finditer(text)]
    proposals = [block for block in found if block]
    explanation = _INSTRUCTIONS.sub(" ", text).strip()
    return Reply(proposals[-1] if proposals else None, explanation, len(found))


def read_topics(text: str) -> list[str]:
    """The ``<topic>`` phrases in a reply, each once, in order, with every character a reader could not
    see written as its escape (they are shown to the person and kept in the report)."""
    found = [show_hidden(" ".join(m.group(1).split())) for m in _TOPIC.finditer(text)]
    return list(dict.fromkeys(t[:200] for t in found if t))


def file_blocks(text: str) -> Iterator[tuple[str, str]]:
    """Each ``<file path="...">`` block of a reply as (the path as written, its body), in order."""
    for match in _FILE.finditer(text):
        yield match.group("path"), match.group("body")


def outside_files(text: str) -> str:
    """What a reply said around its file blocks."""
    return _FILE.sub("\n", text).strip()


MAX_CASE_CHARS = 200_000
"""A case block longer than this is refused unread (a case is a small project, not a repository)."""
MAX_CASES = 100
"""Blocks after this many in one reply are refused."""


def read_cases(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects in the ``<case>`` blocks of ``text``, in order, and a sentence for each block
    that could not be read as one (naming its number and where it starts)."""
    cases: list[dict[str, Any]] = []
    problems: list[str] = []
    blocks = list(_CASE.finditer(text))
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
    dangling = _CASE_OPEN.search(text, last_close)
    if dangling is not None and len(blocks) <= MAX_CASES:
        problems.append(
            f"a {CASE_OPEN} at character {dangling.start():,} has no {CASE_CLOSE}, so it was not read"
        )
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
