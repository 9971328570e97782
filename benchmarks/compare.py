"""``compare`` with 50 cases x 5 trials through the scripted harness: wall time in total.

A fresh git repository in a temporary folder holds one machine (one check criterion) committed once,
with its instructions changed in the working tree afterwards, and a script that answers each of the 50
cases. ``compare`` then exports the machine at HEAD from git, runs both versions interleaved (500 runs),
grades every run with the current evaluator, writes them all to a real SQLite store and pairs the
scores by case. Timed twice: the library call in this process (``Workspace`` + ``compare``), and the
``machine compare --json`` command as a fresh process (interpreter start and imports included).
Target: <= 2 s wall in total. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/compare.py [--cases 50] [--trials 5] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from machine import open_workspace
from machine.clients.scripted import ScriptedHarness, load_script
from machine.measure import compare

TARGET_S = 2.0

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, instructions_from

rubric = define_rubric({"agrees": "The reply is yes."})

machine = define_machine(
    name="bench",
    intent="Answer yes or no.",
    instructions=instructions_from(__file__),
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"agrees": check("yes", lambda run: run.output == "yes")}),
)
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=root,
        check=True,
        capture_output=True,
    )


def make_repo(root: Path, cases: int) -> Path:
    folder = root / "machines" / "bench"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY, encoding="utf-8")
    (folder / "instructions.md").write_text("Answer.", encoding="utf-8")
    ids = [f"c{i:03d}" for i in range(cases)]
    (folder / "cases.json").write_text(
        json.dumps([{"id": i, "input": f"case {i}"} for i in ids]), encoding="utf-8"
    )
    (root / ".gitignore").write_text(".machine/\n__pycache__/\nscript.json\n", encoding="utf-8")
    rules = [
        {"match": f"case {i}$", "turns": [{"text": "yes" if n % 2 else "no"}]} for n, i in enumerate(ids)
    ]
    script = root / "script.json"
    script.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "bench")
    (folder / "instructions.md").write_text("Answer, briefly.", encoding="utf-8")  # B differs from A
    return script


def library(root: Path, script: Path, trials: int, concurrency: int) -> tuple[float, int]:
    start = time.perf_counter()
    ws = open_workspace(root, harness=ScriptedHarness(load_script(script)))
    report = anyio.run(lambda: compare(ws, "bench", trials=trials, concurrency=concurrency))
    wall = time.perf_counter() - start
    return wall, report.a.runs + report.b.runs


def command(root: Path, script: Path, trials: int, concurrency: int) -> tuple[float, int]:
    machine = Path(sys.executable).parent / "machine"
    args = [str(machine), "compare", "bench", "--trials", str(trials), "--concurrency", str(concurrency)]
    args += ["--json", "--harness", "scripted", "--script", str(script), "--workspace", str(root)]
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"machine compare failed: {done.stderr.strip()}")
    report = json.loads(done.stdout)
    return wall, report["a"]["runs"] + report["b"]["runs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as temp:
        root = Path(temp) / "lib"
        root.mkdir()
        script = make_repo(root, args.cases)
        wall, runs = library(root, script, args.trials, args.concurrency)
        print(
            f"compare, library call: {args.cases} cases x {args.trials} trials x 2 versions = {runs} runs "
            f"in {wall:.2f} s wall (target <= {TARGET_S:.0f} s): {'ok' if wall <= TARGET_S else 'OVER'}"
        )
        root = Path(temp) / "cli"
        root.mkdir()
        script = make_repo(root, args.cases)
        wall, runs = command(root, script, args.trials, args.concurrency)
        print(
            f"compare, `machine compare --json` as a fresh process: {runs} runs in {wall:.2f} s wall "
            f"(target <= {TARGET_S:.0f} s): {'ok' if wall <= TARGET_S else 'OVER'}"
        )


if __name__ == "__main__":
    main()
