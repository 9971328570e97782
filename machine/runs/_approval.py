"""The person's side of consent where a run's tools may spend or change: what they pre-approved, and how
the program itself asks them. A tool that spends or changes asks through its context's ``Approver``, with
a question drawn from the call's own arguments and the operation's plan; nothing a model wrote, and nothing
in the conversation, is ever an answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """What the program asks before one call: ``text`` says what will happen (the operation, the machine,
    the harness and model, what goes live), ``most_usd`` the most it may spend (None: it spends nothing,
    it changes), ``force`` that it overrides a refusal the text names (never within an allowance)."""

    text: str
    most_usd: float | None = None
    force: bool = False


@dataclass(frozen=True)
class Answer:
    """The person's answer: ``yes`` or not, ``usd`` a smaller cap they gave with their yes (None: the
    amount asked), ``said`` what they typed or chose, as the spending log records it."""

    yes: bool
    said: str
    usd: float | None = None


Ask = Callable[[Question], Awaitable[Answer]]
"""How a face asks the person a question of the program's own (a terminal prompt)."""


@dataclass(frozen=True, eq=False)
class Approver:
    """Who approves a run's spending and changing calls: an allowance the person typed for the session
    (``allowance_usd``, a running total in USD; ``allowance_source`` says how they gave it, e.g.
    ``machine machinist --allow 5``) and a way to ask them (``ask``: None where nobody can be asked, such
    as piped input). With neither, such calls are refused. ``within`` names the spending-log line of the
    command the session runs under, whose total holds what the calls spend. One per session: its
    allowance is counted across every call made under it."""

    allowance_usd: float | None = None
    ask: Ask | None = None
    allowance_source: str = "an allowance"
    within: str | None = None

    @property
    def can_approve(self) -> bool:
        """Whether anything could be approved here: someone to ask, or an allowance."""
        return self.ask is not None or self.allowance_usd is not None
