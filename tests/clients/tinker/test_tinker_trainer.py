"""The Tinker trainer at the SDK boundary: real Datums rendered by Inkling's renderer go to a stand-in
service with the SDK's method signatures, which answers with the SDK's types and fails on cue (a
capacity pause, a 5xx, a hang past the timeout, a refused request)."""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("tinker_cookbook")

from helpers.renderers import INKLING, inkling
from helpers.tinker_standin import (
    HANG,
    Late,
    StandInFuture,
    StandInSamplingClient,
    StandInService,
    StandInServiceClient,
    StandInTrainingClient,
    capacity_pause,
    status_error,
)
from helpers.weather_runs import weather_machine, weather_run

from machine.budget import Budget, price_of
from machine.clients.tinker import TinkerTrainer
from machine.errors import BadInputError, BudgetExceeded, TrainingError, UnknownPriceError
from machine.learn.train import example_of
from machine.training import Checkpoint, Prepared, StepMetrics, TrainSettings, epoch_order

PRICE = 11.22 / 1e6
"""Inkling's training price per token."""

CITIES = ["Paris", "Oslo", "Lima"]


@pytest.fixture(scope="module")
def prepared() -> Prepared:
    examples = [example_of(weather_run(c), weather_machine()) for c in CITIES]
    return TinkerTrainer(rendering=inkling()).prepare([e for e in examples if e], settings())


@pytest.fixture
def service() -> Any:
    made = StandInService()
    yield made
    made.release.set()  # lets a hung call's thread end


def settings(**changes: Any) -> TrainSettings:
    return TrainSettings(base_model=INKLING, **{"batch_size": 1, "epochs": 2, **changes})


def trainer(service: StandInService, **changes: Any) -> TinkerTrainer:
    return TinkerTrainer(service=service, rendering=inkling(), **{"backoff_s": 0.01, **changes})


async def train(
    service: StandInService,
    prepared: Prepared,
    tmp_path: Path,
    *,
    budget: Budget | None = None,
    resume: Checkpoint | None = None,
    trainer_args: dict[str, Any] | None = None,
    **changes: Any,
) -> tuple[Checkpoint, list[StepMetrics]]:
    steps: list[StepMetrics] = []
    checkpoint = await trainer(service, **(trainer_args or {})).train(
        prepared,
        settings(**changes),
        folder=tmp_path / "t-0001",
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
        (StandInServiceClient, "ServiceClient", "create_lora_training_client"),
        (StandInServiceClient, "ServiceClient", "create_training_client_from_state"),
        (StandInServiceClient, "ServiceClient", "create_training_client_from_state_with_optimizer"),
        (StandInTrainingClient, "TrainingClient", "forward_backward"),
        (StandInTrainingClient, "TrainingClient", "optim_step"),
        (StandInTrainingClient, "TrainingClient", "save_state"),
        (StandInTrainingClient, "TrainingClient", "save_weights_for_sampler"),
        (StandInTrainingClient, "TrainingClient", "save_weights_and_get_sampling_client"),
        (StandInTrainingClient, "TrainingClient", "create_sampling_client"),
        (StandInSamplingClient, "SamplingClient", "sample"),
        (StandInFuture, "APIFuture", "result"),
    ],
)
def test_the_stand_in_has_the_sdks_signatures(stand_in: type, real: str, method: str) -> None:
    import tinker  # here, not at the top: it imports torch, which every test collection would wait for

    assert shape(getattr(stand_in, method)) == shape(getattr(getattr(tinker, real), method))


