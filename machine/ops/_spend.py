"""One spending call under the policy, from consent to the settled line in the spending log: what a
command the person typed, an MCP tool the person approved, an allowance, and the person's own code calling
the SDK handle all go through."""

from __future__ import annotations

from dataclasses import dataclass, field

from machine.budget import Budget

from ._policy import Consent, SpendingPolicy


@dataclass
class Spend:
    """A call's consent (``correlation_id`` names its log line) and the budget it spends from; settled
    once, with what the budget spent during the call (an SDK handle's budget outlives its calls)."""

    policy: SpendingPolicy
    correlation_id: str
    consent: Consent
    budget: Budget
    settled: bool = field(default=False, init=False)
    start: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.start = self.budget.spent
        self.budget.hard = self.budget.hard or self.policy.exact  # at most what the person approved
        holder = self.policy.holder(self.consent)
        if holder is not None:  # one running total for every call it allowed (an allowance, a session)
            self.budget.parent = holder

    @classmethod
    def by_command(
        cls, policy: SpendingPolicy, budget: Budget, *, command: str, machine: str | None, typed: str
    ) -> Spend:
        """The person typed the command (``typed``, as the consent's detail says it): that is the consent.
        Their own budget is not held to the cap per call, which limits what a model asks for."""
        correlation_id, consent = policy.consented(
            "command",
            typed,
            budget_usd=budget.usd,
            tool=command,
            machine=machine,
            capped=False,
        )
        return cls(policy, correlation_id, consent, budget)

    @classmethod
    def by_code(cls, policy: SpendingPolicy, budget: Budget, *, operation: str, machine: str) -> Spend:
        """The person's own program called the SDK handle: that is the consent, as a typed command is."""
        cap = "no budget" if budget.usd is None else f"a budget of ${budget.usd:g}"
        correlation_id, consent = policy.consented(
            "code",
            f"machine.load({machine!r}).{operation}(...) with {cap}",
            budget_usd=budget.usd,
            tool=operation,
            machine=machine,
            capped=False,
        )
        return cls(policy, correlation_id, consent, budget)

    def settle(self, *, finished: bool = True) -> None:
        """Close the call: give back what its reservation did not spend, and write the log line when the
        call finished (even at $0) or spent anything however it ended. A call that failed before spending
        writes nothing. Only the first settle counts."""
        if self.settled:
            return
        self.settled = True
        spent = max(0.0, self.budget.spent - self.start)
        self.policy.settle(self.correlation_id, spent_usd=spent, log=finished or spent > 0)
