"""``train`` end to end on the Tinker trainer: real Inkling renderings of the selected runs, the SDK's calls
made against the stand-in service, the sampler checkpoint proposed, gated, committed and reverted; and DPO
after a committed fine-tune, starting from the live checkpoint."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.tinker_standin import StandInService
from helpers.training import BASE, HARD, USAGE, make_caps

from machine import open_workspace
from machine.clients.tinker import TinkerTrainer
from machine.learn import TrainOptions, train
from machine.learn.train import plan_train, training_shown
from machine.runs import HarnessRequest, HarnessResult, Message, Tag, Turn, new_run_id, run_loop
from machine.training import StepMetrics
from machine.versions import commit, revert
from machine.workspace import Workspace


class Checkpointed:
    """The base model misses the hard inputs; a Tinker checkpoint answers every one; calls counted."""

    name = "checkpointed"

    def __init__(self) -> None:
        self.models: list[str] = []

    async def run(self, request: HarnessRequest) -> HarnessResult:
        self.models.append(request.model)
        learned = request.model.startswith("tinker://")
        text = request.input.upper() if learned or request.input not in HARD else "no idea"

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=text), usage=USAGE)

        return await run_loop(request, reply)


async def test_a_run_trained_on_tinker_is_proposed_committed_and_reverted(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    harness = Checkpointed()
    ws = open_workspace(tmp_path, harness=harness)
    service = StandInService()
    options = TrainOptions(batch_size=2, epochs=1, force=True)  # three steps to follow, forced
    candidate = await train(
        ws, "caps", samples=2, trials=1, options=options, trainer=TinkerTrainer(service=service)
    )
    training = candidate.report.training
    assert training is not None
    assert (training.trainer, training.renderer, training.base_model) == ("tinker", "tml_v0", BASE)
    assert training.examples == 6 and training.whole_run == 6 and training.per_step == 0  # 3 cases, best 2
    assert training.steps == 3 and training.last_loss is not None and training.first_loss is not None
    assert training.last_loss < training.first_loss
    assert 0 < training.target_tokens < training.tokens
    methods = service.methods()
    assert methods[:2] == ["ServiceClient", "create_lora_training_client"]
    assert methods.count("forward_backward") == methods.count("optim_step") == 3  # 6 sequences, 2 a step
    assert methods[-2:] == ["save_state", "save_weights_for_sampler"]
    checkpoint = candidate.version.model
    assert checkpoint.startswith("tinker://run-1/sampler_weights/")
    assert checkpoint in harness.models  # the checkpoint itself was sampled on the held-out cases
    assert candidate.passed, candidate.report.decision
    record = json.loads((ws.data_dir / "training" / training.record / "record.json").read_text())
    assert record["renderer"] == "tml_v0" and record["checkpoint"]["model"] == checkpoint
    assert not (folder / "model.json").exists()
    commit(ws, "caps")
    assert json.loads((folder / "model.json").read_text()) == {"model": checkpoint, "base_model": BASE}
    revert(ws, "caps")
    assert not (folder / "model.json").exists()


async def pair_each_case(ws: Workspace) -> None:
    """Each training case's run, and a copy of it a person marked bad: a preference pair a case."""
    spec = ws.load("caps")
    for case in ws.cases(spec):
        run = await ws.run(spec, case.input, case=case, trial=0, grade=True)
        worse = [*run.trajectory[:-1], Message(role="assistant", content="go away")]
        marked = {"trajectory": worse, "output": "go away", "tags": [Tag(kind="bad")]}
        ws.store.put(run.model_copy(update={"id": new_run_id(), **marked}))


