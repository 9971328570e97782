"""The PostgreSQL store at a million runs: the newest 20 runs of a machine, and their summaries, against the
same reads of a SQLite store of the same runs, side by side in one run.

A throwaway PostgreSQL server (Debian's, on a free loopback port, as the tests start it) gets RUNS runs
over 10 machines, written server-side from one real run's JSON (its id, machine and time varied), then
ANALYZE; the SQLite store gets the same rows. Each read is timed CALLS times through the store's own
methods (``runs(machine, 20)``, ``summaries(machine, 20)``), the machines taken in turn; the median and
the 95th percentile. Target: the newest 20 runs of a machine in at most 5 ms at 1,000,000 runs. Prints
figures and asserts nothing.

    .venv/bin/python benchmarks/pg_store.py            # 1,000,000 runs
    .venv/bin/python benchmarks/pg_store.py --quick    # 100,000 runs
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

from helpers.postgres import server  # noqa: E402
from store import START, make_run  # noqa: E402

from machine.clients.postgres import PostgresStore  # noqa: E402
from machine.runs import SQLiteStore  # noqa: E402
from machine.runs._rows import DERIVED  # noqa: E402

TARGET_MS = 5.0
CALLS = 500
MACHINES = 10
FILL_PG = """
INSERT INTO runs (id, machine, created_at, status, case_id, trial, conversation_id, score, data, suite_id)
SELECT 'r' || lpad(i::text, 8, '0'), 'm' || (i %% {machines}),
       to_char(timestamp '2026-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       'ok', 'c' || (i %% 50), 0, NULL, (i %% 3) / 2.0,
       jsonb_set(jsonb_set(%s::jsonb, '{{id}}', to_jsonb('r' || lpad(i::text, 8, '0'))),
                 '{{machine}}', to_jsonb('m' || (i %% {machines}))), NULL
FROM generate_series(%s, %s) AS i
"""


def fill_postgres(store: PostgresStore, runs: int, template: str) -> None:
    import psycopg

    with psycopg.connect(store.url, autocommit=True) as db:
        step = 100_000
        for low in range(0, runs, step):
            db.execute(FILL_PG.format(machines=MACHINES), (template, low, min(runs, low + step) - 1))
        db.execute("ANALYZE runs")


def fill_sqlite(store: SQLiteStore, runs: int, template: str) -> None:
    import json

    data = json.loads(template)
    with store._reading() as db:
        db.execute("BEGIN")
        for i in range(runs):
            run_id, machine = f"r{i:08d}", f"m{i % MACHINES}"
            at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1767225600 + i)) + ".000000Z"
            text = json.dumps({**data, "id": run_id, "machine": machine})
            db.execute(
                "INSERT INTO runs (id, machine, created_at, status, case_id, trial, conversation_id, score,"
                " data, suite_id) VALUES (?, ?, ?, 'ok', ?, 0, NULL, ?, ?, NULL)",
                (run_id, machine, at, f"c{i % 50}", (i % 3) / 2.0, text),
            )
        db.execute("COMMIT")
        db.execute("ANALYZE")


def timed(read: Callable[[str], object]) -> tuple[float, float]:
    """The median and 95th percentile, in ms, of CALLS reads over the machines in turn."""
    seconds = []
    for call in range(CALLS):
        started = time.perf_counter()
        read(f"m{call % MACHINES}")
        seconds.append(time.perf_counter() - started)
    seconds.sort()
    return statistics.median(seconds) * 1000, seconds[int(len(seconds) * 0.95)] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs = 100_000 if args.quick else 1_000_000
    template = make_run(random.Random(3), "m0", START).model_dump_json(exclude=DERIVED)
    with server() as url, tempfile.TemporaryDirectory() as scratch:
        pg = PostgresStore(url)
        began = time.monotonic()
        fill_postgres(pg, runs, template)
        print(f"PostgreSQL: {pg.count():,} runs written in {time.monotonic() - began:.1f} s", flush=True)
        lite = SQLiteStore(Path(scratch) / "store.db")
        began = time.monotonic()
        fill_sqlite(lite, runs, template)
        print(f"SQLite: {lite.count():,} runs written in {time.monotonic() - began:.1f} s", flush=True)
        assert [r.id for r in pg.runs("m3", 20)] == [r.id for r in lite.runs("m3", 20)]
        rows = [
            ("newest 20 runs", timed(lambda m: pg.runs(m, 20)), timed(lambda m: lite.runs(m, 20))),
            (
                "newest 20 summaries",
                timed(lambda m: pg.summaries(m, 20)),
                timed(lambda m: lite.summaries(m, 20)),
            ),
        ]
        pg.close()
        lite.close()
    print(f"\n{runs:,} runs over {MACHINES} machines; {CALLS} reads each (median, p95)")
    print(f"{'read':<22}{'PostgreSQL':>22}{'SQLite (anchor)':>24}")
    for name, (pm, pp), (sm, sp) in rows:
        print(f"{name:<22}{pm:>9.2f} / {pp:>6.2f} ms{sm:>11.2f} / {sp:>6.2f} ms")
    median = rows[0][1][0]
    print(f"\nnewest 20 runs of a machine in PostgreSQL: {median:.2f} ms median (target <= {TARGET_MS:g} ms)")


if __name__ == "__main__":
    main()
