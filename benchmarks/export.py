"""How long ``machine export`` takes on 100,000 stored runs, and whether its memory stays flat.

For each size, a fresh workspace in a temporary folder gets one machine with a tool and a check grader,
and its store is filled with that many small graded runs (a question, a tool call with reasoning, the tool's
result, an answer; three in five score 1, the rest 0.5, one in fifty is marked bad) with ``put_many``.
A fresh process then runs ``export`` at ``--min-score 1`` and reports its wall and CPU time and its peak
RSS (``ru_maxrss``), beside its RSS before the export began, and the load average (wall time means little
on a busy machine). Filling is not timed. Asserts nothing.

    .venv/bin/python benchmarks/export.py [--sizes 10000,100000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from machine.runs import Run

TARGET_S = 10.0
START = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ["the", "a", "sum", "tool", "file", "answer", "check", "result", "short", "value", "number", "run"]

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"right": "The answer is right."})
"""

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, tool

from .rubric import rubric


@tool
def read_file(path: str) -> str:
    \"\"\"Read a file of the sandbox.\"\"\"
    return path


machine = define_machine(
    name="bench",
    intent="Answer questions about the files.",
    instructions="Answer the question in one short paragraph. Use the tools when a file is needed.",
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"right": check("right", lambda run: True)}),
    tools=[read_file],
)
"""


def write_workspace(root: Path) -> None:
    folder = root / "machines" / "bench"
    folder.mkdir(parents=True)
    (folder / "rubric.py").write_text(RUBRIC_PY, encoding="utf-8")
    (folder / "machine.py").write_text(MACHINE_PY, encoding="utf-8")


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def runs_to_fill(total: int, fingerprint: str) -> Iterator[Run]:
    from machine.runs import CriterionScore, Message, Run, Scorecard, Tag, Timings, ToolCall, Usage

    rng = random.Random(7)
    at = START
    for index in range(total):
        at += timedelta(milliseconds=rng.randint(1, 60_000))
        question, answer = text(rng, 30), text(rng, 40)
        call = ToolCall(id="call_0_0", name="read_file", arguments={"path": "notes.txt"})
        score = 1.0 if rng.random() < 0.6 else 0.5
        yield Run(
            id=at.strftime("%Y%m%d-%H%M%S-") + f"{index:016x}",
            machine="bench",
            version="v1",
            model="Qwen/Qwen3.8-27B",
            harness="chat",
            instructions="Answer the question in one short paragraph. Use the tools when a file is needed.",
            input=question,
            trajectory=[
                Message(role="user", content=question),
                Message(role="assistant", reasoning=text(rng, 25), tool_calls=[call]),
                Message(role="tool", content=text(rng, 20), tool_call_id="call_0_0", name="read_file"),
                Message(role="assistant", content=answer, reasoning=text(rng, 10)),
            ],
            output=answer,
            usage=Usage(input_tokens=rng.randint(300, 2000), output_tokens=rng.randint(20, 300)),
            timings=Timings(started_at=at, finished_at=at + timedelta(seconds=3)),
            case_id=f"case-{index % 500}",
            trial=index // 500,
            scorecard=Scorecard(
                rubric_fingerprint=fingerprint,
                criteria={
                    "right": CriterionScore(criterion="right", weight=1.0, grader="check:right", score=score)
                },
            ),
            tags=[Tag(kind="bad")] if index % 50 == 0 else [],
        )


def fill(root: Path, total: int) -> None:
    from machine import Workspace

    write_workspace(root)
    ws = Workspace(root)
    fingerprint = ws.load("bench").rubric.fingerprint
    batch: list[Run] = []
    for run in runs_to_fill(total, fingerprint):
        batch.append(run)
        if len(batch) == 2000:
            ws.store.put_many(batch)
            batch.clear()
    ws.store.put_many(batch)


def measure(root: Path) -> None:
    """Export once in this fresh process; print the figures as JSON."""
    from machine import Workspace
    from machine.learn import export

    ws = Workspace(root)
    ws.load("bench")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start, cpu = time.perf_counter(), time.process_time()
    report = export(ws, "bench", out=root / "out.jsonl")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = (root / "out.jsonl").stat().st_size
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": cpu,
                "before_kib": before,
                "peak_kib": peak,
                "rows": report.rows,
                "stored": report.stored,
                "bytes": size,
            }
        )
    )


def child(*args: str) -> str:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 runs")
    parser.add_argument("--fill", nargs=2, metavar=("ROOT", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--measure", metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        fill(Path(args.fill[0]), int(args.fill[1]))
        return
    if args.measure:
        measure(Path(args.measure))
        return
    sizes = [1000, 10_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    results = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            child("--fill", folder, str(size))
            filled = time.perf_counter() - start
            results[size] = json.loads(child("--measure", folder))
            print(f"filled {size:,} runs in {filled:.1f} s (not counted)", file=sys.stderr)
    print(f"{'stored runs':<28}" + "".join(f"{size:>14,}" for size in sizes))
    print(f"{'rows written':<28}" + "".join(f"{results[s]['rows']:>14,}" for s in sizes))
    print(f"{'export wall time (s)':<28}" + "".join(f"{results[s]['seconds']:>14.2f}" for s in sizes))
    print(f"{'export CPU time (s)':<28}" + "".join(f"{results[s]['cpu_seconds']:>14.2f}" for s in sizes))
    print(
        f"{'RSS before export (MiB)':<28}"
        + "".join(f"{results[s]['before_kib'] / 1024:>14.1f}" for s in sizes)
    )
    print(f"{'peak RSS (MiB)':<28}" + "".join(f"{results[s]['peak_kib'] / 1024:>14.1f}" for s in sizes))
    print(f"{'file (MiB)':<28}" + "".join(f"{results[s]['bytes'] / 2**20:>14.1f}" for s in sizes))
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    largest = max(sizes)
    took = results[largest]["seconds"]
    verdict = "met" if took <= TARGET_S else "MISSED"
    print(f"target: {largest:,} runs in <= {TARGET_S:.0f} s: {took:.2f} s, {verdict}")
    growth = (results[largest]["peak_kib"] - results[min(sizes)]["peak_kib"]) / 1024
    print(
        f"target: memory flat in the number of runs: peak grows {growth:+.1f} MiB"
        f" from {min(sizes):,} to {largest:,} runs"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
