"""DPO on Tinker at the SDK boundary: preference pairs rendered by Inkling's renderer into two Datums after
one prompt, the base model measured once through a sampler of it, each step a custom loss through
``forward_backward_custom`` on a stand-in whose weights move with the loss's gradient: the loss starts at
log 2 and falls, a resume restores the weights and measures against the same base, a timed-out step is
never trained twice, and the budget pays for the base's pass and every step. DPO after a fine-tune starts
from the live checkpoint's state and measures against its sampler weights; each step records the chosen
answers' drift; the chosen answers' own loss (``rpo_alpha``) adds to DPO's."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tinker_cookbook")

from helpers.renderers import INKLING, inkling
from helpers.tinker_standin import (
    Late,
    StandInSamplingClient,
    StandInService,
    StandInServiceClient,
    StandInTrainingClient,
    status_error,
)

from machine.budget import Budget
from machine.clients.tinker import TinkerTrainer
from machine.clients.tinker._dpo import DPO_LEARNING_RATE, PairDatums, dpo_loss
from machine.errors import BadInputError, TrainingError
from machine.training import Checkpoint, Prepared, StepMetrics, TrainExample, TrainSettings

PRICE = 11.22 / 1e6
"""Inkling's training price per token."""


def pairs(count: int = 4) -> list[TrainExample]:
    return [
        TrainExample(
            messages=[
                {"role": "system", "content": "Answer briefly, then say bye."},
                {"role": "user", "content": f"What is {i} plus {i}?"},
                {"role": "assistant", "content": f"{2 * i}. Bye!"},
            ],
            targets=[2],
            rejected=[{"role": "assistant", "content": f"It is {2 * i + 1}, I think."}],
            run_id=f"r{i}",
        )
        for i in range(count)
    ]


def settings(**changes: Any) -> TrainSettings:
    made: dict[str, Any] = {"batch_size": 2, "epochs": 3, "learning_rate": 0.05, "method": "dpo", "beta": 0.5}
    return TrainSettings(base_model=INKLING, **{**made, **changes})


@pytest.fixture
def service() -> Any:
    made = StandInService()
    yield made
    made.release.set()


def trainer(service: StandInService, **changes: Any) -> TinkerTrainer:
    return TinkerTrainer(service=service, rendering=inkling(), **{"backoff_s": 0.01, **changes})


def prepared(service: StandInService, count: int = 4) -> Prepared:
    return trainer(service).prepare(pairs(count), settings())


async def train(
    service: StandInService,
    tmp_path: Path,
    *,
    resume: Checkpoint | None = None,
    budget: Budget | None = None,
    trainer_args: dict[str, Any] | None = None,
    **changes: Any,
) -> tuple[Checkpoint, list[StepMetrics]]:
    steps: list[StepMetrics] = []
    checkpoint = await trainer(service, **(trainer_args or {})).train(
        prepared(service),
        settings(**changes),
        folder=tmp_path / "dpo-1",
        budget=budget or Budget(),
        on_step=steps.append,
        resume=resume,
    )
    return checkpoint, steps


