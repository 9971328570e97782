"""RL on Tinker at the SDK boundary (issue 53): RL sequences become the cookbook's datums for the built-in
``importance_sampling`` and ``ppo`` losses (the real SDK's types, shifted by one, nothing at the masked
positions), the same as the cookbook's own ``trajectory_to_data`` makes less its ``mask``; a step sends
them to a stand-in that checks the shape the service reads, reserves its tokens first, and reports the
loss and the ratios; a sampler of the latest weights samples ids with a log q each, which become the next
step's sequences; and a training client whose custom-loss call failed refuses everything after it, as the
real one does, so DPO stops with an error rather than retrying on it."""

from __future__ import annotations

import inspect
import math
from typing import Any

import pytest

pytest.importorskip("tinker_cookbook")

from helpers.renderers import INKLING
from helpers.tinker_standin import (
    POISONED,
    StandInService,
    StandInTrainingClient,
    base_logprob,
    datum_problem,
    status_error,
)

from machine.budget import Budget, price_of
from machine.clients._rl_turns import RLSequence, TurnRecord, sequences_of
from machine.clients.tinker import TinkerTrainer
from machine.clients.tinker._rl import (
    LOSS_INPUTS,
    latest_sampler,
    loss_config,
    rl_datum,
    rl_step,
    sample,
)
from machine.errors import BadInputError, BudgetExceeded, UnknownPriceError
from machine.runs import Usage

PRICE = 11.22 / 1e6
"""Inkling's training price per token."""


@pytest.fixture
def service() -> Any:
    made = StandInService()
    yield made
    made.release.set()


def trainer(service: StandInService) -> TinkerTrainer:
    return TinkerTrainer(service=service, backoff_s=0.01, timeout_s=5.0)


def client(service: StandInService) -> StandInTrainingClient:
    return StandInTrainingClient(service)


def on_policy(prompt: list[int], reply: list[int], advantage: float | None) -> RLSequence:
    """A sequence as the stand-in's base would have sampled it: log q is the base's log p."""
    return RLSequence(
        [*prompt, *reply],
        [False] * len(prompt) + [True] * len(reply),
        [0.0] * len(prompt) + [base_logprob(t) for t in reply],
        advantage,
    )


def values(datum: Any, name: str) -> list[Any]:
    return list(datum.loss_fn_inputs[name].data)


def test_a_sequence_is_the_cookbooks_datum_shifted_by_one() -> None:
    from tinker import types

    mask = [False, False, False, True, True, True]
    logq = [-9.0, -9.0, -9.0, -0.5, -0.25, -2.0]  # never read where the mask is off
    sequence = RLSequence([1, 2, 3, 4, 5, 6], mask, logq, 0.5)
    datum = rl_datum(sequence)
    assert isinstance(datum, types.Datum) and isinstance(datum.model_input, types.ModelInput)
    assert datum.model_input.to_ints() == [1, 2, 3, 4, 5]
    assert list(datum.loss_fn_inputs) == list(LOSS_INPUTS)
    assert all(isinstance(t, types.TensorData) for t in datum.loss_fn_inputs.values())
    assert {k: t.dtype for k, t in datum.loss_fn_inputs.items()} == {
        "target_tokens": "int64",
        "logprobs": "float32",
        "advantages": "float32",
    }
    assert values(datum, "target_tokens") == [2, 3, 4, 5, 6]
    assert values(datum, "logprobs") == [0.0, 0.0, -0.5, -0.25, -2.0]
    assert values(datum, "advantages") == [0.0, 0.0, 0.5, 0.5, 0.5]
    assert datum_problem([datum], "importance_sampling", None) is None
    assert datum_problem([datum], "ppo", None) is None


def test_a_tool_result_between_turns_carries_no_advantage_and_no_log_q() -> None:
    turns = [
        TurnRecord(prompt=[1, 2], tokens=[10, 11], logprobs=[-0.1, -0.2], stopped=True),
        TurnRecord(prompt=[1, 2, 10, 11, 50, 51, 52], tokens=[12], logprobs=[-0.3], stopped=True),
    ]
    (sequence,) = sequences_of(turns, advantage=-1.5)
    datum = rl_datum(sequence)
    assert values(datum, "target_tokens") == [2, 10, 11, 50, 51, 52, 12]
    assert values(datum, "advantages") == [0.0, -1.5, -1.5, 0.0, 0.0, 0.0, -1.5]
    assert values(datum, "logprobs") == pytest.approx([0.0, -0.1, -0.2, 0.0, 0.0, 0.0, -0.3])


