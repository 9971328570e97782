"""Tool use learned offline: ``red`` distilled into ``local:smollm2-135m`` from its scripted teacher.

In a temporary copy of the example machine whose model.json names the bundled local model, the scripted
teacher (machines/red/script.json) runs every case twice, graded; ``machine train --any-model`` distils
those runs (whole-run examples with their tool calls) into the local model with LoRA on this machine;
and the held-out comparison measures the base and the checkpoint on red's held-out cases (its near
misses among them). It prints the held-out means before and after, each held-out case's result on both
sides, the training tokens and the time of each step. Loopback only: no network at all.

    .venv/bin/python benchmarks/teach_red.py [--epochs 3] [--lr 1e-3] [--trials 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import anyio

from machine import open_workspace, run_suite
from machine.learn import TrainSettings, train
from machine.ops import make_trainer

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--trials", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        shutil.copytree(REPO / "machines" / "red", root / "machines" / "red")
        (root / "machines" / "red" / "model.json").write_text(json.dumps({"model": "local:smollm2-135m"}))
        teacher = open_workspace(root, harness="scripted", script=REPO / "machines" / "red" / "script.json")
        spec = teacher.load("red")
        started = time.monotonic()
        report = anyio.run(lambda: run_suite(teacher, spec, teacher.cases("red"), trials=2, model="teacher"))
        took = time.monotonic() - started
        print(f"teacher: {report.runs} runs of {len(report.cases)} cases, mean {report.mean} ({took:.1f} s)")
        ws = open_workspace(root, harness="local")
        settings = TrainSettings(base_model="", epochs=args.epochs, learning_rate=args.lr, batch_size=8)
        started = time.monotonic()
        candidate = anyio.run(
            lambda: train(
                ws, "red", any_model=True, trials=args.trials, settings=settings, make_trainer=make_trainer
            )
        )
        took = time.monotonic() - started
        r = candidate.report
        t = r.training
        assert t is not None
        print(
            f"held-out ({r.cases} cases x {r.trials}): before {r.before.mean:.3f}, after {r.after.mean:.3f}; "
            f"z {r.z if r.z is not None else '-'}; {r.outcome}: {r.decision}"
        )
        print(
            f"training: {t.examples} examples, {t.sequences} sequences ({t.whole_run} whole runs), "
            f"{t.tokens} tokens ({t.target_tokens} targets), {t.steps} steps, "
            f"loss {t.first_loss} -> {t.last_loss}, {t.seconds:.1f} s"
        )
        print(f"train and held-out comparison together: {took:.1f} s")
        cases = {c.id: c.input for c in ws.cases("red", "holdout.json")}
        by_side: dict[str, dict[str, list[float]]] = {}
        for run in ws.store.iter_runs("red"):
            if run.case_id in cases and run.score is not None and run.harness == "local":
                by_side.setdefault(run.version or "?", {}).setdefault(run.case_id, []).append(run.score)
        for case_id, text in cases.items():
            row = "  ".join(
                f"{side} {sum(s) / len(s):.2f}"
                for side, scores in sorted(by_side.items())
                if (s := scores.get(case_id))
            )
            print(f"  {case_id:<24} {row}   {text[:60]!r}")


if __name__ == "__main__":
    main()
