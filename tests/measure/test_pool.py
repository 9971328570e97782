"""The batch writer on a real SQLite store: finished runs are written within about a second while work
goes on, a failure stops new work and is the one reported, and every finished run is stored or named."""

from __future__ import annotations

import errno
import time
from collections.abc import Iterable
from pathlib import Path

import anyio
import pytest
from helpers.filesystems import small_tmpfs

from machine.errors import WorkFailed
from machine.measure import BatchWriter
from machine.runs import Run, SQLiteStore, Timings

LIMIT = 30


def make_run(index: int, size: int = 100) -> Run:
    return Run(
        id=f"r{index:04d}",
        machine="red",
        model="echo",
        harness="echo",
        input=f"input {index}",
        output="o" * size,
        case_id=f"c{index}",
        trial=0,
        timings=Timings(),
    )


async def test_finished_runs_are_in_the_store_while_others_still_run(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    reader = SQLiteStore(tmp_path / "store.db")  # another connection, as another process would read
    writer = BatchWriter(store, every_s=0.2)
    release = anyio.Event()
    seen_while_running: list[int] = []

    async def work(index: int) -> None:
        if index == 3:
            deadline = time.monotonic() + 10
            while reader.count() < 3 and time.monotonic() < deadline:  # bounded in time
                await anyio.sleep(0.05)
            seen_while_running.append(reader.count())
            release.set()
        else:
            writer.add([make_run(index)])
            if index == 2:
                await release.wait()

    with anyio.fail_after(LIMIT):
        await writer.run([0, 1, 2, 3], work, concurrency=4)
    assert seen_while_running == [3]  # runs 0, 1 and 2 were stored before the suite ended
    assert reader.count() == 3
    store.close()
    reader.close()


async def test_a_full_batch_is_written_before_the_interval(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    writer = BatchWriter(store, every_s=60, batch=4)
    counted: list[int] = []

    async def work(index: int) -> None:
        writer.add([make_run(index)])
        if index == 4:
            with anyio.fail_after(10):
                while store.count() < 4:
                    await anyio.sleep(0.02)
            counted.append(store.count())

    with anyio.fail_after(LIMIT):
        await writer.run(range(5), work, concurrency=1)  # type: ignore[arg-type]
    assert counted and counted[0] >= 4  # written long before the 60 s interval
    assert store.count() == 5
    store.close()


async def test_a_full_disk_keeps_what_fits_reports_the_first_error_and_names_the_rest(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", 512) as mounted:
        store = SQLiteStore(mounted / "store.db")
        writer = BatchWriter(store, every_s=0.1)
        started: list[int] = []

        async def work(index: int) -> None:
            started.append(index)
            if index == 40:  # a later failure, caused by the first: it must not take its place
                raise OSError(errno.ENOSPC, "No space left on device", str(mounted / "sandbox"))
            writer.add([make_run(index, size=30_000)])
            await anyio.sleep(0.01)

        with anyio.fail_after(LIMIT), pytest.raises(WorkFailed) as failed:
            await writer.run(range(200), work, concurrency=2)  # type: ignore[arg-type]
        error = failed.value
        stored = {run.id for run in store.iter_runs()}
        lost = {run.id for run in error.lost}
        store.close()
    assert error.message.startswith(
        f"the store {mounted / 'store.db'} could not be written: the disk is full"
    )
    assert stored and lost and not stored & lost
    assert stored | lost == {make_run(i).id for i in started if i != 40}
    for run_id in lost:
        assert run_id in error.message
    assert len(started) < 200  # the failure stopped new work


async def test_a_failing_job_stops_new_work_and_the_finished_runs_are_stored(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    writer = BatchWriter(store)
    started: list[int] = []

    async def work(index: int) -> None:
        started.append(index)
        if index == 2:
            raise OSError(errno.ENOSPC, "No space left on device", "/somewhere/sandboxes/x")
        await anyio.sleep(0.05)
        writer.add([make_run(index)])

    with anyio.fail_after(LIMIT), pytest.raises(WorkFailed) as failed:
        await writer.run(range(50), work, concurrency=3)  # type: ignore[arg-type]
    assert failed.value.message.startswith("No space left on device: /somewhere/sandboxes/x")
    assert "every finished run" in failed.value.message and failed.value.lost == ()
    assert len(started) <= 4  # jobs 0, 1 (in flight) finished; no new job began after the failure
    assert store.count() == len(started) - 1
    store.close()


class _SlowStore(SQLiteStore):
    """A store whose batches take a while to write, as a big store's do."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[int] = []

    def put_many(self, runs: Iterable[Run]) -> None:
        batch = list(runs)
        self.batches.append(len(batch))
        time.sleep(0.05)
        super().put_many(batch)


@pytest.mark.slow
async def test_jobs_faster_than_the_store_wait_for_it_so_memory_stays_flat(tmp_path: Path) -> None:
    store = _SlowStore(tmp_path / "store.db")
    writer = BatchWriter(store, every_s=60, batch=8, limit=16)
    most_waiting = 0

    async def work(index: int) -> None:
        nonlocal most_waiting
        writer.add([make_run(index)])
        most_waiting = max(most_waiting, len(writer.pending))

    with anyio.fail_after(LIMIT):
        await writer.run(range(400), work, concurrency=4)  # type: ignore[arg-type]
    assert store.count() == 400
    assert most_waiting <= 16 + 4  # the limit, and one more run for each job in flight
    assert max(store.batches) <= 16 + 4
    store.close()
