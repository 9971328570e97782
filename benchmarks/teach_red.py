"""Tool use learned offline: ``red`` distilled into ``local:smollm2-135m`` from its scripted teacher.

In a temporary copy of the example machine whose model.json names the bundled local model, red's cases
are joined by ``--pairs`` generated pairs (benchmarks/red_cases.py: the same sentence with "red" as a word,
and with a near miss), each label checked against the teacher's pattern; the scripted teacher
(machines/red/script.json) runs every case once, graded, and every run must score 1; ``train
--any-model`` distils those runs (whole-run examples with their tool calls) into the local model with LoRA
on this machine; and the held-out comparison measures the base and the checkpoint on red's held-out
cases (left as they are, near misses among them). It prints the held-out means before and after, each
held-out case's result on both sides (with the tool calls and reply each wrote), the training tokens,
steps and time, and the curve: the held-out mean of the state saved every ``--curve-every`` steps (an
adapter like the final one), between the base's and the end's. Loopback only: no network.

    .venv/bin/python benchmarks/teach_red.py [--pairs 56] [--seed 0] [--names] [--epochs E] [--lr 3e-3]
        [--lr-schedule linear] [--curve-every 10] [--greedy]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio

from machine import Workspace, open_workspace, run_suite
from machine.clients import make_trainer as trainer_for
from machine.clients.local import LocalHarness
from machine.learn import TrainOptions, train
from machine.training import StepMetrics, Trainer

REPO = Path(__file__).resolve().parents[1]
RED = REPO / "machines" / "red"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from red_cases import checked, generated  # noqa: E402


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pairs", type=int, default=56, help="generated pairs of training cases")
    parser.add_argument("--seed", type=int, default=0, help="which pairs are drawn")
    parser.add_argument(
        "--names", action="store_true", help='draw pairs with "Red" in a proper name too (red_cases.NAMES)'
    )
    parser.add_argument("--epochs", type=int, default=None, help="default: the training plan's")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--lr-schedule", default="constant", choices=["constant", "linear"])
    parser.add_argument("--batch-size", type=int, default=None, help="default: the training plan's")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--target-modules", default=None, help="comma-separated (default: the trainer's)")
    parser.add_argument("--trials", type=int, default=1, help="held-out runs per case and side")
    parser.add_argument("--max-tokens", default="64", help="MACHINE_LOCAL_MAX_TOKENS for the local runs")
    parser.add_argument("--curve-every", type=int, default=10, help="held-out mean every N steps (0: none)")
    parser.add_argument("--greedy", action="store_true", help="also read the held-out cases at temperature 0")
    return parser.parse_args()


def teach(root: Path, pairs: int, seed: int, names: bool) -> None:
    """red's cases and the generated ones in the copy, checked, and the teacher's graded run of each."""
    cases = json.loads((RED / "cases.json").read_text(encoding="utf-8"))
    made = generated(pairs, seed, names)
    checked(made, RED / "script.json", RED / "holdout.json")
    (root / "machines" / "red" / "cases.json").write_text(json.dumps(cases + made), encoding="utf-8")
    teacher = open_workspace(root, harness="scripted", script=RED / "script.json")
    spec = teacher.load("red")
    started = time.monotonic()
    report = anyio.run(lambda: run_suite(teacher, spec, teacher.cases("red"), trials=1, model="teacher"))
    wrong = [r.case_id for r in teacher.store.iter_runs("red") if r.score != 1.0]
    if wrong:
        raise SystemExit(f"the teacher's runs of {wrong} did not score 1: its script or a label is wrong")
    took = time.monotonic() - started
    positive = sum(1 for c in cases + made if c["red"])
    print(
        f"teacher: {report.runs} runs of {len(report.cases)} cases ({len(made)} generated; {positive} say "
        f"red, {len(cases) + len(made) - positive} do not), every one scored 1 ({took:.1f} s)"
    )


def step_line(metrics: StepMetrics) -> None:
    print(
        f"  step {metrics.step} (epoch {metrics.epoch}): loss {metrics.loss:.4f}, {metrics.tokens} tokens, "
        f"{metrics.seconds:.1f} s",
        flush=True,
    )


def per_case(ws: Workspace) -> None:
    cases = {c.id: c.input for c in ws.cases("red", "holdout.json")}
    by_side: dict[str, dict[str, list[float]]] = {}
    wrote: dict[str, str] = {}
    for run in ws.store.iter_runs("red"):
        if run.case_id in cases and run.score is not None and run.harness == "local":
            by_side.setdefault(run.version or "?", {}).setdefault(run.case_id, []).append(run.score)
            calls = [c.name for m in run.trajectory for c in m.tool_calls]
            wrote[f"{run.version}:{run.case_id}"] = f"{calls} {run.output[:50]!r}"
    for case_id, text in cases.items():
        row = "  ".join(
            f"{side} {sum(s) / len(s):.2f}"
            for side, scores in sorted(by_side.items())
            if (s := scores.get(case_id))
        )
        print(f"  {case_id:<12} {row}   {text[:60]!r}")
        for side in sorted(by_side):
            print(f"    {side} wrote {wrote.get(f'{side}:{case_id}', '-')}")


def curve(ws: Workspace, trials: int, before: float | None, after: float | None, last: int) -> None:
    """The held-out mean of every state the training saved on its way, between the base's and the end's."""
    states = sorted(
        (int(path.name.removeprefix("step-")), path)
        for path in (ws.data_dir / "training").glob("*/states/step-*")
    )
    spec = ws.load("red")
    cases = ws.cases("red", "holdout.json")
    points = [f"step 0: {before:.3f}" if before is not None else "step 0: -"]
    for step, path in states:
        if step >= last:
            continue
        model = f"local:smollm2-135m+{path}"
        report = anyio.run(lambda: run_suite(ws, spec, cases, trials=trials, model=model))  # noqa: B023
        mean = report.mean
        points.append(f"step {step}: {mean:.3f}" if mean is not None else f"step {step}: -")
        print(f"  held-out at {points[-1]}", flush=True)
    points.append(f"step {last}: {after:.3f}" if after is not None else f"step {last}: -")
    print("held-out curve: " + ", ".join(points))


def greedy(ws: Workspace, models: dict[str, str]) -> None:
    """Each side's answer to every held-out case at temperature 0: what each model prefers, with no
    sampling noise (one run a case, since a greedy run is the same every time)."""
    at_zero = ws.using(harness=LocalHarness(temperature=0.0))
    spec, cases = at_zero.load("red"), at_zero.cases("red", "holdout.json")
    for side, model in models.items():
        report = anyio.run(lambda: run_suite(at_zero, spec, cases, trials=1, model=model))  # noqa: B023
        wrong = [c.case_id for c in report.cases if c.mean != 1.0]
        mean = "-" if report.mean is None else f"{report.mean:.3f}"
        print(f"greedy {side}: {mean}; wrong on {', '.join(wrong) or 'none'}")


def main() -> None:
    args = options()
    os.environ.setdefault("MACHINE_LOCAL_MAX_TOKENS", args.max_tokens)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        shutil.copytree(RED, root / "machines" / "red")
        (root / "machines" / "red" / "model.json").write_text(json.dumps({"model": "local:smollm2-135m"}))
        teach(root, args.pairs, args.seed, args.names)
        ws = open_workspace(root, harness="local")
        modules = args.target_modules.split(",") if args.target_modules else None
        chosen = TrainOptions(
            epochs=args.epochs, lr=args.lr, lr_schedule=args.lr_schedule, batch_size=args.batch_size,
            rank=args.rank, target_modules=modules, any_model=True, best_of=1, trials=args.trials,
        )  # fmt: skip

        def make(name: str | None, base_model: str, at: Path | None = None) -> Trainer:
            return trainer_for(name, base_model, at, save_every=args.curve_every or 10_000)

        started = time.monotonic()
        candidate = anyio.run(
            lambda: train(
                ws,
                "red",
                chosen,
                make_trainer=make,
                on_step=step_line,
            )
        )
        took = time.monotonic() - started
        r, t = candidate.report, candidate.report.training
        assert t is not None
        print(
            f"held-out ({r.cases} cases x {r.trials}): before {r.before.mean:.3f}, after {r.after.mean:.3f}; "
            f"z {r.z if r.z is not None else '-'}; {r.outcome}: {r.decision}"
        )
        print(
            f"training: {t.examples} examples, {t.sequences} sequences ({t.whole_run} whole runs), "
            f"{t.tokens} tokens ({t.target_tokens} targets), {t.epochs} epochs, {t.steps} steps at lr "
            f"{t.learning_rate:g}, loss {t.first_loss:.3f} -> {t.last_loss:.3f}, {t.seconds:.1f} s"
        )
        print(f"train and held-out comparison together: {took:.1f} s")
        per_case(ws)
        if args.curve_every:
            curve(ws, args.trials, r.before.mean, r.after.mean, t.steps)
        if args.greedy:
            greedy(ws, {"before": r.before.model, "after": r.after.model})


if __name__ == "__main__":
    main()
