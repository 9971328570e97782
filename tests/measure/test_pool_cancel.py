"""The worker pool under cancellation: it stops between jobs however little the jobs wait."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from machine.measure import BatchWriter, run_pool
from machine.runs import Run, SQLiteStore, Timings


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


async def test_the_pool_still_does_every_job_when_nothing_cancels_it() -> None:
    done: list[int] = []

    async def work(job: int) -> str | None:
        done.append(job)
        return None

    assert await run_pool(list(range(100)), work, concurrency=4) is None
    assert sorted(done) == list(range(100))


@pytest.mark.parametrize("cancel_at", range(1, 25))
async def test_a_cancelled_writer_stores_every_run_it_was_given(tmp_path: Path, cancel_at: int) -> None:
    """A Ctrl-C that lands while the writer has just taken a batch (and not yet handed it to its thread)
    must not drop that batch: every run added before the cancel is in the store afterwards."""
    store = SQLiteStore(tmp_path / "runs.db")
    writer = BatchWriter(store, every_s=60.0, batch=8)
    added: list[str] = []

    with anyio.CancelScope() as scope:

        async def work(index: int) -> str | None:
            run = make_run(index)
            writer.add([run])
            added.append(run.id)
            if len(added) == cancel_at:
                scope.cancel()
            await anyio.lowlevel.checkpoint()
            return None

        await writer.run(list(range(1000)), work, concurrency=4)
    assert scope.cancelled_caught
    try:
        assert sorted(run.id for run in store.iter_runs()) == sorted(added)
    finally:
        store.close()


def make_run(index: int) -> Run:
    """A small finished run, one per case."""
    return Run(
        id=f"r{index:04d}",
        machine="red",
        model="echo",
        harness="echo",
        input=f"in {index}",
        output="o",
        case_id=f"c{index}",
        trial=0,
        timings=Timings(),
    )
