"""Sandbox costs: creating and removing a run's sandbox, and our overhead on one isolated command.

- **create + remove**: ``LocalSandbox.create()`` then ``remove()``, of an empty sandbox and of one seeded
  with 5 small starting files (two of them in subfolders); the median of N (500) of each.
  Target: a median of 5 ms or less.
- **one isolated command**: ``await sandbox.exec(["true"])`` (our wall time: building the command
  line and the cgroups, starting bubblewrap, draining its output, the kill and the reap) against a bare
  ``subprocess.run`` of the very same ``bwrap ... true`` command line, alternated in one loop so both
  see the same machine; the median of M (200) of each, and our overhead = ours − bare, both as the
  difference of the medians and as the median of the pairwise differences. Target: 3 ms or less by
  both, in one run. The shell form, ``exec("true")`` against ``bwrap ... sh -c true``, is printed too.

The first sandbox of the process pays the one-time check that bubblewrap works (its figure is printed
apart); the timed loops come after it. The script prints figures and asserts nothing.

    .venv/bin/python benchmarks/sandbox.py            # 500 and 200 repetitions
    .venv/bin/python benchmarks/sandbox.py --quick    # 100 and 50
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine.sandboxes import ExecResult, LocalSandbox, bubblewrap  # noqa: E402

CREATE_TARGET_MS = 5.0
OVERHEAD_TARGET_MS = 3.0
FILES = {
    "README.md": "# a small project\n",
    "main.py": "print('hello')\n",
    "src/pkg/__init__.py": "",
    "src/pkg/mod.py": "def f(x):\n    return x + 1\n",
    "tests/test_mod.py": "from pkg.mod import f\n\n\ndef test_f():\n    assert f(1) == 2\n",
}


def ms(seconds: Sequence[float]) -> str:
    ordered = sorted(seconds)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (
        f"median {statistics.median(ordered) * 1e3:7.3f} ms   "
        f"min {ordered[0] * 1e3:7.3f}   p90 {p90 * 1e3:7.3f}"
    )


def verdict(value_ms: float, target_ms: float) -> str:
    return f"{'meets' if value_ms <= target_ms else 'MISSES'} the target of <= {target_ms:g} ms"


def time_create_remove(root: Path, files: dict[str, str] | None, repeats: int) -> list[float]:
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        box = LocalSandbox.create(root, f"run-{i}", files)
        box.remove()
        times.append(time.perf_counter() - started)
    return times


async def time_exec(
    box: LocalSandbox, ours: Callable[[], Awaitable[ExecResult]], command: list[str], repeats: int
) -> tuple[list[float], list[float]]:
    """Ours and bare, alternated; each result is checked so that a failing command cannot look fast."""
    bare_argv = box.command_line(command)
    mine, bare = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        result = await ours()
        mine.append(time.perf_counter() - started)
        assert result.ok, result
        started = time.perf_counter()
        done = subprocess.run(bare_argv, cwd=box.path, capture_output=True, stdin=subprocess.DEVNULL)
        bare.append(time.perf_counter() - started)
        assert done.returncode == 0, done
    return mine, bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 create/remove and 50 commands")
    args = parser.parse_args()
    create_n, exec_n = (100, 50) if args.quick else (500, 200)

    with tempfile.TemporaryDirectory(prefix="machine-bench-sandbox-") as tmp:
        root = Path(tmp) / "sandboxes"
        started = time.perf_counter()
        found = bubblewrap()
        first = LocalSandbox.create(root, "first")
        first.remove()
        once = (time.perf_counter() - started) * 1e3
        print(f"first sandbox of the process (checks once that bubblewrap works): {once:.1f} ms")
        print(f"bubblewrap: {found or 'not available: commands are not isolated'}")
        print()

        time_create_remove(root, FILES, 20)  # warm the file system's caches
        print(f"create + remove, median of {create_n}")
        empty = time_create_remove(root, None, create_n)
        seeded = time_create_remove(root, FILES, create_n)
        for label, times in (("empty sandbox", empty), ("with 5 small files", seeded)):
            print(f"  {label:24} {ms(times)}   {verdict(statistics.median(times) * 1e3, CREATE_TARGET_MS)}")
        print()

        if found is None:
            print("one isolated command: skipped, bubblewrap does not work here")
            return
        box = LocalSandbox.create(root, "exec")

        async def run() -> None:
            for _ in range(10):  # warm-up: imports, the event loop's child watcher, page cache
                await box.exec(["true"])
                subprocess.run(box.command_line(["true"]), capture_output=True, check=True)
            pairs = [
                ('exec(["true"])', ["true"], lambda: box.exec(["true"])),
                ('exec("true")', ["sh", "-c", "true"], lambda: box.exec("true")),
            ]
            print(f"one isolated command, median of {exec_n} (ours and bare bwrap alternated)")
            for label, command, ours in pairs:
                mine, bare = await time_exec(box, ours, command, exec_n)
                overhead = statistics.median(mine) * 1e3 - statistics.median(bare) * 1e3
                paired = statistics.median(m - b for m, b in zip(mine, bare, strict=True)) * 1e3
                print(f"  ours  {label:24} {ms(mine)}")
                print(f"  bare  {'bwrap ... ' + ' '.join(command):24} {ms(bare)}")
                print(
                    f"  our overhead on one isolated command: {overhead:6.3f} ms as the difference of "
                    f"medians, {paired:6.3f} ms as the median of pairwise differences   "
                    f"{verdict(max(overhead, paired), OVERHEAD_TARGET_MS)}"
                )
            bwrap_args = len(box.command_line(["true"])) - 2
            print(f"  (bwrap gets {bwrap_args} arguments: its system mounts, /work, the environment)")

        anyio.run(run)
        box.remove()


if __name__ == "__main__":
    main()