async def test_the_calls_in_order(service: StandInService, prepared: Prepared, tmp_path: Path) -> None:
    budget = Budget(usd=5.0)
    checkpoint, steps = await train(service, prepared, tmp_path, budget=budget)
    assert service.methods() == [
        "ServiceClient",
        "create_lora_training_client",
        *["forward_backward", "optim_step"] * 6,  # 3 sequences, a batch of 1, 2 epochs
        "save_state",
        "save_weights_for_sampler",
    ]
    assert service.calls[1].args == {"base_model": INKLING, "rank": 32, "seed": 0}
    assert {c.args["learning_rate"] for c in service.calls if c.method == "optim_step"} == {2e-4}
    assert checkpoint == Checkpoint(
        model="tinker://run-1/sampler_weights/t-0001-step6",
        base_model=INKLING,
        step=6,
        state="tinker://run-1/weights/t-0001-step6",
    )
    assert [(s.step, s.epoch) for s in steps] == [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2)]
    assert [s.loss for s in steps] == pytest.approx([2.0 * 0.5**n for n in range(6)])
    sent = [c.args["tokens"] for c in service.calls if c.method == "forward_backward"]
    # each epoch walks every sequence once, in the order the seed draws for it (the local trainer's too)
    lengths = [d.model_input.length for d in prepared.data]
    in_order = [lengths[i] for epoch in (1, 2) for i in epoch_order(len(lengths), 0, epoch)]
    assert [s.tokens for s in steps] == sent == in_order
    assert sorted(sent[:3]) == sorted(sent[3:]) == sorted(lengths)
    assert sum(s.cost_usd for s in steps) == pytest.approx(sum(sent) * PRICE)
    assert budget.spent_by_kind["training"] == pytest.approx(sum(sent) * PRICE)
    assert all(s.learning_rate == 2e-4 and s.sequences == 1 and s.seconds >= 0 for s in steps)


