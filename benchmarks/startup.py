"""Start-up time of the ``machine`` command: ``machine --help`` and ``machine list``, fresh processes.

``machine list`` runs in a generated workspace with five machines (each a rubric.py and a machine.py with
one check grader), so it pays for importing the library, discovering the machines and loading each one.
Each command runs once first, not counted (it writes the machines' bytecode, as any first use does), then
RUNS times; the script prints the median and the minimum wall time of each, against the target. It
prints figures and asserts nothing.

    .venv/bin/python benchmarks/startup.py            # 10 runs each
    .venv/bin/python benchmarks/startup.py --quick    # 5 runs each
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 300.0
MACHINES = 5

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({{
    "includes": {{"description": "The reply includes the case's target.", "weight": 2}},
    "short": {{"description": "The reply is at most {words} words.", "weight": 1}},
}})
"""

MACHINE_PY = """\
from machine import Run, check, define_evaluator, define_machine

from .rubric import rubric


def includes(run: Run) -> tuple[bool, str]:
    target = str((run.case or {{}}).get("target", ""))
    return target in run.output, "looked for the target"


def short(run: Run) -> tuple[bool, str]:
    words = len(run.output.split())
    return words <= {words}, f"{{words}} words"


machine = define_machine(
    name="{name}",
    intent="Machine number {index} of the start-up benchmark.",
    instructions="Answer in at most {words} words.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {{"includes": check("includes", includes), "short": check("short", short)}}
    ),
)
"""


def machine_command() -> str:
    for candidate in (ROOT / ".venv" / "bin" / "machine", Path(sys.executable).parent / "machine"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("machine")
    if not found:
        sys.exit("error: no `machine` command; run `make install` (it creates .venv) first")
    return found


def make_workspace(root: Path) -> None:
    for index in range(1, MACHINES + 1):
        name = f"bench{index}"
        folder = root / "machines" / name
        folder.mkdir(parents=True)
        words = 20 * index
        (folder / "rubric.py").write_text(RUBRIC_PY.format(words=words))
        (folder / "machine.py").write_text(MACHINE_PY.format(name=name, index=index, words=words))
        (folder / "cases.json").write_text('[{"id": "one", "input": "hello", "target": "hello"}]')


def time_once(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        sys.exit(f"error: `{' '.join(cmd)}` exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 runs each instead of 10")
    args = parser.parse_args()
    runs = 5 if args.quick else 10
    machine = machine_command()
    print(f"machine: {machine}; {runs} fresh processes per command, wall ms; target <= {TARGET_MS:.0f} ms")
    with tempfile.TemporaryDirectory(prefix="machine-startup-") as tmp:
        ws = Path(tmp)
        make_workspace(ws)
        commands = {
            "machine --help": [machine, "--help"],
            f"machine list ({MACHINES} machines)": [machine, "--workspace", str(ws), "list"],
        }
        for label, cmd in commands.items():
            first = time_once(cmd, ws)
            walls = [time_once(cmd, ws) for _ in range(runs)]
            median, best = statistics.median(walls), min(walls)
            verdict = "meets" if median <= TARGET_MS else "MISSES"
            print(
                f"  {label:<28} median {median:6.1f} ms  min {best:6.1f} ms  max {max(walls):6.1f} ms  "
                f"(first run, not counted: {first:.1f} ms)  median/target {median / TARGET_MS:.2f}: {verdict}"
            )


if __name__ == "__main__":
    main()
