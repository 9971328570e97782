"""How long the event loop is held: a ticker task that records the largest gap between its ticks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

TICK_S = 0.005


@dataclass
class Gaps:
    """The longest time, in seconds, the ticker waited past its tick while the block ran."""

    longest: float = 0.0
    ticks: int = 0


@asynccontextmanager
async def loop_gaps() -> AsyncIterator[Gaps]:
    """Measure, while the block runs, the longest the event loop went without running the ticker."""
    gaps = Gaps()

    async def tick() -> None:
        last = time.perf_counter()
        while True:
            await anyio.sleep(TICK_S)
            now = time.perf_counter()
            gaps.longest = max(gaps.longest, now - last - TICK_S)
            gaps.ticks += 1
            last = now

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        await anyio.sleep(TICK_S * 2)
        try:
            yield gaps
        finally:
            group.cancel_scope.cancel()
