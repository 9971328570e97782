"""Budgets: a spending limit in USD, charged for every model and judge call.

New work asks ``check()`` before it starts and is refused once the limit is reached; work already
in flight still charges what it used, so a command overshoots by at most its concurrent runs.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from machine.errors import BadInputError, BudgetExceeded, Fix, UnknownPriceError

from ._pricing import price_of
from ._records import Usage

BUDGET = Fix("budget", "2.5")
PRICE_AS = Fix("price_as", "BASE_MODEL", "to price a checkpoint as its base model")
NO_CAP = Fix("budget", "none", "to lift the cap")


def parse_budget(value: str | float | None) -> float | None:
    """``"none"`` lifts the cap; anything else must be a non-negative number of USD."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
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


@dataclass
class Budget:
    """A spending limit in USD and what has been spent, by kind (runs, grading)."""

    usd: float | None = None
    """The limit; None means no cap (spending is still counted)."""
    price_as: dict[str, str] = field(default_factory=dict)
    """Model id -> the model whose price it is charged at (a fine-tuned checkpoint at its base);
    the key ``"*"`` prices every model that has no price of its own."""
    spent_by_kind: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

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
        """Whether the cap is reached."""
        return self.usd is not None and self.spent >= self.usd

    def check(self) -> None:
        """Call before starting new work."""
        if self.exhausted:
            raise BudgetExceeded(
                f"the budget of ${self.usd:.4f} is spent (${self.spent:.4f})",
                fixes=[Fix("budget", "USD", "larger than that to go on")],
            )

    def probe_price(self, model: str) -> None:
        """Refuse, before any call is made, a model with no known price under a cap."""
        self.cost(model, Usage(input_tokens=1))

    def cost(self, model: str, usage: Usage) -> float:
        """What ``usage`` at ``model`` costs; UnknownPriceError for an unknown price under a cap."""
        if usage.is_zero:
            return 0.0
        price = price_of(self.price_as.get(model, model))
        if price is None and "*" in self.price_as:  # --price-as without --model: every unlisted model
            price = price_of(self.price_as["*"])
        if price is None:
            if self.usd is None:
                return 0.0
            raise UnknownPriceError(
                f"model {model!r} has no known price, so it cannot run under a budget",
                fixes=[PRICE_AS, NO_CAP],
            )
        return price.cost(usage)

    def charge(self, model: str, usage: Usage, kind: str = "runs") -> float:
        """Record what a finished call used; returns its cost in USD."""
        cost = self.cost(model, usage)
        with self._lock:
            self.spent_by_kind[kind] = self.spent_by_kind.get(kind, 0.0) + cost
        return cost

    def describe(self) -> str:
        """What was spent, by kind, against the cap, in words."""
        parts = ", ".join(f"{kind} ${usd:.4f}" for kind, usd in sorted(self.spent_by_kind.items()) if usd)
        cap = "no cap" if self.usd is None else f"budget ${_usd(self.usd)}"
        return f"spent ${self.spent:.4f}" + (f" ({parts})" if parts else "") + f" of {cap}"


def _usd(amount: float) -> str:
    """Cents as cents ($1.00), and a smaller cap without rounding it to $0.00 ($0.0001)."""
    return f"{amount:.2f}" if amount == round(amount, 2) else f"{amount:.4g}"
