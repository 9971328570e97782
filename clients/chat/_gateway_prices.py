"""The prices the Vercel AI Gateway publishes, read once when the ``fx`` harness is made: its
``GET /models`` lists each model with ``pricing`` in USD per token (strings), which become the budget's
price for that model id. The reply is hostile input: bounded in time and size, and a model whose prices
do not parse as non-negative numbers is left unpriced (a budget then refuses it and names
``--price-as``), never priced at 0."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from typing import Any

from machine.budget import Price

from .._endpoint import Endpoint

TIMEOUT_S = 10.0
MAX_BYTES = 8 * 1024 * 1024
PER_MILLION = 1_000_000


def _rate(value: Any) -> float | None:
    """USD per million tokens from the Gateway's USD per token (a string or a number); None if not one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        rate = float(value) * PER_MILLION
    except ValueError:
        return None
    return rate if math.isfinite(rate) and rate >= 0 else None


def parse_prices(body: Any) -> dict[str, Price]:
    """The priced models of a ``/models`` reply (``{"data": [{"id", "pricing": {"input", "output",
    "input_cache_read"}}]}``)."""
    rows = body.get("data") if isinstance(body, dict) else None
    prices: dict[str, Price] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            continue
        found = row.get("pricing")
        pricing: dict[str, Any] = found if isinstance(found, dict) else {}
        given, output = _rate(pricing.get("input")), _rate(pricing.get("output"))
        if given is None or output is None:
            continue
        cached = _rate(pricing.get("input_cache_read"))
        prices[row["id"]] = Price(given, given if cached is None else cached, output)
    return prices


def published_prices(endpoint: Endpoint) -> dict[str, Price]:
    """The Gateway's prices; none when its list cannot be read (its models are then unpriced)."""
    request = urllib.request.Request(
        endpoint.base_url.rstrip("/") + "/models",
        headers={"Authorization": f"Bearer {endpoint.api_key}", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as reply:
            raw = reply.read(MAX_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError):
        return {}
    if len(raw) > MAX_BYTES:
        return {}
    try:
        return parse_prices(json.loads(raw))
    except ValueError:
        return {}
