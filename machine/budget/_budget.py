"""Budgets: a spending limit in USD, held before every model call, not only between runs.

Every model call goes through ``Budget.reserve(model, bound)``: it starts only while what is spent plus
what the calls in flight have reserved is below the cap (it waits while calls in flight may still give
their reservation back, and is refused once the spending alone reaches the cap). It reserves the most the
call can legitimately cost (``bound``: the prompt's upper bound and ``max_tokens``, at the model's price)
and settles to the real cost after. Usage an endpoint reports is hostile input: negative, non-integral,
over the bound or over ``MAX_TOKENS_PER_CALL`` is a failed call (``UsageRefused``), charged at its
reservation, never subtracted. So a capped command spends less than its cap plus one reservation.

A ``hard`` budget is never passed at all: a call starts only when the most it can cost fits in what is
left of it beside the calls in flight. It holds what a person approved ("at most $0.50"), and stops a
little sooner than a plain cap would.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from types import TracebackType

from machine.errors import BadInputError, BudgetExceeded, Fix, UnknownPriceError, UsageRefused

from ._pricing import Price, Usage, price_of

BUDGET = Fix("budget", "2.5")
PRICE_AS = Fix("price_as", "BASE_MODEL", "to price a checkpoint as its base model")
NO_CAP = Fix("budget", "none", "to lift the cap")
MORE = Fix("budget", "USD", "larger than that to go on")

MAX_TOKENS_PER_CALL = 10_000_000
"""No model call reports more tokens of any kind than this; a count above it is refused, bound or not."""

WAIT_S = 0.01
"""How often a call waiting for the calls in flight to settle looks again (they settle across threads
and event loops, so it looks rather than waits on a loop's own event)."""

_LOCK = threading.RLock()
"""One lock over every budget: a call reserves in its budget and the ones above it (an allowance) at once."""


def parse_budget(value: str | float | None) -> float | None:
    """``"none"`` lifts the cap; anything else must be a non-negative real number of USD (not a bool)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, bool):
        raise BadInputError(f"budget {value!r} is not a number of USD (or 'none' for no cap)", fixes=[BUDGET])
    try:
        usd = float(value)
    except (TypeError, ValueError):
        raise BadInputError(
            f"budget {value!r} is not a number of USD (or 'none' for no cap)", fixes=[BUDGET]
        ) from None
    if not math.isfinite(usd) or usd < 0:
        raise BadInputError(
            f"budget {value!r} must be a non-negative number of USD (or 'none' for no cap)", fixes=[BUDGET]
        )
    return usd


def usage_problem(usage: Usage, bound: Usage | None = None) -> str | None:
    """Why ``usage`` cannot be what a call used (given the most it could use), or None when it can."""
    counts = {
        "prompt": usage.input_tokens,
        "cached prompt": usage.cached_input_tokens,
        "output": usage.output_tokens,
    }
    for name, count in counts.items():
        if count < 0:
            return f"{count} {name} tokens is negative"
        if count > MAX_TOKENS_PER_CALL:
            return f"{count} {name} tokens is over the ceiling of {MAX_TOKENS_PER_CALL:,} a call"
    if usage.cached_input_tokens > usage.input_tokens:
        return f"{usage.cached_input_tokens} cached prompt tokens is more than the {usage.input_tokens} sent"
    if bound is not None and usage.output_tokens > bound.output_tokens:
        allowed = bound.output_tokens
        return f"{usage.output_tokens} output tokens is more than the {allowed} max_tokens allowed"
    if bound is not None and usage.input_tokens > bound.input_tokens:
        return f"{usage.input_tokens} prompt tokens is more than the prompt can hold ({bound.input_tokens})"
    return None


@dataclass
class Budget:
    """A spending limit in USD, what has been spent (by kind: runs, grading) and what the calls in flight
    have reserved. ``parent`` is a budget this one also spends from (the allowance a server's calls share)."""

    usd: float | None = None
    """The limit; None means no cap (spending is still counted)."""
    price_as: dict[str, str] = field(default_factory=dict)
    """Model id -> the model whose price it is charged at (a fine-tuned checkpoint at its base);
    the key ``"*"`` prices every model that has no price of its own."""
    spent_by_kind: dict[str, float] = field(default_factory=dict)
    parent: Budget | None = field(default=None, repr=False, compare=False)
    label: str = "budget"
    """What the limit is called in a refusal (``budget``, or the allowance a server was given)."""
    hard: bool = False
    """Never passed: a call starts only when the most it can cost fits in what is left (see the module)."""
    reserved: float = field(default=0.0, init=False, compare=False)
    """The reservations of the calls in flight."""
    in_flight: int = field(default=0, init=False, compare=False)

    def __post_init__(self) -> None:
        self.usd = parse_budget(self.usd)

    @property
    def spent(self) -> float:
        """Everything spent so far."""
        return sum(self.spent_by_kind.values())

    @property
    def remaining(self) -> float | None:
        """What is left under the cap; None without one."""
        return None if self.usd is None else max(self.usd - self.spent, 0.0)

    @property
    def exhausted(self) -> bool:
        """Whether the cap is reached, here or in a budget above."""
        own = self.usd is not None and self.spent >= self.usd
        return own or (self.parent is not None and self.parent.exhausted)

    def check(self) -> None:
        """Call before starting new work (a run): refused once the spending reaches a cap."""
        for budget in self._chain():
            if budget.usd is not None and budget.spent >= budget.usd:
                raise budget._refusal()

    def _refusal(self, next_call: float | None = None) -> BudgetExceeded:
        if next_call is not None and self.spent < (self.usd or 0.0):
            left = (self.usd or 0.0) - self.spent
            return BudgetExceeded(
                f"the next model call could cost up to ${next_call:.4f}, more than the ${left:.4f} left "
                f"of the {self.label} of ${self.usd or 0.0:.4f}",
                fixes=[MORE],
            )
        return BudgetExceeded(
            f"the {self.label} of ${self.usd or 0.0:.4f} is spent (${self.spent:.4f})", fixes=[MORE]
        )

    def _chain(self) -> list[Budget]:
        chain: list[Budget] = []
        budget: Budget | None = self
        while budget is not None:
            chain.append(budget)
            budget = budget.parent
        return chain

    def probe_price(self, model: str) -> None:
        """Refuse, before any call is made, a model with no known price under a cap."""
        self.cost(model, Usage(input_tokens=1))

    def prices(self, model: str) -> bool:
        """Whether ``model`` has a price here (its own, or the one ``price_as`` gives it)."""
        return self._price(model) is not None

    def _price(self, model: str) -> Price | None:
        price = price_of(self.price_as.get(model, model))
        if price is None and "*" in self.price_as:  # --price-as without --model: every unlisted model
            price = price_of(self.price_as["*"])
        return price

    def cost(self, model: str, usage: Usage) -> float:
        """What ``usage`` at ``model`` costs; UnknownPriceError for an unknown price under a cap."""
        if usage.is_zero:
            return 0.0
        price = self._price(model)
        if price is None:
            if all(budget.usd is None for budget in self._chain()):
                return 0.0
            raise UnknownPriceError(
                f"model {model!r} has no known price, so it cannot run under a budget",
                fixes=[PRICE_AS, NO_CAP],
            )
        return max(price.cost(usage), 0.0)

    def reserve(self, model: str, bound: Usage | None = None, *, kind: str = "runs") -> Reservation:
        """Hold the most one call to ``model`` can cost while it is in flight: ``async with`` it around the
        call, and ``settle`` it with the usage the call reported. Every model call goes through this."""
        return Reservation(self, model, bound, kind)

    def charge(self, model: str, usage: Usage, kind: str = "runs") -> float:
        """Record what a finished call used, when nothing was reserved for it (a host that reports its
        calls after the fact); returns its cost. Impossible usage is refused and charges nothing."""
        problem = usage_problem(usage)
        if problem is not None:
            raise UsageRefused(f"{model!r} reported usage that cannot be right: {problem}", charged=0.0)
        cost = self.cost(model, usage)
        self._add(kind, cost)
        return cost

    def spend(self, cost_usd: float, kind: str = "runs") -> float:
        """Record what work done elsewhere cost, priced there (a run a cluster's worker made under what
        was left of this budget); a cost that is not a finite amount of 0 or more is refused."""
        if not math.isfinite(cost_usd) or cost_usd < 0:
            raise UsageRefused(f"a cost of {cost_usd!r} USD cannot be right", charged=0.0)
        self._add(kind, cost_usd)
        return cost_usd

    def _add(self, kind: str, cost: float) -> None:
        with _LOCK:
            for budget in self._chain():
                budget.spent_by_kind[kind] = budget.spent_by_kind.get(kind, 0.0) + cost

    def _admit(self, amount: float) -> bool:
        """Reserve ``amount`` in this budget and those above if every one has room; False to wait for the
        calls in flight; BudgetExceeded once the spending alone has reached a cap."""
        with _LOCK:
            chain = self._chain()
            for budget in chain:
                if budget.usd is None:
                    continue
                held = budget.spent + budget.reserved
                if held >= budget.usd or (budget.hard and held + amount > budget.usd + 1e-12):
                    if budget.in_flight == 0 or budget.spent >= budget.usd:
                        raise budget._refusal(amount if budget.hard else None)
                    return False
            for budget in chain:
                budget.reserved += amount
                budget.in_flight += 1
            return True

    def _release(self, amount: float) -> None:
        with _LOCK:
            for budget in self._chain():
                budget.in_flight -= 1
                budget.reserved = max(budget.reserved - amount, 0.0) if budget.in_flight else 0.0

    def describe(self) -> str:
        """What was spent, by kind, against the cap, in words."""
        parts = ", ".join(f"{kind} ${usd:.4f}" for kind, usd in sorted(self.spent_by_kind.items()) if usd)
        cap = "no cap" if self.usd is None else f"budget ${_usd(self.usd)}"
        return f"spent ${self.spent:.4f}" + (f" ({parts})" if parts else "") + f" of {cap}"


class Reservation:
    """One model call's hold on its budget: taken on entry (waiting, or BudgetExceeded), settled to the
    real cost by ``settle``; a call that ends without settling gives its hold back, except one whose
    reply carried impossible usage (``UsageRefused``), which is charged at the reservation."""

    def __init__(self, budget: Budget, model: str, bound: Usage | None, kind: str) -> None:
        self.budget, self.model, self.bound, self.kind = budget, model, bound, kind
        self.amount = 0.0
        """The most the call can cost (0 when the request does not bound it)."""
        self.cost: float | None = None
        self._held = False

    async def __aenter__(self) -> Reservation:
        self.amount = self.budget.cost(self.model, self.bound) if self.bound is not None else 0.0
        while not self.budget._admit(self.amount):
            import anyio  # loaded by the first call that has to wait, not by every command

            await anyio.sleep(WAIT_S)
        self._held = True
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if not self._held:
            return
        if isinstance(error, UsageRefused) and self.cost is None:
            error.charged = self._close(self.amount)
        else:
            self._close(self.cost or 0.0)

    def _close(self, cost: float) -> float:
        self._held = False
        self.budget._release(self.amount)
        self.budget._add(self.kind, cost)
        return cost

    def vet(self, usage: Usage) -> None:
        """Refuse, as ``settle`` would (charged at the reservation), usage that cannot be right, before
        the reply that carries it is passed on; usage that can be right is left to ``settle``."""
        if usage_problem(usage, self.bound) is not None:
            self.settle(usage)

    def settle(self, usage: Usage) -> float:
        """The call's real cost, charged now; impossible usage raises UsageRefused, charged at the
        reservation."""
        if self.cost is not None:
            raise RuntimeError("a reservation is settled once")
        problem = usage_problem(usage, self.bound)
        if problem is not None:
            self.cost = self._close(self.amount)
            raise UsageRefused(
                f"{self.model!r} reported usage that cannot be right ({problem}), so the call failed; "
                f"it is charged at the most it could cost, ${self.amount:.4f}",
                charged=self.cost,
            )
        self.cost = self._close(self.budget.cost(self.model, usage))
        return self.cost


def _usd(amount: float) -> str:
    """Cents as cents ($1.00), and a smaller cap without rounding it to $0.00 ($0.0001)."""
    return f"{amount:.2f}" if amount == round(amount, 2) else f"{amount:.4g}"
