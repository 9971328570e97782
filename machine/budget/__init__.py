"""What model calls cost and who may spend: token usage, the pricing table (USD per million tokens, cached
input at its own rate, training priced per token trained), prices an endpoint publishes, and the budget
every model, judge and training call reserves from before it is made.

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._budget import Budget, Reservation, parse_budget
    from ._pricing import (
        LOCAL,
        TINKER_PRICES,
        TINKER_TRAIN_PRICES,
        TRAINING,
        Price,
        Usage,
        price_of,
    )
    from ._pricing import publish as publish_prices

_HOMES = {
    "Budget": "._budget",
    "LOCAL": "._pricing",
    "Price": "._pricing",
    "Reservation": "._budget",
    "TINKER_PRICES": "._pricing",
    "TINKER_TRAIN_PRICES": "._pricing",
    "TRAINING": "._pricing",
    "Usage": "._pricing",
    "parse_budget": "._budget",
    "price_of": "._pricing",
    "publish_prices": "._pricing:publish",
}
"""The module each public name is defined in."""

__all__ = [
    "LOCAL",
    "TINKER_PRICES",
    "TINKER_TRAIN_PRICES",
    "TRAINING",
    "Budget",
    "Price",
    "Reservation",
    "Usage",
    "parse_budget",
    "price_of",
    "publish_prices",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