def test_the_datums_match_the_cookbooks_trajectory_to_data() -> None:
    from tinker import types
    from tinker_cookbook.completers import TokensWithLogprobs
    from tinker_cookbook.rl.data_processing import trajectory_to_data
    from tinker_cookbook.rl.types import Trajectory, Transition

    transitions = [
        Transition(
            types.ModelInput.from_ints([1, 2, 3]), TokensWithLogprobs([7, 8], [-0.5, -1.0]), 0.0, False
        ),
        Transition(
            types.ModelInput.from_ints([1, 2, 3, 7, 8, 4]), TokensWithLogprobs([9], [-0.25]), 1.0, True
        ),
    ]
    theirs = trajectory_to_data(Trajectory(transitions, types.ModelInput.from_ints([])), 0.75)
    turns = [TurnRecord(t.ob.to_ints(), t.ac.tokens, t.ac.logprobs, True) for t in transitions]
    ours = [rl_datum(s) for s in sequences_of(turns, 0.75)]
    assert len(ours) == len(theirs) == 1
    for mine, cookbook in zip(ours, theirs, strict=True):
        assert mine.model_input.to_ints() == cookbook.model_input.to_ints()
        sent = {k: v for k, v in cookbook.loss_fn_inputs.items() if k != "mask"}  # rl.train drops it
        assert set(mine.loss_fn_inputs) == set(sent)
        for name, tensor in sent.items():
            assert mine.loss_fn_inputs[name].dtype == tensor.dtype, name
            assert values(mine, name) == pytest.approx(list(tensor.data)), name
        assert datum_problem([cookbook], "importance_sampling", None) is not None  # its mask is refused
        assert datum_problem([mine], "importance_sampling", None) is None


def test_the_stand_in_refuses_what_the_service_would() -> None:
    from tinker import types

    good = rl_datum(on_policy([1, 2], [3, 4], 1.0))
    ids = good.model_input

    def datum(**inputs: Any) -> Any:
        return types.Datum(model_input=ids, loss_fn_inputs={**good.loss_fn_inputs, **inputs})

    float_targets = types.TensorData(data=[2.0, 3.0, 4.0], dtype="float32")
    assert "int64" in str(datum_problem([datum(target_tokens=float_targets)], "ppo", None))
    short = types.TensorData(data=[0.0, 1.0], dtype="float32")
    assert "2 entries for 3 inputs" in str(datum_problem([datum(advantages=short)], "ppo", None))
    weights = types.TensorData(data=[1.0, 1.0, 1.0], dtype="float32")
    assert "weights" in str(datum_problem([datum(weights=weights)], "importance_sampling", None))
    assert "cross_entropy takes" in str(datum_problem([good], "cross_entropy", None))
    assert "not one importance_sampling takes" in str(
        datum_problem([good], "importance_sampling", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1})
    )
    assert datum_problem([good], "ppo", loss_config("ppo", 0.1)) is None


def test_a_sequence_without_a_target_is_refused() -> None:
    with pytest.raises(BadInputError, match="2 tokens at least"):
        rl_datum(RLSequence([5], [False], [0.0], 1.0))
    with pytest.raises(BadInputError, match="unknown RL loss"):
        loss_config("dpo")  # type: ignore[arg-type]


