"""How long importing 10,000 samples takes beside storing 10,000 runs as a suite stores them.

Storing: 10,000 small runs (a question, a tool call and its result, an answer) made in memory and written
with ``put_many`` in batches, as a suite writes its runs. Importing: the same conversations as a chat JSONL
file (the rows an export writes), read, checked, redacted and stored by ``import_runs``. Each in a fresh
workspace in a temporary folder, the two alternating for ``--rounds`` rounds; prints the medians and
their ratio beside the target. Asserts nothing.

    .venv/bin/python benchmarks/import_runs.py [--samples 10000] [--batch 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.import_files import workspace

from machine.ops import import_runs
from machine.runs import Message, Run, ToolCall, Usage, to_openai

TARGET_RATIO = 2.0


def messages(i: int) -> list[Message]:
    question = f"Please shout sample number {i} back at me, with the tool if it helps."
    return [
        Message(role="user", content=question),
        Message(
            role="assistant", tool_calls=[ToolCall(id="call_1", name="shout", arguments={"text": question})]
        ),
        Message(role="tool", content=question.upper(), tool_call_id="call_1", name="shout"),
        Message(role="assistant", content=question.upper()),
    ]


def run_of(i: int) -> Run:
    said = messages(i)
    return Run(
        machine="shout",
        model="teacher",
        harness="openai",
        instructions="Repeat the input in capitals.",
        input=said[0].content,
        trajectory=said,
        output=said[-1].content,
        usage=Usage(input_tokens=120, output_tokens=40),
        case_id=f"case-{i}",
        trial=1,
    )


def stored(root: Path, samples: int, batch: int) -> float:
    ws = workspace(root)
    ws.store.count()  # the store opened before the clock starts, as a suite's is
    start = time.perf_counter()
    for first in range(0, samples, batch):
        ws.store.put_many(run_of(i) for i in range(first, min(first + batch, samples)))
    took = time.perf_counter() - start
    assert ws.store.count() == samples
    return took


def imported(root: Path, samples: int) -> float:
    ws = workspace(root)
    ws.store.count()
    path = root / "samples.jsonl"
    with path.open("w") as handle:
        for i in range(samples):
            run = run_of(i)
            row = {"messages": to_openai(run.instructions, run.trajectory, send_reasoning=True)}
            row["metadata"] = {"model": run.model, "case_id": run.case_id, "trial": run.trial}
            handle.write(json.dumps(row) + "\n")
    start = time.perf_counter()
    report = import_runs(ws, "shout", path)
    took = time.perf_counter() - start
    assert report.runs == samples and ws.store.count() == samples
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    stores: list[float] = []
    imports: list[float] = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as folder:
            stores.append(stored(Path(folder) / "suite", args.samples, args.batch))
            imports.append(imported(Path(folder) / "import", args.samples))
    store_s, import_s = statistics.median(stores), statistics.median(imports)
    ratio = import_s / store_s
    rounds = f"(median of {args.rounds})"
    print(
        f"storing {args.samples:,} runs as a suite does (put_many, batches of {args.batch}): "
        f"{store_s:7.2f} s {rounds}"
    )
    said = f"importing {args.samples:,} samples from chat JSONL (import_runs):"
    print(f"{said:<66}{import_s:7.2f} s {rounds}")
    verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
    print(f"ratio {ratio:.2f}x   target <= {TARGET_RATIO:.0f}x  {verdict}")


if __name__ == "__main__":
    main()
