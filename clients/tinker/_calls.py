"""Which failures of a Tinker call are worth trying again, in words.

Tinker pauses work when it is out of capacity or over a rate limit (429, or a 408 that carries the queue
state), fails now and then on its side (5xx, a request failed in the server's category), and connections
drop; each of those may pass. A refused request (bad data, a missing key, a model it does not serve)
will not, and is reported at once. A call with no reply yet is never sent again (``Flight``). Whatever
calls the service does so through a ``Caller`` (the trainer), so every call is timed, retried and
reported alike.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from machine.training import Checkpoint


class Caller(Protocol):
    """What makes the calls of a training (``TinkerTrainer`` is one): ``service`` makes the SDK's
    ServiceClient, and ``_call`` submits requests and waits for their replies, retrying those worth it."""

    @property
    def service(self) -> Callable[[], Any]:
        """Makes the SDK's ServiceClient."""
        ...

    async def _call(
        self, what: str, submit: Callable[[], list[Any]], *, step: int, saved: Checkpoint | None
    ) -> list[Any]: ...


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


class Flight:
    """One call's requests, submitted once and waited on by every try until the service answers them or
    reports their failure (then the next try submits them again)."""

    def __init__(self, submit: Callable[[], list[Any]]) -> None:
        self.submit = submit
        self.futures: list[Any] | None = None
        self.lock = threading.Lock()

    def wait(self, timeout_s: float) -> list[Any]:
        """In a worker thread: submit unless a submission is in flight, then wait for each reply within
        the timeout. A reply that does not come leaves the submission in flight."""
        with self.lock:
            if self.futures is None:
                self.futures = self.submit()
            futures = self.futures
        deadline = time.monotonic() + timeout_s
        try:
            replies = [f.result(timeout=max(deadline - time.monotonic(), 0.0)) for f in futures]
        except TimeoutError:
            raise
        except BaseException:
            with self.lock:  # the service answered with a failure: nothing is in flight any more
                if self.futures is futures:
                    self.futures = None
            raise
        with self.lock:
            if self.futures is futures:
                self.futures = None
        return replies
