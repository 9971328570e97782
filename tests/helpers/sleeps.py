"""A stand-in for ``anyio.sleep`` in ChatClient: records each wait and returns at once, so retry tests
check the backoff without waiting it out."""

from __future__ import annotations


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
