"""What checking a store before its first write costs (``SQLiteStore.ready_to_write``: ``PRAGMA
quick_check`` reads every page), and what the time-batched writer costs the event loop.

Fills a fresh store with the realistic runs of ``store.py`` in steps (1,000, 10,000 and 100,000 runs;
``--quick`` stops at 10,000) and at each size times, in a fresh ``SQLiteStore`` each time, opening it
and the first ``ready_to_write``, beside the target. Asserts nothing.

    .venv/bin/python benchmarks/store_check.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store import runs_to_fill  # the same runs as the store benchmark

from machine.runs import Run, SQLiteStore

TARGET_MS = {10_000: 50.0}
"""At 10,000 runs (a busy workspace) the check must cost at most this much of a command's start-up."""


def fill(store: SQLiteStore, runs: int, rng: random.Random) -> None:
    batch: list[Run] = []
    for run in runs_to_fill(rng, runs, ["a", "b", "c"]):
        batch.append(run)
        if len(batch) == 1000:
            store.put_many(batch)
            batch.clear()
    if batch:
        store.put_many(batch)


def timed(path: Path, times: int = 5) -> tuple[list[float], list[float]]:
    """Open and first check, ``times`` times, each in a fresh store object (the check runs once each)."""
    opens, checks = [], []
    for _ in range(times):
        start = time.perf_counter()
        store = SQLiteStore(path)
        opened = time.perf_counter()
        store.ready_to_write()
        checked = time.perf_counter()
        store.close()
        opens.append((opened - start) * 1000)
        checks.append((checked - opened) * 1000)
    return opens, checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="stop at 10,000 runs")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    rng = random.Random(3)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "store.db"
        held = 0
        for size in sizes:
            store = SQLiteStore(path)
            fill(store, size - held, rng)
            store.close()  # the last connection folds the WAL into the file, as after any command
            held = size
            opens, checks = timed(path)
            mib = path.stat().st_size / 2**20
            target = TARGET_MS.get(size)
            median = statistics.median(checks)
            goal = (
                ""
                if target is None
                else f"   target <= {target:.0f} ms  {'met' if median <= target else 'MISSED'}"
            )
            print(
                f"{size:>7,} runs ({mib:6.1f} MiB): open median {statistics.median(opens):6.2f} ms, "
                f"first ready_to_write median {median:7.1f} ms "
                f"({median / size * 1000:.2f} ms per 1,000 runs){goal}"
            )


if __name__ == "__main__":
    main()
