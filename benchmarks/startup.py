"""Start-up time of the ``machine`` command: ``machine --help`` and ``machine list``, fresh processes.

``machine list`` runs in a generated workspace with five machines (each a rubric.py and a machine.py with
one check grader), so it pays for importing the library, discovering the machines and loading each one.
Each command runs once first, not counted (it writes the bytecode, as any first use does; the children
run without ``PYTHONDONTWRITEBYTECODE``, as an installed command does), then RUNS times, alternated with
the anchor, a bare ``python -c "import click, pydantic"``, and a floor, the same imports with one pydantic
model defined. The script prints the median and the minimum wall time of each against the targets: at most
100 ms (on a quiet machine), and at most 2.5x the anchor in the same run, each with its own verdict. It
prints figures and asserts nothing.

    .venv/bin/python benchmarks/startup.py            # 10 runs each
    .venv/bin/python benchmarks/startup.py --quick    # 5 runs each
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 100.0
TARGET_RATIO = 2.5
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
MACHINES = 5
ONE_MODEL = """\
import click
from pydantic import BaseModel, ConfigDict, Field
class Model(BaseModel):
    model_config = ConfigDict(defer_build=True)
    text: str = Field(default="")
"""
"""What any command that defines one pydantic model pays (``import pydantic`` alone loads almost nothing):
printed beside the anchor, since every machine file defines its runs' checks on a model, ``Run``."""

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
    done = subprocess.run(
        cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, env=ENV
    )
    wall = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        sys.exit(f"error: `{' '.join(cmd)}` exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return wall


def _verdict(met: bool) -> str:
    return "meets" if met else "MISSES"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 runs each instead of 10")
    args = parser.parse_args()
    runs = 5 if args.quick else 10
    machine = machine_command()
    print(
        f"machine: {machine}; {runs} fresh processes per command, wall ms; targets <= {TARGET_MS:.0f} ms "
        f"and <= {TARGET_RATIO:g}x the anchor"
    )
    with tempfile.TemporaryDirectory(prefix="machine-startup-") as tmp:
        ws = Path(tmp)
        make_workspace(ws)
        python = str(Path(machine).with_name("python"))
        commands = {
            "anchor: import click, pydantic": [python, "-c", "import click, pydantic"],
            "floor: one pydantic model": [python, "-c", ONE_MODEL],
            "machine --help": [machine, "--help"],
            f"machine list ({MACHINES} machines)": [machine, "--workspace", str(ws), "list"],
        }
        firsts = {label: time_once(cmd, ws) for label, cmd in commands.items()}
        walls: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(runs):
            for label, cmd in commands.items():
                walls[label].append(time_once(cmd, ws))
        anchor = statistics.median(walls["anchor: import click, pydantic"])
        for label, times in walls.items():
            median, best = statistics.median(times), min(times)
            line = f"  {label:<32} median {median:6.1f} ms  min {best:6.1f} ms  max {max(times):6.1f} ms"
            line += f"  (first run, not counted: {firsts[label]:.1f} ms)"
            if not label.startswith("anchor"):
                ratio = median / anchor
                line += f"  {ratio:.2f}x the anchor"
                if label.startswith("machine"):
                    line += f": ratio {_verdict(ratio <= TARGET_RATIO)}, {TARGET_MS:.0f} ms "
                    line += _verdict(median <= TARGET_MS)
            print(line)


if __name__ == "__main__":
    main()
