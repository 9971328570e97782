"""How fast the SQLite store lists and writes runs once it holds 100,000 of them.

Fills a fresh store in a temporary folder with realistic small runs spread over ten machines, then
prints the median and p95 of ``runs(machine, 20)`` and of single ``put(run)`` calls, the file size,
and a split of the listing time into SQLite and pydantic, beside the targets. Asserts nothing.

    .venv/bin/python benchmarks/store.py [--runs 100000] [--machines 10]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from machine.runs import CriterionScore, Message, Run, Scorecard, SQLiteStore, Timings, ToolCall, Usage

TARGET_NEWEST_MS = 2.0
TARGET_PUT_MS = 2.0
START = datetime(2026, 1, 1, tzinfo=UTC)
NEWEST_RUNS_SQL = SQLiteStore.sql.newest_runs
WORDS = ["the", "a", "model", "tool", "file", "answer", "check", "result", "short", "value", "sum", "run"]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def make_run(rng: random.Random, machine: str, at: datetime) -> Run:
    """A small run like the ones a real machine leaves: a question, a tool call, an answer, two grades."""
    question = text(rng, 30)
    answer = text(rng, 40)
    correct = rng.random()
    return Run(
        id=at.strftime("%Y%m%d-%H%M%S-") + os.urandom(4).hex(),
        machine=machine,
        version="v1",
        model="openrouter:qwen/qwen3-8b",
        harness="openai-chat",
        instructions="Answer the question in one short paragraph. Use the tools when a file is needed.",
        input=question,
        trajectory=[
            Message(role="user", content=question),
            Message(
                role="assistant",
                reasoning=text(rng, 25),
                tool_calls=[ToolCall(id="call-1", name="read_file", arguments={"path": "notes.txt"})],
            ),
            Message(role="tool", content=text(rng, 20), tool_call_id="call-1", name="read_file"),
            Message(role="assistant", content=answer),
        ][: rng.choice((3, 4))],
        output=answer,
        usage=Usage(input_tokens=rng.randint(300, 2000), output_tokens=rng.randint(20, 300)),
        cost_usd=rng.random() / 1000,
        stop_reason="end_turn",
        timings=Timings(started_at=at, finished_at=at + timedelta(seconds=rng.uniform(0.5, 9))),
        scorecard=Scorecard(
            rubric_fingerprint="9f2c1a7be0d34c55",
            criteria={
                "correct": CriterionScore(
                    criterion="correct", weight=2.0, grader="check:correct", score=correct
                ),
                "brief": CriterionScore(
                    criterion="brief",
                    weight=1.0,
                    grader="judge",
                    score=1.0,
                    reason=text(rng, 12),
                    cost_usd=2e-5,
                ),
            },
            graded_at=at + timedelta(seconds=10),
        ),
    )


def runs_to_fill(rng: random.Random, total: int, machines: list[str]) -> Iterator[Run]:
    at = START
    for _ in range(total):
        at += timedelta(milliseconds=rng.randint(1, 60_000))
        yield make_run(rng, rng.choice(machines), at)


def timed_ms(call: Callable[[], object], times: int) -> list[float]:
    took = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        took.append((time.perf_counter() - start) * 1000)
    return took


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def row(name: str, values: list[float], target: float | None = None) -> str:
    median = statistics.median(values)
    goal = (
        ""
        if target is None
        else f"   target <= {target:.1f} ms median  {'met' if median <= target else 'MISSED'}"
    )
    return f"{name:<38} median {median:7.3f} ms   p95 {p95(values):7.3f} ms{goal}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--machines", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(7)
    machines = [f"machine-{i}" for i in range(args.machines)]

    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore.in_workspace(folder)
        start = time.perf_counter()
        batch: list[Run] = []
        for run in runs_to_fill(rng, args.runs, machines):
            batch.append(run)
            if len(batch) == 1000:
                store.put_many(batch)
                batch.clear()
        store.put_many(batch)
        fill_s = time.perf_counter() - start
        print(f"filled {store.count():,} runs over {len(machines)} machines with put_many in {fill_s:.1f} s")

        newest = timed_ms(lambda: store.runs(rng.choice(machines), 20), 200)

        late = START + timedelta(days=400)
        singles = [make_run(rng, rng.choice(machines), late + timedelta(seconds=i)) for i in range(500)]
        pending = iter(singles)
        puts = timed_ms(lambda: store.put(next(pending)), 500)
        updates = iter(run.model_copy(update={"output": "changed"}) for run in singles)
        upserts = timed_ms(lambda: store.put(next(updates)), 500)
        gets = timed_ms(lambda: store.get(rng.choice(singles).id), 200)

        # Where the listing's time goes: SQLite alone, then pydantic alone on the same 20 rows.
        raw = sqlite3.connect(store.path)
        sql_only = timed_ms(lambda: raw.execute(NEWEST_RUNS_SQL, (rng.choice(machines), 20)).fetchall(), 200)
        rows = raw.execute(NEWEST_RUNS_SQL, (machines[0], 20)).fetchall()
        validate_only = timed_ms(lambda: [Run.model_validate_json(data) for (data,) in rows], 200)
        mean_json = statistics.mean(len(data) for (data,) in rows)
        raw.close()

        start = time.perf_counter()
        every = sum(1 for _ in store.iter_runs())
        iter_s = time.perf_counter() - start
        store.close()

        db_size = store.path.stat().st_size
        wal = Path(f"{store.path}-wal")
        wal_size = wal.stat().st_size if wal.exists() else 0

    print(row("runs(machine, 20), 200 calls", newest, TARGET_NEWEST_MS))
    print(row("  of which SQLite fetch", sql_only))
    print(row("  of which pydantic, 20 runs", validate_only))
    print(row("put(run), 500 new runs", puts, TARGET_PUT_MS))
    print(row("put(run), 500 upserts of those", upserts))
    print(row("get(id), 200 calls", gets))
    print(f"{'iter_runs() over every run':<38} {every:,} runs in {iter_s:.1f} s")
    print(
        f"{'file size':<38} store.db {db_size / 2**20:.1f} MiB ({db_size / max(every, 1):,.0f} bytes a run),"
        f" store.db-wal {wal_size / 2**20:.1f} MiB"
    )
    print(f"{'mean run JSON':<38} {mean_json:,.0f} bytes")


if __name__ == "__main__":
    main()
