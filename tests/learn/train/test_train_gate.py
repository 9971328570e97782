"""``train`` end to end with a trainer in this process: a better checkpoint passes the gate, commits with
the base model that prices it and reverts exactly; one that is not better is refused at commit; the budget
refuses an unknown training price before anything happens and counts the training steps it allows."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers.training import BASE, TRAIN_CASES, Counting, Tutored, make_caps

import machine
from machine import BadInputError, BudgetExceeded, CommitRefused, UnknownPriceError, open_workspace
from machine.budget import price_of
from machine.learn import TrainingRecord, TrainOptions, train
from machine.training import StepMetrics
from machine.versions import commit, format_report, revert

SETTINGS = TrainOptions(batch_size=2)
CASES = {c["id"] for c in TRAIN_CASES}


async def test_a_better_checkpoint_passes_and_its_report_says_what_it_learned(tmp_path: Path) -> None:
    make_caps(tmp_path)
    harness = Tutored()
    ws = open_workspace(tmp_path, harness=harness)
    trainer = Counting("good")
    candidate = await train(ws, "caps", samples=2, trials=2, options=SETTINGS, trainer=trainer)
    assert candidate.passed and candidate.version.status == "pending"
    report = candidate.report
    assert (report.before.mean, report.after.mean) == (0.0, 1.0)
    assert report.criteria["correct"].before == 0.0 and report.criteria["correct"].after == 1.0
    t = report.training
    assert t is not None
    [examples] = trainer.prepared
    assert (t.trainer, t.base_model, t.renderer) == ("counting", BASE, "characters/4")
    assert (t.sampled, t.runs, t.examples, t.sequences) == (6, 6, 6, 6)  # 3 cases x 2, best 2 of each
    assert t.tokens == sum(trainer.prepare(examples, SETTINGS.settings(BASE)).data[i][0] for i in range(6))
    assert 0 < t.target_tokens < t.tokens
    # 6 sequences, 2 a step: 3 steps an epoch, so the plan raised the epochs to reach 30 steps
    assert (t.epochs, t.steps) == (10, 30)
    assert t.plan is not None and (t.plan.steps, t.plan.min_steps, t.plan.batch_size) == (30, 30, 2)
    assert t.plan.chosen == ["epochs 10: raised until at least 30 steps"]
    assert (t.first_loss, t.last_loss) == (2.0, pytest.approx(2.0 / 30))
    rate = price_of("train:" + BASE)
    assert rate is not None
    assert ws.budget.spent_by_kind["training"] == pytest.approx(10 * t.tokens * rate.input / 1e6)
    assert t.plan.trained_tokens == 10 * t.tokens
    assert t.plan.price_usd == pytest.approx(ws.budget.spent_by_kind["training"])  # the plan's price held
    assert candidate.version.model == f"good:{t.record}:30"
    assert candidate.version.base_model == BASE
    text = format_report(report)
    assert f"training {t.record}: counting on {BASE} (characters/4)" in text
    assert f"{t.runs} runs (6 sampled for it) -> 6 examples -> 6 sequences" in text
    # each epoch's mean loss, not the first and last batch; a chart of every step; the gain and its cost
    assert "loss 1.2222 -> 0.4111 -> ... -> 0.0770 -> 0.0690 (epoch means)" in text
    assert "  loss per step █▄▃▂▂▂▁▁" in text
    assert "  held-out mean 0.000 -> 1.000 (+1.000, standard error 0.000, z -); $" in text
    assert t.epoch_losses[0] == pytest.approx((2.0 + 1.0 + 2.0 / 3) / 3) and len(t.losses) == 30
    # versions.json keeps the training section with the candidate
    stored = json.loads((ws.machines_dir / "caps" / "versions.json").read_text(encoding="utf-8"))
    assert stored["versions"][1]["report"]["training"]["record"] == t.record
    assert harness.calls[candidate.version.model] == 12  # 6 held-out cases x 2 trials


async def test_commit_writes_the_checkpoint_and_its_base_and_revert_removes_it(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    candidate = await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting("good"))
    assert not (folder / "model.json").exists()
    commit(ws, "caps")
    written = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    assert written == {"model": candidate.version.model, "base_model": BASE}
    assert ws.load("caps").model == candidate.version.model
    revert(ws, "caps")
    assert not (folder / "model.json").exists()
    assert ws.load("caps").model == BASE


async def test_revert_writes_back_the_earlier_model_json_byte_for_byte(tmp_path: Path) -> None:
    earlier = b'{"model":   "thinkingmachines/Inkling"}'  # no newline, odd spacing: kept as it was
    folder = make_caps(tmp_path, model_json=earlier)
    ws = open_workspace(tmp_path, harness=Tutored())
    await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting("good"))
    commit(ws, "caps")
    assert (folder / "model.json").read_bytes() != earlier
    revert(ws, "caps")
    assert (folder / "model.json").read_bytes() == earlier


async def test_a_checkpoint_that_is_not_better_is_refused_at_commit(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    candidate = await train(ws, "caps", samples=1, trials=2, options=SETTINGS, trainer=Counting("same"))
    assert not candidate.passed
    assert (candidate.report.before.mean, candidate.report.after.mean) == (0.0, 0.0)
    with pytest.raises(CommitRefused) as refused:
        commit(ws, "caps")
    assert refused.value.report == candidate.report
    assert refused.value.report.training is not None
    assert not (folder / "model.json").exists()
    assert ws.load("caps").model == BASE


async def test_an_unknown_training_price_is_refused_before_anything_happens(tmp_path: Path) -> None:
    folder = make_caps(tmp_path, model_json=b'{"model": "acme/unpriced"}\n')
    harness = Tutored()
    ws = open_workspace(tmp_path, harness=harness, budget=5.0)
    trainer = Counting("good")
    with pytest.raises(UnknownPriceError, match="train:acme/unpriced"):
        await train(ws, "caps", samples=2, options=SETTINGS, trainer=trainer)
    assert harness.calls == {} and trainer.prepared == [] and trainer.steps == []
    assert list(ws.store.iter_runs("caps")) == []
    assert not (ws.data_dir / "training").exists()
    assert not (folder / "versions.json").exists()
    assert ws.budget.spent == 0.0


async def test_the_budget_counts_the_training_steps_apart_from_the_comparison(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    trainer = Counting("good")
    candidate = await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer)
    t = candidate.report.training
    assert t is not None and trainer.steps == list(range(1, 31))
    record = ws.data_dir / "training" / t.record
    metrics = [json.loads(line) for line in (record / "metrics.jsonl").read_text().splitlines()]
    steps = sum(m["cost_usd"] for m in metrics)
    assert steps > 0 and ws.budget.spent_by_kind["training"] == pytest.approx(steps)
    runs = ws.budget.spent_by_kind["runs"]
    sampling = sum(r.cost_usd for r in ws.store.iter_runs("caps") if r.version == "v1" and r.case_id in CASES)
    assert sampling > 0 and runs > sampling  # the held-out runs cost too
    # the summary is what training spent (sampling and steps); the gate its baseline, measured before
    # training (the live version on the 6 held-out cases); the report the candidate's side
    gate = candidate.report.gate
    assert gate is not None and gate.baseline_runs == 6 and gate.cost_usd > 0
    assert t.cost_usd == pytest.approx(sampling + steps)
    assert t.cost_usd + gate.cost_usd + candidate.report.cost_usd == pytest.approx(ws.budget.spent)
    assert candidate.report.before.reused == 6  # the baseline's runs, reused by the comparison


async def test_the_handle_trains_commits_and_reverts(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    handle = machine.load("caps", workspace=open_workspace(tmp_path, harness=Tutored()))
    candidate = await handle.train(
        samples=1, trials=1, epochs=2, lr=0.001, force=True, trainer=Counting("good")
    )  # 3 sequences, 2 epochs: a short plan, forced
    assert candidate.passed and candidate.report.training is not None
    assert (candidate.report.training.epochs, candidate.report.training.learning_rate) == (2, 0.001)
    assert handle.spec.model == BASE  # pending: nothing changed yet
    live = handle.commit()
    assert (live.model, live.base_model, handle.spec.model) == (candidate.version.model, BASE, live.model)
    handle.revert()
    assert handle.spec.model == BASE and not (folder / "model.json").exists()


async def test_the_gate_is_fixed_before_training_and_commit_holds_to_it(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    phases: list[str] = []
    candidate = await train(
        ws, "caps", samples=2, trials=2, min_z=1.5, options=SETTINGS, trainer=Counting("good"),
        on_phase=phases.append,
    )  # fmt: skip
    gate = candidate.report.gate
    holdout = folder / "holdout.json"
    assert gate is not None and gate.file == "machines/caps/holdout.json"
    assert gate.sha256 == hashlib.sha256(holdout.read_bytes()).hexdigest()
    assert (gate.cases, gate.trials, gate.min_z, gate.pass_score, gate.baseline) == (6, 2, 1.5, 1.0, "v1")
    assert (gate.baseline_mean, gate.baseline_runs) == (0.0, 12)
    # fixed, and recorded, before the first step; the comparison was made on exactly that gate
    fixing = next(i for i, line in enumerate(phases) if line.startswith("fixing the gate before training"))
    assert fixing < next(i for i, line in enumerate(phases) if line.startswith("trained: "))
    t = candidate.report.training
    assert t is not None
    record = TrainingRecord.model_validate_json(
        (ws.data_dir / "training" / t.record / "record.json").read_bytes()
    )
    assert record.gate == gate
    assert (candidate.report.trials, candidate.report.min_z, candidate.report.before.reused) == (2, 1.5, 12)
    # the held-out file changed since: commit refuses, naming both hashes; force overrides
    text = holdout.read_text(encoding="utf-8")
    holdout.write_text(text.replace("dan", "don", 1), encoding="utf-8")
    now = hashlib.sha256(holdout.read_bytes()).hexdigest()
    with pytest.raises(BadInputError, match=f"sha256 {gate.sha256} then, {now} now") as refused:
        commit(ws, "caps")
    assert [f.argument for f in refused.value.fixes] == ["force"]
    assert not (folder / "model.json").exists()
    holdout.write_text(text, encoding="utf-8")  # restored: the same gate again
    assert commit(ws, "caps").model == candidate.version.model


async def test_a_resumed_training_keeps_its_gate_and_refuses_a_changed_held_out_file(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    trainer = Counting()

    def stop(metrics: StepMetrics) -> None:
        if metrics.step == 1:
            ws.budget.usd = ws.budget.spent

    with pytest.raises(BudgetExceeded, match="stopped after step 1"):
        await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=trainer, on_step=stop)
    [record] = (ws.data_dir / "training").iterdir()
    fixed = TrainingRecord.model_validate_json((record / "record.json").read_bytes()).gate
    assert fixed is not None
    ws.budget.usd = None
    holdout = folder / "holdout.json"
    holdout.write_text(holdout.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(BadInputError, match=f"changed since the gate was fixed for training {record.name}"):
        await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=trainer, resume=record.name)
    holdout.write_text(holdout.read_text(encoding="utf-8")[:-1], encoding="utf-8")
    candidate = await train(
        ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=trainer, resume=record.name
    )
    assert candidate.report.gate == fixed  # the gate fixed before the first step, not a new one
