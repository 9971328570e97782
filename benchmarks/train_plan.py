"""How long a training plan takes before anything is spent: ``machine train NAME --dry-run`` on 1,000
stored good runs, in one process, with the local trainer (SmolLM2-135M's chat template).

A workspace in a temporary folder gets a copy of ``signoff`` and 1,000 graded runs of 1,000 cases (a
question and a one-sentence answer that signs off), stored with ``put_many`` (not timed). The
dry run is timed twice: cold (the first in the process, which loads the model to check the adapter's
target modules) and warm (the same again: selecting, rendering and planning alone).
Target: a dry run of 1,000 examples in <= 2 s. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/train_plan.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio

from machine import Workspace, open_workspace
from machine.learn import check_training
from machine.ops import make_trainer
from machine.runs import CriterionScore, Message, Run, Scorecard, Timings

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 2.0


def stored(n: int, fingerprint: str) -> list[Run]:
    runs = []
    for i in range(n):
        text = f"Case {i} has the answer {i * 7 % 13}. Aye!"
        grade = CriterionScore(criterion="signs_off", weight=1.0, grader="check:sign_off", score=1.0)
        card = Scorecard(rubric_fingerprint=fingerprint, criteria={"signs_off": grade})
        runs.append(
            Run(
                machine="signoff", version="v1", model="teacher", harness="scripted",
                instructions="x", input=f"What is the answer of case {i}?", case_id=f"b{i}",
                trajectory=[Message(role="assistant", content=text)], output=text, status="ok",
                scorecard=card, timings=Timings(),
            )
        )  # fmt: skip
    return runs


async def dry_run(ws: Workspace, trainer: str | None) -> tuple[float, int, int]:
    started = time.perf_counter()
    check = await check_training(ws, "signoff", any_model=True, trainer=trainer, make_trainer=make_trainer)
    return time.perf_counter() - started, check.plan.sequences, check.plan.tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="machine-plan-") as tmp:
        root = Path(tmp)
        shutil.copytree(ROOT / "machines" / "signoff", root / "machines" / "signoff")
        ws = open_workspace(root)
        spec = ws.load("signoff")
        ws.store.put_many(stored(args.runs, spec.rubric.fingerprint))
        print(f"{args.runs} stored good runs of signoff; target: a dry run in <= {TARGET_S:g} s")
        label, trainer = "local (SmolLM2-135M)", None
        for when in ("cold", "warm"):
            seconds, sequences, tokens = anyio.run(dry_run, ws, trainer)
            verdict = "meets" if seconds <= TARGET_S else "MISSES"
            print(
                f"  {label:<22} {when}: {seconds:6.2f} s for {sequences} sequences, {tokens} tokens"
                f"  ({verdict} the target)"
            )


if __name__ == "__main__":
    main()