def shape(function: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize(
    ("stand_in", "real", "method"),
    [
        (StandInServiceClient, "ServiceClient", "create_sampling_client"),
        (StandInSamplingClient, "SamplingClient", "compute_logprobs"),
        (StandInTrainingClient, "TrainingClient", "forward_backward_custom"),
    ],
)
def test_the_stand_in_has_the_sdks_signatures(stand_in: type, real: str, method: str) -> None:
    import tinker  # here, not at the top: it imports torch, which every test collection would wait for

    assert shape(getattr(stand_in, method)) == shape(getattr(getattr(tinker, real), method))


@pytest.mark.slow
def test_each_pair_is_two_datums_after_one_prompt(service: StandInService) -> None:
    made = prepared(service)
    assert (made.trainer, made.examples, made.sequences, made.dropped) == ("tinker", 4, 4, 0)
    pair: PairDatums = made.data[0]
    chosen, rejected = (d.model_input.to_ints() for d in pair.datums)
    weights = [list(d.loss_fn_inputs["weights"].data) for d in pair.datums]
    first = [w.index(1.0) for w in weights]  # where each answer's weighted tokens begin
    assert first[0] == first[1] and chosen[: first[0]] == rejected[: first[1]]  # the same prompt
    assert chosen[first[0] :] != rejected[first[1] :]
    assert made.tokens == sum(d.model_input.length for p in made.data for d in p.datums)
    assert made.target_tokens == sum(
        sum(w) for p in made.data for d in p.datums for w in [d.loss_fn_inputs["weights"].data]
    )


def test_an_example_that_is_no_pair_is_refused(service: StandInService) -> None:
    single = pairs(1)[0].model_copy(update={"rejected": None})
    with pytest.raises(BadInputError, match="is no preference pair"):
        trainer(service).prepare([single], settings())


async def test_the_base_is_measured_once_then_every_step_lowers_the_loss(
    service: StandInService, tmp_path: Path
) -> None:
    budget = Budget(usd=5.0)
    checkpoint, steps = await train(service, tmp_path, budget=budget)
    assert service.methods() == [
        "ServiceClient",
        "create_lora_training_client",
        "ServiceClient",
        "create_sampling_client",
        *["compute_logprobs"] * 8,  # both answers of 4 pairs, once
        *["forward_backward_custom", "optim_step"] * 6,  # 4 pairs in batches of 2, 3 epochs
        "save_state",
        "save_weights_for_sampler",
    ]
    assert next(c for c in service.calls if c.method == "create_sampling_client").args == {
        "base_model": INKLING
    }
    losses = [s.loss for s in steps]
    assert losses[0] == pytest.approx(math.log(2), abs=1e-6)  # the adapter starts as the base
    assert all(b is not None and a is not None and b < a for a, b in zip(losses, losses[2:], strict=False))
    assert losses[-1] is not None and losses[-1] < 0.5 * math.log(2), losses
    assert checkpoint.step == 6 and checkpoint.model.startswith("tinker://")
    measured = sum(c.args["tokens"] - 1 for c in service.calls if c.method == "compute_logprobs")  # as Datums
    trained = 2 * sum(s.tokens for s in steps)  # a custom loss's forward pass, then its forward and backward
    assert budget.spent == pytest.approx((measured + trained) * PRICE)


async def test_a_resume_restores_the_weights_and_measures_the_same_base(
    service: StandInService, tmp_path: Path
) -> None:
    _, first = await train(service, tmp_path, epochs=1)
    state = service.saved["dpo-1-step2"]
    assert state == 2 and service.saved_offsets["dpo-1-step2"] == service.offsets
    resume = Checkpoint(
        model="tinker://run-1/weights/dpo-1-step2",
        base_model=INKLING,
        step=2,
        state="tinker://run-1/weights/dpo-1-step2",
    )
    service.offsets = {}  # the service's live weights are gone; only the saved state holds them
    service.calls.clear()
    _, rest = await train(service, tmp_path, resume=resume, epochs=3)
    assert service.methods()[:4] == [
        "ServiceClient",
        "create_training_client_from_state_with_optimizer",
        "ServiceClient",
        "create_sampling_client",
    ]
    assert [s.step for s in rest] == [3, 4, 5, 6]
    assert rest[0].loss is not None and first[-1].loss is not None
    assert rest[0].loss < first[0].loss  # it goes on from the trained weights, not from the base


async def test_a_timed_out_step_is_waited_on_never_trained_twice(
    service: StandInService, tmp_path: Path
) -> None:
    service.script["forward_backward_custom"] = [Late(0.6)]
    _, steps = await train(service, tmp_path, epochs=1, trainer_args={"timeout_s": 0.2})
    assert service.methods().count("forward_backward_custom") == 2  # two steps, each sent once
    assert service.methods().count("optim_step") == 2 and service.applied == 2
    assert [s.step for s in steps] == [1, 2]


async def test_a_failed_step_poisons_the_client_so_the_training_stops_there(
    service: StandInService, tmp_path: Path
) -> None:
    """The real client refuses every request after a failed custom-loss call: the retry of the step is
    refused, and the training stops with an error naming the step, nothing trained twice."""
    service.script["forward_backward_custom"] = [status_error(500)]
    with pytest.raises(TrainingError, match="poisoned") as caught:
        await train(service, tmp_path)
    assert caught.value.step == 1
    assert service.methods().count("forward_backward_custom") == 2  # the first failed, the retry refused
    assert service.applied == 0


async def test_a_refused_base_measurement_stops_before_any_step(
    service: StandInService, tmp_path: Path
) -> None:
    service.script["compute_logprobs"] = [status_error(400)]
    with pytest.raises(TrainingError, match="measuring the base model on the preference pairs failed"):
        await train(service, tmp_path)
    assert "forward_backward_custom" not in service.methods()


async def test_dpo_after_a_fine_tune_starts_from_the_live_checkpoint_its_reference(
    service: StandInService, tmp_path: Path
) -> None:
    """A first training leaves the live checkpoint, its weights moved from the base; DPO starts from its
    saved state (the weights, a fresh optimizer) and measures the pairs through a sampler of its sampler
    weights, so the first step's policy is the reference: loss log 2 and no drift. Measured against the
    base instead, the first loss would not be log 2."""
    live, _ = await train(service, tmp_path, epochs=1)
    assert live.model == "tinker://run-1/sampler_weights/dpo-1-step2" and any(service.offsets.values())
    start = Checkpoint(model=live.model, base_model=INKLING, step=live.step, state=live.state)
    service.calls.clear()
    steps: list[StepMetrics] = []
    chosen = settings(start=start, epochs=2)
    made = trainer(service).prepare(pairs(), chosen)
    checkpoint = await trainer(service).train(
        made, chosen, folder=tmp_path / "dpo-2", budget=Budget(), on_step=steps.append
    )
    assert service.methods()[:4] == [
        "ServiceClient",
        "create_training_client_from_state",  # weights only: DPO's optimizer starts fresh
        "ServiceClient",
        "create_sampling_client",
    ]
    opened, sampler = service.calls[1], service.calls[3]
    assert opened.args == {"path": live.state} and sampler.args == {"model_path": live.model}
    assert steps[0].loss == pytest.approx(math.log(2), abs=1e-6)
    assert steps[0].chosen_drift == pytest.approx(0.0, abs=1e-6)
    drifts = [s.chosen_drift for s in steps]
    assert drifts[-1] is not None and drifts[-1] > 0, drifts  # the second epoch sees what the first moved
    assert checkpoint.model == "tinker://run-1/sampler_weights/dpo-2-step4"


def test_a_live_checkpoint_with_no_state_to_load_is_refused_before_anything_runs(
    service: StandInService,
) -> None:
    start = Checkpoint(model="tinker://run-1/somewhere-else", base_model=INKLING, step=4)
    with pytest.raises(BadInputError, match="no state Tinker can load it from"):
        trainer(service).prepare(pairs(), settings(start=start))
    assert service.calls == []
    beside = Checkpoint(model="tinker://run-7/sampler_weights/w-step4", base_model=INKLING, step=4)
    assert trainer(service).prepare(pairs(), settings(start=beside, learning_rate=None)).learning_rate == (
        DPO_LEARNING_RATE
    )  # its state lies beside its sampler weights, under the same name


def test_the_chosen_answers_own_loss_adds_to_dpos() -> None:
    import torch

    made = TinkerTrainer(rendering=inkling()).prepare(pairs(2), settings())
    data: list[PairDatums] = made.data
    for pair in data:
        pair.reference = (-5.0, -5.0)
    rows = [torch.tensor(d.loss_fn_inputs["weights"].data) * -0.5 for p in data for d in p.datums]
    datums = [d for p in data for d in p.datums]
    plain, metrics = dpo_loss(data, 0.5)(datums, rows)
    with_nll, _ = dpo_loss(data, 0.5, rpo_alpha=1.0)(datums, rows)
    assert float(with_nll - plain) == pytest.approx(0.5, rel=1e-4)  # -log p of each chosen token, 0.5
    assert metrics["chosen_drift"] == pytest.approx(
        sum(float(rows[2 * i].sum()) + 5.0 for i in range(2)) / 2, rel=1e-5
    )
