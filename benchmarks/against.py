"""This tree against an earlier git revision, side by side in one run: the start-up of ``machine --help`` and
``machine list``, ``machine serve``'s cold start to ``initialize``, and a suite's cost per run.

The revision is exported (``git worktree``) into a temporary folder and installed into a virtual
environment of its own, offline (``pip install --no-index -e``, from what this machine already has; the
first run takes a minute or two). Every figure alternates the two commands, so a busy machine slows both
alike. Start-up is timed as wall and CPU time (user + system) of fresh processes; the per-run cost is the
wall time of an echo-harness suite of N cases minus that of one case, divided by N - 1. Where valgrind is
installed, each is also counted in instructions (``--tool=callgrind``), which repeat exactly from run to
run: the figure to trust on a noisy machine. Bytecode is written and used (``PYTHONDONTWRITEBYTECODE`` is
cleared), as a person's installation does. Target: no figure worse than the revision's. Asserts nothing.

    .venv/bin/python benchmarks/against.py [REV] [--runs 20] [--cases 2000] [--no-valgrind]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import startup  # noqa: E402  (the start-up benchmark's workspace of five machines)
import vs_inspect  # noqa: E402  (the suite benchmark's machine)

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "0"},
        },
    }
)


def install(rev: str, into: Path) -> Path:
    """The revision's ``machine`` command, in a worktree and virtual environment under ``into``."""
    tree = into / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
        check=True,
        capture_output=True,
    )
    subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
    pip = [str(tree / ".venv" / "bin" / "pip"), "install", "-q", "--no-deps", "-e", f"{tree}[mcp]"]
    subprocess.run(pip, check=True, capture_output=True)
    # Its dependencies are this environment's own: the same versions on both sides.
    site = next((tree / ".venv" / "lib").glob("python*/site-packages"))
    ours = next(p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_dir())
    (site / "_against_deps.pth").write_text(f"{ours}\n")
    return tree / ".venv" / "bin" / "machine"


def cpu_and_wall(argv: list[str], stdin: str | None = None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=ENV, input=stdin, capture_output=True, text=True, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def instructions(argv: list[str], stdin: str | None = None) -> int:
    """Instructions the command executes: its console script run by its own environment's python."""
    python = str(Path(argv[0]).parent / "python")
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, *argv],
        env=ENV,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))  # type: ignore[union-attr]


def suite_workspace(root: Path, cases: int) -> Path:
    folder = root / "machines" / "bench"
    folder.mkdir(parents=True)
    (folder / "rubric.py").write_text(vs_inspect.RUBRIC_PY)
    (folder / "machine.py").write_text(vs_inspect.MACHINE_PY)
    rows = [{"id": f"c{i}", "input": f"hello {i}", "target": f"hello {i}"} for i in range(cases)]
    (folder / "cases.json").write_text(json.dumps(rows))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rev", nargs="?", default="HEAD~1")
    parser.add_argument("--runs", type=int, default=20, help="fresh processes per command and side")
    parser.add_argument("--cases", type=int, default=2000, help="cases of the per-run suite")
    parser.add_argument("--no-valgrind", action="store_true")
    options = parser.parse_args()
    counting = not options.no_valgrind and shutil.which("valgrind") is not None
    with tempfile.TemporaryDirectory(prefix="machine-against-") as temp:
        base = Path(temp)
        try:
            sides = {options.rev: str(install(options.rev, base)), "this tree": startup.machine_command()}
            report(sides, base, options.runs, options.cases, counting)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base / "tree")], check=False
            )


def report(sides: dict[str, str], base: Path, runs: int, cases: int, counting: bool) -> None:
    machines = base / "machines-ws"
    startup.make_workspace(machines)
    one, many = suite_workspace(base / "one", 1), suite_workspace(base / "many", cases)
    commands = {
        "machine --help": (["--help"], None),
        "machine list (5 machines)": (["list", "--workspace", str(machines)], None),
        "machine serve to initialize": (["serve", "--workspace", str(machines)], INITIALIZE + "\n"),
    }
    print(f"{' / '.join(sides)}; {runs} fresh processes each, alternated; medians (min)")
    for label, (args, stdin) in commands.items():
        timed: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
        for command in sides.values():
            cpu_and_wall([command, *args], stdin)  # bytecode written once, not counted
        for i in range(runs):
            for side in list(sides) if i % 2 == 0 else list(reversed(list(sides))):
                timed[side].append(cpu_and_wall([sides[side], *args], stdin))
        for side, figures in timed.items():
            walls, cpus = [w for w, _ in figures], [c for _, c in figures]
            counted = (
                f"  {instructions([sides[side], *args], stdin) / 1e6:,.0f}M instructions" if counting else ""
            )
            print(
                f"  {label:<28} {side:<10} wall {statistics.median(walls):6.1f} ms ({min(walls):.1f})  "
                f"cpu {statistics.median(cpus):6.1f} ms ({min(cpus):.1f}){counted}"
            )
    per_run(sides, one, many, cases, max(3, runs // 4), counting)


def per_run(sides: dict[str, str], one: Path, many: Path, cases: int, reps: int, counting: bool) -> None:
    print(f"suite cost per run: echo harness, 1 case against {cases} cases, {reps} suites each, alternated")
    walls: dict[tuple[str, Path], list[float]] = {(side, ws): [] for side in sides for ws in (one, many)}
    for i in range(reps):
        for side in list(sides) if i % 2 == 0 else list(reversed(list(sides))):
            for ws in (one, many):
                walls[(side, ws)].append(cpu_and_wall(suite(sides[side], ws))[0])
    for side, command in sides.items():
        small, big = statistics.median(walls[(side, one)]), statistics.median(walls[(side, many)])
        counted = ""
        if counting:
            counts = [instructions(suite(command, ws)) for ws in (one, many)]
            counted = f"  {(counts[1] - counts[0]) / (cases - 1) / 1e3:,.1f}K instructions per run"
        print(f"  {side:<10} {(big - small) / (cases - 1):.3f} ms per run{counted}")


def suite(command: str, ws: Path) -> list[str]:
    """A fresh suite of the bench machine in ``ws`` (its store removed first)."""
    shutil.rmtree(ws / ".machine", ignore_errors=True)
    return [command, "suite", "bench", "--harness", "echo", "--workspace", str(ws), "--concurrency", "4"]


if __name__ == "__main__":
    main()
