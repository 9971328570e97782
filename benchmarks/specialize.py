"""``specialize dev`` with 12 cases through an author that answers at once: our own time, and where it goes.

In a fresh temporary workspace holding copies of this repository's ``dev`` and ``coder`` machines, the
scripted harness plays both sides: the author (its rules come first; each brief says what it asks for)
writes a child ``dev/edge`` graded with hidden tests, a topic list, and 12 project cases a reply of four,
each with a reference fix and one hidden test; dev's own script makes its three sample runs (dev has no
stored runs there). Every model reply is instant, so the wall time is ours: the sample runs, loading the
child and trying its checks in a process of its own, and checking each case for real, its tests and its
hidden test before and after the fix, each in a bubblewrap sandbox like a run's.

Target: <= 15 s, most of it the sandboxed case checks. Prints the split next to it; asserts nothing.

Then one vetting of that child on its own, as specialize does it (in a bubblewrap sandbox that shows only
the interpreter, the library and a copy of the machines), side by side with its anchor: the same vetting
process started as a plain subprocess, as vetting was before it was sandboxed. Target: <= 1.3x the anchor.

    .venv/bin/python benchmarks/specialize.py [--cases 12] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from machine import open_workspace
from machine.learn import Specialization, specialize
from machine.learn.specialize.vetting import vet_child
from machine.sandboxes import LocalSandbox, bubblewrap

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 15.0
VET_TARGET = 1.3
CHILD = '''\
"""dev/edge: fixes that hold on the edge cases too."""

from machine import define_child, define_evaluator, instructions_from
from machine.sandboxes import hidden_tests

from ..machine import machine as parent
from .rubric import rubric

machine = define_child(
    parent,
    name="dev/edge",
    intent="Fix bugs so that the edge cases pass too, not only the tests in view.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"edge_cases": hidden_tests(__file__)}),
)
'''
RUBRIC = """\
from machine import define_rubric

rubric = define_rubric(
    {"edge_cases": {"description": "Held-back edge-case tests pass on the files it left.", "weight": 1}}
)
"""
TEST = (
    "import unittest\n\nfrom calc import {name}\n\n\nclass T(unittest.TestCase):\n"
    "    def test_it(self):\n        self.assertEqual({name}({x}), {want})\n"
)
VETTING = "machine.learn.specialize.vetting._main"


def case(k: int) -> dict[str, Any]:
    """A project whose ``scale_k`` triples where it should double, plus ``k``: its test and hidden test
    fail before the fix and pass after it."""
    name = f"scale_{k}"
    return {
        "id": f"scale-{k}",
        "input": f"The tests fail. Please fix {name} in calc.py so that it doubles and adds {k}.",
        "kind": "fix",
        "files": {
            "calc.py": f"def {name}(x):\n    return x * 3 + {k}\n",
            "test_calc.py": TEST.format(name=name, x=2, want=4 + k),
        },
        "tests": "python3 -m unittest",
        "reference": [{"path": "calc.py", "old": "x * 3", "new": "x * 2"}],
        "hidden": {"test_edge_calc.py": TEST.format(name=name, x=-3, want=-6 + k)},
    }


def script(count: int) -> dict[str, Any]:
    written = child_files()
    child = "\n".join(f'<file path="{path}">\n{text}</file>' for path, text in written.items())
    topics = "".join(f"<topic>slip {k}</topic>" for k in range(count))
    batches = [
        {
            "match": f"(?s)Write \\d+ cases for dev/edge.*slip {start}\\b",
            "turns": [
                {"text": "".join(f"<case>{json.dumps(case(k))}</case>" for k in range(start, start + 4))}
            ],
        }
        for start in range(0, count, 4)
    ]
    author = [
        {"match": "Write the child machine 'dev/edge'", "turns": [{"text": child}]},
        {"match": r"List \d+ different situations", "turns": [{"text": topics}]},
        *batches,
    ]
    dev = json.loads((REPO / "machines" / "dev" / "script.json").read_text(encoding="utf-8"))["rules"]
    return {"rules": author + dev}


def child_files() -> dict[str, str]:
    return {"machine.py": CHILD, "rubric.py": RUBRIC, "instructions.md": "Test the edges.\n"}


def workspace(scratch: str) -> Path:
    root = Path(scratch)
    for name in ("dev", "coder"):
        shutil.copytree(REPO / "machines" / name, root / "machines" / name)
    return root


def vet_sandboxed(root: Path) -> float:
    """One vetting of dev/edge as specialize does it: in a library sandbox."""
    started = time.monotonic()
    vetting = anyio.run(
        lambda: vet_child(root, "dev", "edge", child_files(), model=None, samples=[], sandboxes=LocalSandbox)
    )
    assert vetting.ok, vetting.problems
    return time.monotonic() - started


def vet_plain(root: Path) -> float:
    """The anchor: the same vetting process on the same copy and request, started as a plain subprocess."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="machine-vet-") as temporary:
        folder = Path(temporary)
        shutil.copytree(root / "machines", folder / "machines")
        (folder / "machines" / "dev" / "edge").mkdir()
        for name, text in child_files().items():
            (folder / "machines" / "dev" / "edge" / name).write_text(text, encoding="utf-8")
        request = {
            "parent": "dev",
            "slug": "edge",
            "model": None,
            "machines": str(folder / "machines"),
            "samples": [],
            "check_s": 10.0,
            "deadline": time.time() + 60,
            "memory_bytes": 4 * 1024**3,
        }
        (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-P", "-m", VETTING, str(folder / "request.json")],
            cwd=folder, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, timeout=60,
            check=True,
        )  # fmt: skip
        assert b'"ok": true' in done.stdout, done.stdout[-500:]
    return time.monotonic() - started


