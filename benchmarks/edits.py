"""What the question about changes costs when it is not asked: the file tools' write_file and edit_file
called on a person's project folder (a ``LocalSandbox.open``, as ``machine run`` in a project uses) with
no gate (a fresh sandbox; the anchor), with the gate in ``auto`` mode (``--edits auto``: the tools take
the same path, nothing shown or kept), and, for comparison, in ``ask`` mode answered yes at once by a
program (the diff worked out, the write made atomically, the decision kept). Each figure is the median
over ROUNDS rounds, taken in turn, of the median of a round's calls (a write and an edit of a 200-line
file in turn; CALLS in all), in microseconds a call, side by side.
Target: ``auto`` within 1.05x the anchor.

Prints figures and asserts nothing. ``.venv/bin/python benchmarks/edits.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from machine.runs import EditAnswer, EditGate, EditProposal, ToolContext
from machine.sandboxes import LocalSandbox
from machine.sandboxes.tools import edit_file, write_file

TARGET = 1.05
ROUNDS = 10
LINES = "".join(f"line {i}: some text of the file\n" for i in range(200))


async def yes(_: EditProposal) -> EditAnswer:
    return EditAnswer("yes")


async def timed(folder: Path, gate: EditGate | None, calls: int) -> float:
    """The median microseconds of a write_file and an edit_file call on ``folder``."""
    sandbox = LocalSandbox.open(folder)
    ctx = ToolContext(run_id="bench", sandbox=sandbox, edits=gate)
    seconds: list[float] = []
    for i in range(calls):
        began = time.perf_counter()
        await write_file.invoke({"path": "app.py", "content": LINES}, ctx)
        await edit_file.invoke({"path": "app.py", "old": "line 100:", "new": f"line {i}!"}, ctx)
        seconds.append((time.perf_counter() - began) / 2)
        if gate is not None:
            gate.take()  # as the loop does after each call
    return statistics.median(seconds) * 1e6


async def main_async(calls: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        rounds: dict[str, list[float]] = {"none": [], "auto": [], "ask": []}
        await timed(folder, None, calls // ROUNDS)  # warms the caches
        for _ in range(ROUNDS):  # in turn, so that a drift of the machine falls on each alike
            rounds["none"].append(await timed(folder, None, calls // ROUNDS))
            rounds["auto"].append(await timed(folder, EditGate("auto"), calls // ROUNDS))
            rounds["ask"].append(await timed(folder, EditGate("ask", yes), calls // ROUNDS))
        figures = {name: statistics.median(found) for name, found in rounds.items()}
    anchor = figures["none"]
    print(f"{'gate':>24}  {'µs a call':>10}  {'/ anchor':>9}")
    for name, said in (
        ("none (fresh sandbox)", "none"),
        ("auto (--edits auto)", "auto"),
        ("ask, a program says yes", "ask"),
    ):
        print(f"{name:>24}  {figures[said]:>10.1f}  {figures[said] / anchor:>8.2f}x")
    print(
        f"\n--edits auto costs {figures['auto'] / anchor:.2f}x a call with no gate (target <= {TARGET:g}x); "
        f"asking (answered at once) {figures['ask'] / anchor:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000)
    args = parser.parse_args()
    anyio.run(main_async, args.calls)


if __name__ == "__main__":
    main()