async def test_batches_hold_batch_size_sequences(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    _, steps = await train(service, prepared, tmp_path, batch_size=2, epochs=1)
    assert [c.args["sequences"] for c in service.calls if c.method == "forward_backward"] == [2, 1]
    assert [s.sequences for s in steps] == [2, 1]


async def test_a_linear_schedule_sends_each_step_its_decayed_rate(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    _, steps = await train(service, prepared, tmp_path, lr_schedule="linear")
    sent = [c.args["learning_rate"] for c in service.calls if c.method == "optim_step"]
    assert sent == pytest.approx([2e-4 * (1 - k / 6) for k in range(6)])  # 6 steps, from the rate toward 0
    assert [s.learning_rate for s in steps] == sent


async def test_a_capacity_pause_is_waited_out(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"forward_backward": [None, capacity_pause()]}  # the second step pauses once
    checkpoint, steps = await train(service, prepared, tmp_path, epochs=1)
    assert service.methods()[2:10] == ["forward_backward", "optim_step"] * 4  # step 2 sent twice
    assert [s.step for s in steps] == [1, 2, 3] and checkpoint.step == 3
    assert service.applied == 3  # the paused step's optimizer step was not applied twice


async def test_a_persistent_server_error_stops_with_the_step_named(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"forward_backward": [None] + [status_error(503)] * 10}
    budget = Budget(usd=5.0)
    steps: list[StepMetrics] = []
    with pytest.raises(TrainingError) as caught:
        await trainer(service, retries=2).train(
            prepared, settings(), folder=tmp_path / "t", budget=budget, on_step=steps.append
        )
    error = caught.value
    assert "training step 2 failed 3 times (3x a server error (503))" in str(error)
    assert (error.step, error.checkpoint) == (2, None)
    assert [s.step for s in steps] == [1]  # the failed step reported nothing
    assert service.methods().count("forward_backward") == 4
    assert "save_weights_for_sampler" not in service.methods() and "save_state" not in service.methods()
    first = prepared.data[epoch_order(len(prepared.data), 0, 1)[0]].model_input.length
    assert budget.spent_by_kind["training"] == pytest.approx(first * PRICE)  # nothing for the failed one
    assert budget.reserved == 0.0


async def test_a_refused_request_is_not_retried(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"forward_backward": [status_error(400)]}
    with pytest.raises(TrainingError, match="training step 1 failed: Error code: 400"):
        await train(service, prepared, tmp_path)
    assert service.methods().count("forward_backward") == 1


async def test_a_hang_past_the_timeout_is_cut_off_without_blocking_the_loop(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"forward_backward": [HANG]}
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        failed = r"training step 1 failed 2 times \(2x no reply within 0.2 s\)"
        with pytest.raises(TrainingError, match=failed):
            await train(service, prepared, tmp_path, trainer_args={"timeout_s": 0.2, "retries": 1})
        group.cancel_scope.cancel()
    assert time.monotonic() - started < 10  # bounded: the hung calls block for up to 20 s each
    assert ticks >= 10  # the event loop ran on while the calls hung
    assert service.methods().count("forward_backward") == 1  # waited on, never sent again


async def test_a_step_that_timed_out_is_waited_on_never_sent_twice(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"forward_backward": [Late(0.5)]}  # step 1 lands at once, its answer comes late
    checkpoint, steps = await train(
        service, prepared, tmp_path, epochs=1, trainer_args={"timeout_s": 0.2, "retries": 3}
    )
    assert [s.step for s in steps] == [1, 2, 3] and checkpoint.step == 3
    assert service.methods().count("forward_backward") == 3
    assert service.applied == 3  # resent, step 1 would have been trained twice


async def test_a_start_that_timed_out_opens_one_training_run(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"create_lora_training_client": [Late(0.5)]}
    await train(service, prepared, tmp_path, epochs=1, trainer_args={"timeout_s": 0.2, "retries": 3})
    assert service.methods().count("create_lora_training_client") == 1


async def test_a_step_never_answered_stops_saying_it_was_sent_once(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"forward_backward": [Late(5.0)]}
    with pytest.raises(TrainingError, match="it was sent once and may still land") as stopped:
        await train(service, prepared, tmp_path, epochs=1, trainer_args={"timeout_s": 0.1, "retries": 1})
    assert service.methods().count("forward_backward") == 1 and stopped.value.step == 1


async def test_the_budget_refuses_a_step_before_it_is_sent(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    first = prepared.data[0].model_input.length * PRICE
    budget = Budget(usd=first)  # the first step spends it all
    steps: list[StepMetrics] = []
    with pytest.raises(BudgetExceeded):
        await trainer(service).train(
            prepared, settings(), folder=tmp_path / "t", budget=budget, on_step=steps.append
        )
    assert service.methods().count("forward_backward") == 1
    assert [s.step for s in steps] == [1]


async def test_an_unknown_training_price_is_refused_before_anything_starts(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    assert price_of("train:someone/Unpriced") is None
    with pytest.raises(UnknownPriceError):
        await trainer(service).train(
            prepared,
            TrainSettings(base_model="someone/Unpriced"),
            folder=tmp_path / "t",
            budget=Budget(usd=1.0),
            on_step=lambda _: None,
        )
    assert service.calls == []


async def test_resume_skips_the_steps_done(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    service.script = {"forward_backward": [None, None, status_error(500)]}
    with pytest.raises(TrainingError) as caught:
        await train(service, prepared, tmp_path, trainer_args={"retries": 0, "save_every": 2})
    saved = caught.value.checkpoint
    assert saved == Checkpoint(
        model="tinker://run-1/weights/t-0001-step2",
        base_model=INKLING,
        step=2,
        state="tinker://run-1/weights/t-0001-step2",
    )
    service.calls.clear()
    service.applied = service.moments = 0  # a new client knows only what the saved state holds
    checkpoint, steps = await train(service, prepared, tmp_path, resume=saved)
    assert service.methods() == [
        "ServiceClient",
        "create_training_client_from_state_with_optimizer",
        *["forward_backward", "optim_step"] * 4,
        "save_state",
        "save_weights_for_sampler",
    ]
    assert service.calls[1].args == {"path": "tinker://run-1/weights/t-0001-step2"}
    assert [s.step for s in steps] == [3, 4, 5, 6]
    assert [s.loss for s in steps] == pytest.approx([2.0 * 0.5**n for n in range(2, 6)])
    assert checkpoint.step == 6 and checkpoint.model.endswith("/sampler_weights/t-0001-step6")
    # Adam's moments came back with the weights: the optimizer went on from its 2 steps, not from none
    assert (service.applied, service.moments) == (6, 6)


def test_the_stand_in_keeps_weights_and_optimizer_state_apart() -> None:
    """As the service does: a client made from a state has its weights back, its optimizer state only
    when asked for, so a trainer resuming the wrong way is caught."""
    service = StandInService(applied=3, moments=3, saved={"s": 2}, saved_moments={"s": 2})
    client = service()
    client.create_training_client_from_state("tinker://run-1/weights/s").result()
    assert (service.applied, service.moments) == (2, 0)
    client.create_training_client_from_state_with_optimizer("tinker://run-1/weights/s").result()
    assert (service.applied, service.moments) == (2, 2)


async def test_resume_needs_a_saved_state(
    service: StandInService, prepared: Prepared, tmp_path: Path
) -> None:
    sampler_only = Checkpoint(model="tinker://run-1/sampler_weights/x", base_model=INKLING, step=2)
    with pytest.raises(BadInputError, match="saved no training state"):
        await train(service, prepared, tmp_path, resume=sampler_only)
    too_far = sampler_only.model_copy(update={"state": "tinker://run-1/weights/x", "step": 7})
    with pytest.raises(BadInputError, match="cannot resume at step 7: this training has 6 steps"):
        await train(service, prepared, tmp_path, resume=too_far)
    assert service.calls == []


async def test_nothing_to_train_is_refused(service: StandInService, tmp_path: Path) -> None:
    empty = TinkerTrainer(rendering=inkling()).prepare([], settings())
    with pytest.raises(BadInputError, match="nothing to train"):
        await train(service, empty, tmp_path)
    assert service.calls == []


async def test_without_a_key_the_real_sdk_refuses_at_the_start(
    prepared: Prepared, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real ServiceClient, with no key anywhere: refused before any request, and not retried."""
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no stored credentials (~/.tinker)
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9")
    steps: list[StepMetrics] = []
    refused = r"starting training on Tinker failed: .*TINKER_API_KEY"
    with pytest.raises(TrainingError, match=refused) as caught:
        await TinkerTrainer(rendering=inkling(), backoff_s=0.01).train(
            prepared, settings(), folder=tmp_path / "t", budget=Budget(), on_step=steps.append
        )
    assert caught.value.step == 0 and steps == []


def test_the_loss_is_the_cookbooks_mean_per_target_token(prepared: Prepared) -> None:
    """The step's loss is tinker-cookbook's ``compute_mean_nll`` (its supervised recipe's train_mean_nll):
    each target token weighs the same across the batch, so a long example counts more than a short one.
    Checked on log-probabilities that differ by sequence and by token."""
    from tinker import types
    from tinker_cookbook.supervised.common import compute_mean_nll

    from machine.clients.tinker import Batch, loss_of

    data = list(prepared.data or [])[:3]
    logprobs = [
        types.TensorData(data=[-(0.1 + i + t / 100) for t in range(d.model_input.length)], dtype="float32")
        for i, d in enumerate(data)
    ]
    output = types.ForwardBackwardOutput(
        loss_fn_output_type="ArrayRecord", loss_fn_outputs=[{"logprobs": lp} for lp in logprobs], metrics={}
    )
    ours = loss_of(output, Batch(1, 1, data))
    theirs = compute_mean_nll(logprobs, [d.loss_fn_inputs["weights"] for d in data])
    assert ours == pytest.approx(theirs)
    per_example = (
        sum(
            compute_mean_nll([lp], [d.loss_fn_inputs["weights"]])
            for lp, d in zip(logprobs, data, strict=True)
        )
        / 3
    )
    assert ours != pytest.approx(per_example)  # not a mean of per-example means
