"""One spending call under the policy, from consent to the settled line in the spending log: what a
command the person typed, an MCP tool the person approved, and an allowance all go through."""

from __future__ import annotations

from dataclasses import dataclass, field

from machine.runs import Budget

from ._policy import Consent, SpendingPolicy


@dataclass
class Spend:
    """A call's consent (``correlation_id`` names its log line) and the budget it spends from; settled
    once, with what the budget spent."""

    policy: SpendingPolicy
    correlation_id: str
    consent: Consent
    budget: Budget
    settled: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.consent.how == "allowance" and self.policy.ledger is not None:
            self.budget.parent = self.policy.ledger  # one running total for every call it allowed

    @classmethod
    def by_command(
        cls, policy: SpendingPolicy, budget: Budget, *, command: str, machine: str | None
    ) -> Spend:
        """The person typed the command: that is the consent. Their own budget is not held to the cap
        per call, which limits what a model asks for."""
        cap = "none" if budget.usd is None else f"{budget.usd:g}"
        correlation_id, consent = policy.consented(
            "command",
            f"machine {command} --budget {cap}",
            budget_usd=budget.usd,
            tool=command,
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
        spent = self.budget.spent
        self.policy.settle(self.correlation_id, spent_usd=spent, log=finished or spent > 0)
