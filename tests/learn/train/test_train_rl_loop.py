"""The RL loop of ``train`` on ``caps`` with a trainer in this process (``Practising``, whose policy
answers right more often each step it trains): the plan is priced at the base's rates before anything
runs; every step's samples are charged as runs and its update as training; the mean reward per step is
recorded and rises; the checkpoint is gated on the held-out cases like any candidate; a budget too small
for the next step stops the training before it, resumably, and the resumed training goes on from the
last saved state; a group whose runs all score alike trains nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.training import BASE, HARD, Practising, Tutored, make_caps

from machine import open_workspace
from machine.cli._run_view import header_lines
from machine.errors import BudgetExceeded
from machine.learn import TrainingRecord, train, training_shown
from machine.learn.rl import RLOptions
from machine.training import StepMetrics

RL = RLOptions(group=4, cases_per_step=2, rl_steps=4)


def record_of(root: Path) -> TrainingRecord:
    [folder] = (root / ".machine" / "training").iterdir()
    return TrainingRecord.model_validate_json((folder / "record.json").read_bytes())


async def test_rl_charges_samples_and_steps_records_rising_rewards_and_passes_the_gate(
    tmp_path: Path,
) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    trainer, said, steps = Practising(), [], []
    candidate = await train(
        ws, "caps", method="rl", rl=RL, trials=1, trainer=trainer, on_phase=said.append, on_step=steps.append
    )
    plan = record_of(tmp_path).rl_plan
    assert plan is not None and plan.samples == 32 and plan.runs == 32 + 2 * len(HARD)
    assert plan.price_usd is not None and plan.price_usd > 0 and plan.prices["training"] is not None
    assert any(line.startswith("RL plan: 0 judge calls") for line in said)
    rewards = [m.rl.reward for m in steps if m.rl is not None]
    assert len(rewards) == 4 and rewards[-1] is not None and rewards[0] is not None
    assert rewards[-1] > rewards[0]  # the policy answers right more often each step
    samples = [r for r in ws.store.iter_runs("caps") if r.sampled_for is not None]
    assert len(samples) == 32 and all(r.case_id not in HARD for r in samples)
    assert sum(r.cost_usd for r in samples) > 0 and all(r.harness == "practised" for r in samples)
    said_of = header_lines(samples[0])  # machine show-run
    assert f"  sampled by RL training {samples[0].sampled_for}: learned from only if marked good" in said_of
    assert ws.budget.spent_by_kind["training"] == pytest.approx(
        sum(m.cost_usd for m in steps) - sum(r.cost_usd for r in samples)
    )
    session = trainer.sessions[0]
    assert [len(u) for u in session.updates] == [8] * 4  # every run of the step, by id
    assert candidate.passed and candidate.version.model.startswith("good:")
    summary = candidate.report.training
    assert summary is not None and summary.rewards == rewards and summary.sampled == 32
    shown = training_shown(ws, summary.record).lines()
    assert (
        "  RL: groups of 4 of 2 cases a step, 4 steps, importance_sampling, temperature 1; 32 samples"
        in shown
    )
    assert any(
        line.startswith("  reward ") and line.endswith(f"{rewards[0]:.3f} at step 1 -> 1.000")
        for line in shown
    )


async def test_a_budget_too_small_for_the_next_step_stops_before_it_and_the_training_resumes(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "probe"
    make_caps(probe)
    await train(
        open_workspace(probe, harness=Tutored()), "caps", method="rl", rl=RL, trials=1, trainer=Practising()
    )
    measured = record_of(probe)
    assert measured.gate is not None and measured.rl_plan is not None and measured.rl_plan.price_usd
    per_step = measured.rl_plan.price_usd / RL.rl_steps
    root = tmp_path / "ws"
    make_caps(root)
    ws = open_workspace(root, harness=Tutored(), budget=measured.gate.cost_usd + 1.5 * per_step)
    with pytest.raises(BudgetExceeded, match=r"RL step (\d+) is planned to cost about") as stopped:
        await train(ws, "caps", method="rl", rl=RL, trials=1, trainer=Practising())
    record = record_of(root)
    assert record.status == "stopped" and 1 <= record.steps < RL.rl_steps
    assert f"RL step {record.steps + 1} is planned" in stopped.value.message
    assert any(fix.value == record.id for fix in stopped.value.fixes)  # resume RECORD
    again = open_workspace(root, harness=Tutored(), budget=5.0)
    steps: list[StepMetrics] = []
    resumed = Practising()
    await train(
        again, "caps", method="rl", rl=RL, trials=1, trainer=resumed, resume=record.id, on_step=steps.append
    )
    assert [m.step for m in steps] == list(range(record.steps + 1, RL.rl_steps + 1))
    assert resumed.resumed[0] is not None and resumed.resumed[0].step == record.steps
    assert record_of(root).status == "trained"


async def test_groups_whose_runs_all_score_alike_train_nothing_and_are_counted(tmp_path: Path) -> None:
    make_caps(tmp_path, cases=[{"id": "x", "input": "xyz"}])
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    trainer, steps = Practising(), []
    rl = RLOptions(group=2, cases_per_step=1, rl_steps=4)
    await train(ws, "caps", method="rl", rl=rl, trials=1, trainer=trainer, on_step=steps.append)
    flat = [m for m in steps if m.rl is not None and m.rl.flat_share == 1.0]
    assert flat, "some group's two runs should have scored alike"
    for metrics in flat:
        assert metrics.rl is not None and metrics.rl.trained == 0 and metrics.loss is None
    lines = (tmp_path / ".machine" / "training" / record_of(tmp_path).id / "metrics.jsonl").read_text()
    assert all(json.loads(line)["rl"]["rollouts"] == 2 for line in lines.splitlines())
    assert BASE  # caps samples its live model's base
