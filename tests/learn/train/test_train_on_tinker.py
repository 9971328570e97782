"""``train`` end to end on the Tinker trainer: real Inkling renderings of the selected runs, the SDK's calls
made against the stand-in service, the sampler checkpoint proposed, gated, committed and reverted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.tinker_standin import StandInService
from helpers.training import BASE, HARD, USAGE, make_caps

from machine import open_workspace
from machine.clients.tinker import TinkerTrainer
from machine.learn import TrainOptions, train
from machine.runs import HarnessRequest, HarnessResult, Message, Turn, run_loop
from machine.versions import commit, revert

pytestmark = pytest.mark.anyio


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