async def test_an_importance_sampling_step_sends_the_datums_then_steps_and_charges(
    service: StandInService,
) -> None:
    budget = Budget(usd=5.0)
    batch = [
        on_policy([1, 2, 3], [4, 5], 1.0),
        on_policy([1, 2, 3], [6, 7, 8], -1.0),
        on_policy([1, 2, 3], [4, 9], 0.0),  # a flat group's: no gradient, not sent
        on_policy([1, 2, 3], [4, 4], None),  # nothing scored: no gradient, not sent
    ]
    training = client(service)
    metrics = await rl_step(
        trainer(service), training, batch, base_model=INKLING, budget=budget, learning_rate=1e-5
    )
    assert service.methods() == ["forward_backward", "optim_step"]
    fb, optim = service.calls
    assert fb.args == {"sequences": 2, "tokens": 4 + 5, "loss_fn": "importance_sampling"}
    assert optim.args == {"learning_rate": 1e-5}
    (sent,) = service.sent
    assert [d.model_input.to_ints() for d in sent] == [[1, 2, 3, 4], [1, 2, 3, 6, 7]]
    assert [values(d, "advantages") for d in sent] == [[0, 0, 1, 1], [0, 0, -1, -1, -1]]
    # on the policy that sampled, every ratio is 1: the loss is -(sum of A over trained tokens)
    assert metrics.loss_sum == pytest.approx(-(2 * 1.0 + 3 * -1.0))
    assert metrics.loss == pytest.approx(metrics.loss_sum / 4)  # per sequence given, as the local step
    assert (metrics.sequences, metrics.skipped, metrics.tokens, metrics.target_tokens) == (2, 2, 9, 5)
    assert metrics.ratio == pytest.approx(1.0) and metrics.kl_sample_train == pytest.approx(0.0, abs=1e-6)
    assert metrics.clipped is None
    assert metrics.metrics["loss:sum"] == pytest.approx(metrics.loss_sum)
    assert metrics.cost_usd == pytest.approx(9 * PRICE) and budget.spent == pytest.approx(9 * PRICE)
    # the step moved the weights towards the better reply and away from the worse one
    assert service.offsets[(1, 2, 3, 4, 5)] > 0 > service.offsets[(1, 2, 3, 6, 7, 8)]


async def test_a_ppo_step_clips_the_ratio_and_sends_another_epsilon_in_its_config(
    service: StandInService,
) -> None:
    far = RLSequence(
        [1, 2, 3, 4], [False, False, True, True], [0, 0, base_logprob(3) - 1.0, base_logprob(4)], 2.0
    )
    metrics = await rl_step(
        trainer(service),
        client(service),
        [far],
        base_model=INKLING,
        budget=Budget(),
        learning_rate=1e-5,
        loss="ppo",
    )
    # token 3's ratio is e > 1.2 with A > 0: clipped to 1.2, token 4's is 1
    assert metrics.ratio == pytest.approx((math.e + 1.0) / 2, rel=1e-5)
    assert metrics.clipped == pytest.approx(0.5)
    assert metrics.loss_sum == pytest.approx(-(1.2 * 2.0 + 1.0 * 2.0), rel=1e-5)
    assert service.calls[0].args["loss_fn"] == "ppo" and "loss_fn_config" not in service.calls[0].args
    await rl_step(
        trainer(service),
        client(service),
        [far],
        base_model=INKLING,
        budget=Budget(),
        learning_rate=1e-5,
        loss="ppo",
        clip=0.1,
    )
    assert service.calls[2].args["loss_fn_config"] == pytest.approx(
        {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}
    )


async def test_the_step_is_reserved_before_anything_is_sent(service: StandInService) -> None:
    batch = [on_policy([1, 2, 3], [4, 5], 1.0)]
    spent = Budget(usd=1e-9)
    spent.charge("train:" + INKLING, Usage(input_tokens=1000), kind="training")
    with pytest.raises(BudgetExceeded):
        await rl_step(
            trainer(service), client(service), batch, base_model=INKLING, budget=spent, learning_rate=1e-5
        )
    tight = Budget(usd=4 * PRICE)  # the step's 4 tokens fit, 5 would not: reserved at their price
    await rl_step(
        trainer(service), client(service), batch, base_model=INKLING, budget=tight, learning_rate=1e-5
    )
    assert tight.spent == pytest.approx(4 * PRICE)
    with pytest.raises(BudgetExceeded):
        await rl_step(
            trainer(service), client(service), batch, base_model=INKLING, budget=tight, learning_rate=1e-5
        )
    with pytest.raises(UnknownPriceError):
        await rl_step(
            trainer(service),
            client(service),
            batch,
            base_model="org/unpriced",
            budget=Budget(usd=1.0),
            learning_rate=1e-5,
        )
    assert service.methods() == ["forward_backward", "optim_step"]  # only the step that fitted was sent


async def test_a_step_with_nothing_to_train_sends_nothing(service: StandInService) -> None:
    flat = [on_policy([1, 2], [3], 0.0), on_policy([1, 2], [4], 0.0)]
    metrics = await rl_step(
        trainer(service),
        client(service),
        flat,
        base_model=INKLING,
        budget=Budget(usd=1.0),
        learning_rate=1e-5,
    )
    assert (metrics.sequences, metrics.skipped, metrics.loss, metrics.cost_usd) == (0, 2, None, 0.0)
    assert service.calls == []


