"""The spending policy of a session the person runs themselves (``machine machinist``, a chat, ``machine
run``): the program asks them its own question before each spending or changing call, or draws on the
allowance they typed for the session; every call spends from the session's budget as well.

Nothing a model wrote and nothing said in the conversation is consent: the question is drawn from the
call's own arguments and plan by whoever makes the call, and only the person's answer to it, or their
allowance, lets the call go. Any answer but a yes is a no.
"""

from __future__ import annotations

from machine.budget import Budget
from machine.errors import ConsentDeclined, ConsentRequired
from machine.runs import Approver, Question

from ._policy import Consent, SpendingPolicy
from ._spending_log import SpendingLog


class AskingPolicy(SpendingPolicy):
    """Consent from ``approver``: within its allowance a call goes without a question (a forced change
    never does); else the person is asked; else the call is refused, saying how to allow it. Every call
    spends from ``within`` (the session's budget) too, so the session's cap holds its tools."""

    changes_note = ""
    exact = True

    def __init__(
        self, approver: Approver, *, within: Budget | None = None, log: SpendingLog | None = None
    ) -> None:
        super().__init__(allowance=0.0, log=log, within=within)
        self.approver = approver
        self.part_of = approver.within
        self._allow(approver.allowance_usd, approver.allowance_source, approver.allowance_source)

    async def approve(self, question: Question, *, tool: str, machine: str) -> tuple[str, Consent, float]:
        """The person's consent to one call: its correlation id, how it was given, and the most the call
        may spend (``question.most_usd``, or the smaller amount the person gave). Raises
        ``ConsentDeclined`` on any answer but a yes, ``ConsentRequired`` when nobody can approve."""
        amount = question.most_usd or 0.0
        if self.allowance is not None and not question.force:
            try:
                correlation_id, consent = self.reserve(amount, tool=tool, machine=machine)
                return correlation_id, consent, amount
            except ConsentRequired:
                pass  # not enough of it left: the person is asked
        if self.approver.ask is None:
            raise ConsentRequired(self._unaskable(question, tool, machine))
        if not question.text.strip():
            raise ConsentRequired(f"{tool} on {machine!r} could not be put to the person as a question")
        answer = await self.approver.ask(question)
        if not answer.yes:
            raise ConsentDeclined(
                f"the person declined {tool} on {machine!r} (they answered {answer.said!r})"
            )
        allowed = amount if answer.usd is None else min(max(answer.usd, 0.0), amount)
        correlation_id, consent = self.consented(
            "terminal",
            f"the person answered {answer.said!r} to the program's question",
            budget_usd=allowed if question.most_usd is not None else None,
            tool=tool,
            machine=machine,
            capped=False,
        )
        return correlation_id, consent, allowed

    def _unaskable(self, question: Question, tool: str, machine: str) -> str:
        what = f"{tool} on {machine!r}" + (
            f" (at most ${question.most_usd:.2f})" if question.most_usd is not None else ""
        )
        if question.force:
            return (
                f"{what} overrides a refusal, which only the person's own answer can allow, and nobody "
                "can be asked here (no terminal): run it where they are asked, at a terminal"
            )
        left = self.allowance_left
        had = (
            f"the allowance {self.allowance_source} has ${max(left, 0.0):.2f} left"
            if left is not None
            else "no allowance was given"
        )
        return (
            f"{what} needs the person's consent, nobody can be asked here (no terminal) and {had}: run "
            "it where the person is asked (at a terminal), or give the session a large enough allowance"
        )
