"""End to end on the bundled model: a sign-off rule ``local:smollm2-135m`` does not follow out of the box is
distilled from a scripted teacher's graded runs with the local trainer (``train`` with ``any_model``, the
trainer made by the composition), the checkpoint is measured on held-out cases through the local harness,
and ``commit`` makes it live because it won. Prints the figures it got (run with ``-s`` to see them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers.tiny_model import needs_local_stack

needs_local_stack()

from machine import open_workspace  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.learn import TrainOptions, train  # noqa: E402
from machine.ops import make_trainer  # noqa: E402
from machine.training import StepMetrics  # noqa: E402
from machine.versions import commit  # noqa: E402

pytestmark = pytest.mark.slow

SIGN = "Aye!"
MACHINE_PY = f"""\
from machine import check, define_evaluator, define_machine, define_rubric, model_from

rubric = define_rubric({{"signed": "The reply ends with the sign-off {SIGN}"}})

machine = define_machine(
    name="signoff",
    intent="Answer in a few words and sign off.",
    instructions="Answer in a few words, then end every reply with: {SIGN}",
    model=model_from(__file__, "local:smollm2-135m"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {{"signed": check("signed", lambda run: run.output.strip().endswith("{SIGN}"))}}
    ),
    max_steps=1,
)
"""
TOPICS = ["the sea", "a cat", "bread", "rain", "music", "a tree", "the moon", "coffee", "snow", "a book"]
HELD = ["the sun", "a dog", "tea", "wind", "a river", "cheese", "a bird", "a lemon", "a mountain"]
"""Nine held-out topics: the gate needs six cases that change to call it evidence, and one or two may not."""


def write_signoff(root: Path) -> Path:
    folder = root / "machines" / "signoff"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY, encoding="utf-8")
    cases = [{"id": f"c{i}", "input": f"Say something about {t}."} for i, t in enumerate(TOPICS)]
    held = [{"id": f"h{i}", "input": f"Say something about {t}."} for i, t in enumerate(HELD)]
    (folder / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    (folder / "holdout.json").write_text(json.dumps(held), encoding="utf-8")
    rules = [
        {"match": f"about {t}", "turns": [{"text": f"I like {t}. {SIGN}"}]} for t in TOPICS
    ]  # the teacher: a short answer, signed
    script = root / "teacher.json"
    script.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return script


async def test_a_sign_off_distilled_into_smollm2_passes_the_gate_and_goes_live(tmp_path: Path) -> None:
    started = time.monotonic()
    teacher = open_workspace(tmp_path, harness="scripted", script=write_signoff(tmp_path), budget="none")
    spec = teacher.load("signoff")
    for case in teacher.cases(spec):
        run = await teacher.run(spec, case.input, case=case, trial=0, grade=True)
        assert run.score == 1.0
    local = teacher.using(harness=LocalHarness(max_new_tokens=16, temperature=0.7))
    steps: list[StepMetrics] = []
    options = TrainOptions(epochs=3, batch_size=5, lr=1e-3, force=True)  # a short plan that learns the rule
    candidate = await train(
        local, "signoff", trials=2, best_of=1, options=options, any_model=True,
        make_trainer=make_trainer, on_step=steps.append,
    )  # fmt: skip
    report = candidate.report
    summary = report.training
    assert summary is not None and summary.trainer == "local" and summary.examples == len(TOPICS)
    assert summary.whole_run == len(TOPICS) and summary.steps == len(steps) == 6
    losses = [m.loss for m in steps if m.loss is not None]
    before, after = report.before.mean, report.after.mean
    assert before is not None and after is not None
    z = "-" if report.z is None else f"{report.z:.2f}"  # None: every paired gain the same (no spread)
    print(
        f"\nheld-out before {before:.2f} after {after:.2f} z {z} ({report.decision}); "
        f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; {summary.tokens} tokens in {summary.seconds:.1f} s; "
        f"{time.monotonic() - started:.0f} s in all"
    )
    assert losses[-1] < losses[0]
    assert before <= 0.2 and after >= 0.8, report
    assert candidate.passed
    live = commit(local, "signoff")
    model = json.loads((tmp_path / "machines" / "signoff" / "model.json").read_text(encoding="utf-8"))
    assert live.model == candidate.version.model and "+" in live.model
    assert live.model.startswith("local:smollm2-135m+") and json.dumps(model).count(live.model) == 1