async def test_a_server_error_on_the_step_is_tried_again(service: StandInService) -> None:
    service.script["forward_backward"] = [status_error(500)]
    metrics = await rl_step(
        trainer(service),
        client(service),
        [on_policy([1, 2], [3, 4], 1.0)],
        base_model=INKLING,
        budget=Budget(),
        learning_rate=1e-5,
    )
    assert service.methods() == ["forward_backward", "optim_step"] * 2
    assert metrics.sequences == 1 and metrics.loss_sum is not None


async def test_the_latest_weights_sample_ids_with_log_q_that_train_on_policy(service: StandInService) -> None:
    budget = Budget(usd=5.0)
    tinker_trainer, training = trainer(service), client(service)
    sampler = await latest_sampler(tinker_trainer, training, step=0, saved=None)
    prompt = [1, 2, 3]
    samples, cost = await sample(
        tinker_trainer, sampler, prompt, 4, model=INKLING, budget=budget, max_tokens=6, stop=[7], seed=3
    )
    assert len(samples) == 4
    for one in samples:
        assert one.prompt == prompt and 1 <= len(one.tokens) <= 7
        assert one.logprobs == pytest.approx([base_logprob(t) for t in one.tokens])
        assert one.stopped == (one.tokens[-1] == 7)
    call = service.calls[-1]
    assert call.method == "sample"
    assert call.args == {
        "tokens": 3,
        "num_samples": 4,
        "temperature": 1.0,
        "top_k": -1,
        "top_p": 1.0,
        "max_tokens": 6,
    }
    price = price_of(INKLING)
    assert price is not None
    out = sum(len(s.tokens) for s in samples)
    assert budget.spent == cost == pytest.approx((12 * price.input + out * price.output) / 1e6)
    # rewarded and centred in their group, the samples are the next step's sequences, trained on policy
    rewards = [float(len(s.tokens)) for s in samples]
    mean = sum(rewards) / len(rewards)
    sequences = [RLSequence(*s.sequence_parts(), r - mean) for s, r in zip(samples, rewards, strict=True)]
    metrics = await rl_step(
        tinker_trainer, training, sequences, base_model=INKLING, budget=budget, learning_rate=0.1
    )
    assert metrics.ratio == pytest.approx(1.0, abs=1e-5)
    # a sampler of the new weights puts more on the best sample's tokens than the first did
    best = max(range(4), key=lambda i: rewards[i])
    newer = await latest_sampler(tinker_trainer, training, step=1, saved=None)
    again, _ = await sample(
        tinker_trainer, newer, prompt, 4, model=INKLING, budget=budget, max_tokens=6, stop=[7], seed=3
    )
    assert again[best].tokens == samples[best].tokens
    assert rewards[best] > mean  # the seeded draws differ in length
    assert sum(again[best].logprobs) > sum(samples[best].logprobs)
    assert service.methods().count("save_weights_and_get_sampling_client") == 2


async def test_sampling_is_reserved_at_the_sampled_models_price(service: StandInService) -> None:
    sampler = await latest_sampler(trainer(service), client(service), step=0, saved=None)
    with pytest.raises(UnknownPriceError):
        await sample(
            trainer(service), sampler, [1, 2], 2, model="org/unpriced", budget=Budget(usd=1.0), max_tokens=4
        )
    assert "sample" not in service.methods()


async def test_a_failed_custom_loss_call_poisons_the_training_client(service: StandInService) -> None:
    from tinker import types

    training = client(service)
    datum = rl_datum(on_policy([1, 2], [3, 4], 1.0))
    service.script["forward_backward_custom"] = [status_error(500)]

    def loss(data: list[Any], logprobs: list[Any]) -> tuple[Any, dict[str, float]]:
        return sum(lp.sum() for lp in logprobs), {}

    failed = training.forward_backward_custom([datum], loss)
    optim = training.optim_step(types.AdamParams(learning_rate=1e-5))
    with pytest.raises(Exception, match="500"):
        failed.result()
    for later in (
        optim,
        training.forward_backward([datum], "importance_sampling"),
        training.forward_backward_custom([datum], loss),
        training.save_state("s"),
        training.save_weights_for_sampler("s"),
        training.save_weights_and_get_sampling_client(),
    ):
        with pytest.raises(RuntimeError, match="poisoned"):
            later.result()
    # what the stand-in models is the installed SDK's: a failed custom call poisons every later turn
    import tinker

    assert "poisoned" in inspect.getsource(tinker.TrainingClient._take_turn)
    assert "_fail_custom_requests" in inspect.getsource(tinker.TrainingClient.forward_backward_custom)
    assert "poisoned" in POISONED