async def test_preference_pairs_train_on_tinker_with_dpo_and_are_gated(tmp_path: Path) -> None:
    """Each run of a training case paired with a copy of it a person marked bad: DPO on the stand-in
    measures the base once, lowers the loss, and the checkpoint is gated as any other."""
    make_caps(tmp_path)
    harness = Checkpointed()
    ws = open_workspace(tmp_path, harness=harness)
    await pair_each_case(ws)
    service = StandInService()
    options = TrainOptions(method="dpo", lr=0.05, beta=0.5, batch_size=1, epochs=2, force=True)
    candidate = await train(ws, "caps", trials=1, options=options, trainer=TinkerTrainer(service=service))
    training = candidate.report.training
    assert training is not None and training.trainer == "tinker" and training.steps == 6  # 3 pairs, 2 epochs
    assert training.first_loss == pytest.approx(math.log(2), abs=1e-6)
    assert training.last_loss is not None and training.last_loss < training.first_loss
    methods = service.methods()
    assert methods.count("compute_logprobs") == 6 and methods.count("forward_backward_custom") == 6
    assert "forward_backward" not in methods
    record = json.loads((ws.data_dir / "training" / training.record / "record.json").read_text())
    assert record["settings"]["method"] == "dpo" and record["selection"]["sources"] == {"preference pairs": 3}
    assert training.plan is not None and training.plan.price_usd == pytest.approx(
        ws.budget.spent_by_kind["training"]
    )  # the plan's price is what the base's pass and the steps cost
    assert candidate.version.model in harness.models and candidate.passed, candidate.report.decision


async def test_dpo_after_a_committed_fine_tune_starts_from_the_live_checkpoint(tmp_path: Path) -> None:
    """Fine-tune, commit, then DPO: the plan names the method, β and the live checkpoint it starts from;
    the training client is loaded from that checkpoint's saved state (its training record's), the pairs
    are measured on a sampler of the live checkpoint, and every step records the chosen answers' drift."""
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Checkpointed())
    service = StandInService()
    tuned = await train(
        ws, "caps", samples=2, trials=1, options=TrainOptions(batch_size=2, epochs=1, force=True),
        trainer=TinkerTrainer(service=service),
    )  # fmt: skip
    commit(ws, "caps")
    live = tuned.version.model
    assert tuned.report.training is not None
    record = json.loads((ws.data_dir / "training" / tuned.report.training.record / "record.json").read_text())
    state = record["checkpoint"]["state"]
    assert state.startswith("tinker://run-1/weights/")
    said = plan_train(ws, "caps", method="dpo", beta=0.2).describe()
    assert f"DPO at β 0.2 from the live checkpoint {live}, also the reference: 3 epochs" in said
    await pair_each_case(ws)
    service.calls.clear()
    steps: list[StepMetrics] = []
    options = TrainOptions(method="dpo", lr=0.05, beta=0.5, batch_size=1, epochs=2)
    candidate = await train(
        ws, "caps", trials=1, options=options, trainer=TinkerTrainer(service=service), on_step=steps.append
    )
    opened = [c for c in service.calls if c.method.startswith("create_")]
    assert [(c.method, c.args) for c in opened] == [
        ("create_training_client_from_state", {"path": state}),
        ("create_sampling_client", {"model_path": live}),
    ]
    assert steps and all(s.chosen_drift is not None for s in steps)
    training = candidate.report.training
    assert training is not None and training.plan is not None
    assert (training.plan.method, training.plan.beta, training.plan.start) == ("dpo", 0.5, live)
    assert training.plan.min_steps == 0 and training.plan.steps == 2 * training.plan.sequences  # not forced
    assert training.plan.lines()[0].startswith(f"training plan: DPO at β 0.5 from {live} (the live version")
    metrics = (ws.data_dir / "training" / training.record / "metrics.jsonl").read_text().splitlines()
    assert all(json.loads(line)["chosen_drift"] is not None for line in metrics)
    shown = training_shown(ws, training.record).lines()
    assert any(line.startswith("  chosen drift (log p of the chosen answers against the") for line in shown)
    assert candidate.version.base == tuned.version.number  # gated against the fine-tune it builds on
