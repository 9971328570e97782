"""Which failures of a Tinker call are worth trying again, in words.

Tinker pauses work when it is out of capacity or over a rate limit (429, or a 408 that carries the queue
state), fails now and then on its side (5xx, a request failed in the server's category), and connections
drop; each of those may pass. A refused request (bad data, a missing key, a model it does not serve)
will not, and is reported at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def retry_reason(error: BaseException, timeout_s: float) -> str | None:
    """Why ``error`` is worth trying again (``"a capacity pause"``), or None when it is not."""
    if isinstance(error, TimeoutError):
        return f"no reply within {timeout_s:g} s"
    import tinker

    if isinstance(error, tinker.APITimeoutError):
        return "a request timeout"
    if isinstance(error, tinker.APIConnectionError):
        return "a dropped connection"
    if isinstance(error, tinker.APIStatusError):
        status = error.status_code
        if status == 429:
            return "a capacity or rate-limit pause (429)"
        if status == 408:
            return "a capacity pause (408)"
        if status >= 500:
            return f"a server error ({status})"
        return None
    if isinstance(error, tinker.RequestFailedError):
        category = str(getattr(error, "category", "")).lower()
        return None if category == "user" else f"a request failed on the server ({error.message})"
    return None


def attempt_note(reasons: Sequence[str]) -> str:
    """``"5 times (3x a server error (500), 2x no reply within 1 s)"``: the tries, and what ended them."""
    counts = Counter(reasons)
    parts = ", ".join(f"{n}x {reason}" for reason, n in counts.items())
    return f"{len(reasons)} times ({parts})"
