"""The worker pool under cancellation: it stops between jobs however little the jobs wait."""

from __future__ import annotations

import anyio
import pytest

from machine.measure import run_pool


@pytest.mark.anyio
async def test_cancelling_the_pool_stops_jobs_that_never_wait() -> None:
    """Jobs that finish without awaiting anything (free harnesses, cached replies) still give way to
    cancellation: at most the jobs under way when it came, one a worker, run after it."""
    done: list[int] = []
    concurrency = 4

    with anyio.CancelScope() as scope:

        async def work(job: int) -> str | None:
            done.append(job)
            if len(done) == 10:
                scope.cancel()
            return None

        await run_pool(list(range(1000)), work, concurrency=concurrency)
    assert scope.cancelled_caught
    assert 10 <= len(done) <= 10 + concurrency
    assert done == sorted(done)  # in order, as the pool promises


@pytest.mark.anyio
async def test_the_pool_still_does_every_job_when_nothing_cancels_it() -> None:
    done: list[int] = []

    async def work(job: int) -> str | None:
        done.append(job)
        return None

    assert await run_pool(list(range(100)), work, concurrency=4) is None
    assert sorted(done) == list(range(100))
