"""The training plan's time estimate against the measured wall time of the demo's training.

Does what ``demo/teach_local.sh`` does, in a scratch workspace: a copy of ``machines/signoff`` (its model
the bundled SmolLM2-135M), the scripted teacher's suite, ``machine train signoff --any-model --dry-run``
(whose plan says the estimate before anything runs), then ``machine train signoff --any-model --trials 1
--budget none``, each line it prints on stderr timestamped as it arrives. The phases are read from those
lines: loading and measuring the live version on the held-out cases (from the start to the first step),
the steps, and measuring the checkpoint (from ``proposing`` to the end). Printed side by side with the
plan's estimate of each, and the whole against the target: within a factor of 1.5. The machine's load
average is printed before and after: on a shared machine, say what else was running.

    .venv/bin/python benchmarks/train_estimate.py [--trials 1] [--samples 0]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MACHINE = str(Path(sys.executable).parent / "machine")
TARGET = 1.5


def run(args: list[str], cwd: Path) -> str:
    done = subprocess.run([MACHINE, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"machine {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def timed_lines(args: list[str], cwd: Path) -> tuple[float, list[tuple[float, str]]]:
    """Run ``machine ARGS``: its wall time and each stderr line with the seconds since it started."""
    started = time.monotonic()
    process = subprocess.Popen(
        [MACHINE, *args], cwd=cwd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    assert process.stderr is not None
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in process.stderr]
    if process.wait() != 0:
        raise SystemExit("the training failed:\n" + "\n".join(line for _, line in lines[-30:]))
    return time.monotonic() - started, lines


def at(lines: list[tuple[float, str]], pattern: str) -> float:
    return next(t for t, line in lines if re.search(pattern, line))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=1, help="runs of each held-out case on each side")
    parser.add_argument("--samples", type=int, default=0, help="runs of each case sampled first")
    options = parser.parse_args()
    before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        shutil.copytree(REPO / "machines" / "signoff", root / "machines" / "signoff")
        script = "machines/signoff/script.json"
        run(
            [
                "suite",
                "signoff",
                "--harness",
                "scripted",
                "--script",
                script,
                "--model",
                "teacher",
                "--budget",
                "none",
            ],
            root,
        )
        sampling = ["--samples", str(options.samples)] if options.samples else []
        dry = run(
            ["train", "signoff", "--any-model", "--dry-run", "--trials", str(options.trials), *sampling], root
        )
        said = next((line.strip() for line in dry.splitlines() if line.strip().startswith("time:")), "(none)")
        args = [
            "train",
            "signoff",
            "--any-model",
            "--trials",
            str(options.trials),
            "--budget",
            "none",
            *sampling,
        ]
        wall, lines = timed_lines(args, root)
        [record] = (root / ".machine" / "training").iterdir()
        plan = json.loads((record / "record.json").read_text())["plan"]
    first_step, trained = at(lines, r"^  step 1 "), at(lines, r"^trained: ")
    proposing = at(lines, r"^proposing ")
    runs_s = plan.get("run_seconds") or 0.0
    live_runs = plan.get("measure_runs", 0) // 2
    rows = [
        (
            "sampling, loading, the live version",
            (plan.get("sample_runs", 0) + live_runs) * runs_s,
            first_step,
        ),
        (f"the {plan['steps']} steps", plan["seconds"], trained - first_step),
        ("the checkpoint measured", live_runs * runs_s, wall - proposing),
    ]
    estimate = plan["seconds"] + (plan.get("sample_runs", 0) + plan.get("measure_runs", 0)) * runs_s
    print(f"the dry run's plan said: {said}")
    print(f"load average before {before[0]:.2f}, after {os.getloadavg()[0]:.2f} (1 min)")
    print(f"{'':38} {'estimate':>9} {'measured':>9} {'ratio':>6}")
    for label, guess, took in [*rows, ("the whole training", estimate, wall)]:
        ratio = max(guess, took) / max(min(guess, took), 1e-9)
        print(f"{label:38} {guess:>8.1f}s {took:>8.1f}s {ratio:>5.2f}x")
    verdict = "within" if max(estimate, wall) / min(estimate, wall) <= TARGET else "NOT within"
    print(f"target: the whole within {TARGET}x of the measured wall time: {verdict}")


if __name__ == "__main__":
    main()
