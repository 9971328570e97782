"""What the event log (``.machine/events.jsonl``) costs a run: the batched writer against the old way (each
event encoded and written on the caller's thread, one ``os.write`` each), side by side in one run.

Each run tells the log three events (``run_started``, ``step``, ``run_finished``, with the fields and
previews a workspace sends). Two pacings:

- **tight**: the events emitted back to back (``--events``, 50,000), the most a writer can gather;
- **suite**: a run's three events, then ``sleep(0.001)``, for ``--runs`` runs (1,000), about the pace of a
  suite on the echo harness (the issue's profile: 9,000 events in a 3,000-run suite).

For each: the caller's thread's CPU time per emit (``time.thread_time``; the writer's thread is not
counted), its wall time inside ``emit`` (a wait for the GIL or a lock counts: for reference), and the whole
process's CPU time per event (``time.process_time``, from the first emit until
every event is written: ``flush()`` for the new log), the median of ``--repeat`` (5) trials in fresh
files; the suite pacing's sleeps are measured alone and taken off. Then the delay before an event is in
the file, as a watcher in another process sees it: one event every 20 ms, the file's size polled, 50
times. Targets: the caller's cost per emit at most a tenth of the old way's; the total per event no more
than the old way's; the delay within ``WINDOW_S`` plus 5 ms (median). The files go to
``benchmarks/out/``, on the disk a workspace would use. Asserts nothing.

    .venv/bin/python benchmarks/event_log.py [--quick] [--events 50000] [--runs 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from machine.runs import EVENTS_FILE, EventLog
from machine.runs import _events as events

OUT = Path(__file__).resolve().parent / "out"
Emit = Callable[..., None]


class OldLog:
    """The log before batching, kept as the anchor: each event encoded and written by its caller."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._writes = 0
        self._size = 0

    def emit(self, kind: str, **fields: Any) -> None:
        kept = {name: events._kept(value) for name, value in fields.items()}
        line = json.dumps({"at": round(time.time(), 6), "kind": kind, **kept})
        data = (line.replace("\n", " ") + "\n").encode()
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            if self._writes % 64 == 0 or self._size + len(data) > events.MAX_BYTES:
                self._size = os.fstat(self._fd).st_size
            os.write(self._fd, data)
            self._writes += 1
            self._size += len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


def one_run(emit: Emit, i: int) -> None:
    """A run's three events, as ``machine.workspace._events`` tells them."""
    run = f"20261206T105500-{i:06d}"
    emit("run_started", run=run, machine="bench", version="v1", model="echo", harness="echo",
         case_id=f"case-{i}", trial=0, input=f"the input of case {i}, a sentence or two long")  # fmt: skip
    emit("step", run=run, machine="bench", type="assistant", text=f"the input of case {i}", tool="")
    emit("run_finished", run=run, machine="bench", status="ok", error=None, cost_usd=0.0, score=1.0,
         output=f"the input of case {i}, a sentence or two long")  # fmt: skip


def trial(log: OldLog | EventLog, runs: int, pause: float) -> tuple[float, float, float]:
    """Seconds for ``runs`` runs: the caller's CPU, the caller's wall time in ``emit`` (a wait for the
    writer's lock or the GIL counts), and the process's CPU until every event is written."""
    thread, process, inside = time.thread_time(), time.process_time(), 0.0
    for i in range(runs):
        started = time.perf_counter()
        one_run(log.emit, i)
        inside += time.perf_counter() - started
        if pause:
            time.sleep(pause)
    caller = time.thread_time() - thread
    log.flush()
    total = time.process_time() - process
    log.close()
    return caller, inside, total


def sleeps(runs: int, pause: float) -> tuple[float, float, float]:
    """What the suite pacing's sleeps alone cost the caller and the process."""
    thread, process = time.thread_time(), time.process_time()
    for _ in range(runs):
        time.sleep(pause)
    return time.thread_time() - thread, 0.0, time.process_time() - process


Figures = tuple[float, float, float]
"""Per event, in µs: the caller's CPU, the caller's wall time in ``emit``, the process's CPU."""


def measure(folder: Path, runs: int, pause: float, repeat: int) -> dict[str, Figures]:
    """The old way's figures and the new's, trials alternated, each the median of ``repeat``."""
    seen: dict[str, list[Figures]] = {"old": [], "new": []}
    for n in range(repeat):
        base = sleeps(runs, pause) if pause else (0.0, 0.0, 0.0)
        for name, make in (("old", OldLog), ("new", EventLog)):
            got = trial(make(folder / f"{name}-{pause}-{n}.jsonl"), runs, pause)
            a, b, c = ((x - y) / (3 * runs) * 1e6 for x, y in zip(got, base, strict=True))
            seen[name].append((a, b, c))
    return {
        name: (
            statistics.median(f[0] for f in got),
            statistics.median(f[1] for f in got),
            statistics.median(f[2] for f in got),
        )
        for name, got in seen.items()
    }


def delays(folder: Path, count: int) -> list[float]:
    """Milliseconds from an emit to the file's growth, one event every 20 ms."""
    path = folder / ("delay-" + EVENTS_FILE)
    log = EventLog(path)
    got: list[float] = []
    for i in range(count):
        size = path.stat().st_size if path.exists() else 0
        started = time.perf_counter()
        log.emit("graded", run=f"r{i}", machine="bench", score=1.0, passed=True)
        while (path.stat().st_size if path.exists() else 0) == size:
            time.sleep(0.0002)
        got.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)
    log.close()
    return got


def show(title: str, figures: dict[str, Figures]) -> None:
    old, new = figures["old"], figures["new"]
    print(title)
    rows = (
        ("caller's CPU per emit", 0, 0.1),
        ("caller's wall per emit", 1, None),
        ("process CPU per event", 2, 1.0),
    )
    for label, i, target in rows:
        ratio = new[i] / old[i]
        verdict = (
            "" if target is None else f" (target <= {target:.2f}: {'met' if ratio <= target else 'MISSED'})"
        )
        print(f"  {label:23} old {old[i]:6.2f} µs   new {new[i]:6.2f} µs   new/old {ratio:.2f}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 events tight, 300 runs paced, 3 trials")
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.quick:
        args.events, args.runs, args.repeat = 10_000, 300, 3
    OUT.mkdir(exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.2f}, window {events.WINDOW_S * 1000:.0f} ms")
    with tempfile.TemporaryDirectory(dir=OUT) as scratch:
        folder = Path(scratch)
        tight = measure(folder, args.events // 3, 0.0, args.repeat)
        show(f"tight: {args.events // 3 * 3:,} events back to back", tight)
        paced = measure(folder, args.runs, 0.001, args.repeat)
        show(f"suite: {args.runs:,} runs of 3 events, 1 ms apart", paced)
        seen = delays(folder, 20 if args.quick else 50)
        median = statistics.median(seen)
        target = events.WINDOW_S * 1000 + 5
        print(f"in the file after: median {median:.1f} ms, max {max(seen):.1f} ms "
              f"(target: median <= {target:.0f} ms: {'met' if median <= target else 'MISSED'})")  # fmt: skip


if __name__ == "__main__":
    main()