def vetting_side_by_side(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = workspace(scratch)
        vet_sandboxed(root), vet_plain(root)  # warm-up
        sandboxed = statistics.median(vet_sandboxed(root) for _ in range(repeats))
        plain = statistics.median(vet_plain(root) for _ in range(repeats))
    print(
        f"one vetting of dev/edge (median of {repeats}): in the sandbox {sandboxed:.2f} s, as a plain "
        f"process (the anchor) {plain:.2f} s: {sandboxed / plain:.2f}x   target <= {VET_TARGET:g}x"
    )


def once(count: int) -> tuple[float, Specialization]:
    with tempfile.TemporaryDirectory() as scratch:
        root = workspace(scratch)
        (root / "script.json").write_text(json.dumps(script(count)), encoding="utf-8")
        ws = open_workspace(root, harness="scripted", script=root / "script.json")
        started = time.monotonic()
        report = anyio.run(lambda: specialize(ws, "dev", focus="edge cases", slug="edge", cases=count))
        return time.monotonic() - started, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"bubblewrap: {'isolated' if bubblewrap() else 'NOT available: cases run unisolated'}")
    once(4)  # warm-up: imports, the first sandbox
    rows = [once(args.cases) for _ in range(args.repeats)]
    walls = [wall for wall, _ in rows]
    wall, report = sorted(rows, key=lambda row: row[0])[len(rows) // 2]
    kept = report.kept_cases + report.holdout_cases
    vetting = sum(a.seconds for a in report.attempts)
    print(
        f"specialize dev, {args.cases} cases, instant author ({args.repeats} runs): median "
        f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f})   "
        f"target <= {TARGET_S:.0f} s"
    )
    print(
        f"  kept {kept} cases ({report.kept_cases} + {report.holdout_cases} held out), hidden tests "
        f"for {report.hidden_cases}"
    )
    rest = wall - report.check_seconds - vetting
    print(
        f"  split of the median run ({wall:.2f} s): case checks {report.check_seconds:.2f} s "
        f"({report.check_seconds / wall:.0%}), child loaded and checked in its sandbox {vetting:.2f} s "
        f"({vetting / wall:.0%}), the rest (3 sample runs, briefs, writing) {rest:.2f} s ({rest / wall:.0%})"
    )
    vetting_side_by_side(max(args.repeats, 5))


if __name__ == "__main__":
    main()
