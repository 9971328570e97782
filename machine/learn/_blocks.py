"""The optimizer's reply: the proposed instructions between ``<instructions>`` and ``</instructions>``,
and the rest, its explanation. Any chat model can answer in this shape, so any can be the optimizer."""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN, CLOSE = "<instructions>", "</instructions>"
_BLOCK = re.compile(re.escape(OPEN) + r"(.*?)" + re.escape(CLOSE), re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Reply:
    """What a reply proposed (None: no non-empty block), what it said around it, and how many blocks."""

    instructions: str | None
    explanation: str
    blocks: int


def read_reply(text: str) -> Reply:
    """The proposal in ``text``: the last non-empty block (a model that drafts before it settles puts the
    settled one last); everything outside the blocks is the explanation."""
    found = [m.group(1).strip() for m in _BLOCK.finditer(text)]
    proposals = [block for block in found if block]
    explanation = _BLOCK.sub(" ", text).strip()
    return Reply(proposals[-1] if proposals else None, explanation, len(found))
