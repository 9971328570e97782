"""The training plan's rule, on counts alone: batches of at most 8 with at least 4 steps an epoch, epochs
raised to 30 steps and capped by 20 epochs and the token cap, every given value kept, and a short plan
refused naming flags that would reach the minimum."""

from __future__ import annotations

import pytest

from machine import BadInputError
from machine.budget import Price
from machine.learn import TrainOptions
from machine.learn.train._schedule import MIN_STEPS, TOKEN_CAP, refuse_short, refuse_unreachable, schedule
from machine.training import Prepared


def prepared(sequences: int, tokens: int = 100) -> Prepared:
    return Prepared(
        trainer="t", renderer="r", examples=sequences, sequences=sequences, tokens=tokens, learning_rate=1e-4
    )


@pytest.mark.parametrize(
    ("sequences", "batch", "epochs", "steps"),
    [
        (16, 4, 8, 32),  # signoff's teacher runs
        (12, 3, 8, 32),
        (3, 2, 15, 30),
        (1000, 8, 1, 125),  # enough data: one pass
        (2, 2, 20, 20),  # too little: capped at 20 epochs, short of 30
    ],
)
def test_the_default_plan(sequences: int, batch: int, epochs: int, steps: int) -> None:
    plan = schedule(prepared(sequences), TrainOptions(), "base")
    assert (plan.batch_size, plan.epochs, plan.steps) == (batch, epochs, steps)
    assert plan.enough is (steps >= MIN_STEPS)


def test_given_values_are_kept_and_only_the_others_chosen() -> None:
    plan = schedule(prepared(16), TrainOptions(batch_size=8), "base")
    assert (plan.batch_size, plan.epochs, plan.steps) == (8, 15, 30)
    assert plan.chosen == ["epochs 15: raised until at least 30 steps"]
    plan = schedule(prepared(16), TrainOptions(epochs=2, batch_size=2), "base")
    assert (plan.steps, plan.chosen) == (16, [])


def test_the_schedule_given_is_planned_and_shown() -> None:
    plan = schedule(prepared(16), TrainOptions(lr_schedule="linear"), "base")
    assert plan.lr_schedule == "linear"
    assert any(
        line.startswith("  learning rate 0.0001, decaying linearly toward 0;") for line in plan.lines()
    )
    assert schedule(prepared(16), TrainOptions(), "base").lr_schedule == "constant"
    with pytest.raises(BadInputError, match="lr_schedule"):
        TrainOptions.checked("lr_schedule", "cosine")


def test_a_large_data_set_is_capped_by_the_tokens_trained() -> None:
    plan = schedule(prepared(40, tokens=TOKEN_CAP // 2), TrainOptions(), "base")
    assert (plan.batch_size, plan.epochs, plan.steps) == (8, 2, 10)  # 30 steps would need 6 epochs
    assert (
        plan.chosen[-1]
        == f"epochs 2: raised until at least 30 steps (capped at 2: {TOKEN_CAP} tokens trained at most)"
    )


def test_the_price_is_the_tokens_trained_at_the_training_price() -> None:
    plan = schedule(prepared(16, tokens=1000), TrainOptions(), "base", price=Price(2.0, 0.2, 6.0))
    assert plan.trained_tokens == 8000 and plan.price_usd == pytest.approx(8000 * 2.0 / 1e6)


def test_a_dpo_plan_prices_the_forward_pass_of_each_step_and_the_base_measured_once() -> None:
    plan = schedule(prepared(16, tokens=1000), TrainOptions(method="dpo"), "base", price=Price(2.0, 0.2, 6.0))
    assert plan.trained_tokens == 3000 and plan.price_usd == pytest.approx((2 * 3000 + 1000) * 2.0 / 1e6)


def test_a_dpo_plan_takes_three_epochs_never_raised_toward_a_minimum_and_names_method_and_beta() -> None:
    """16 pairs: 3 epochs of 4 batches, 12 steps, as TRL plans DPO; the SFT rule would have raised them to
    8 epochs (32 steps), the plan that drove a small model's replies to one phrase."""
    options = TrainOptions(method="dpo", beta=0.2)
    plan = schedule(prepared(16), options, "base", start="local:base+adapter")
    assert (plan.epochs, plan.steps, plan.min_steps, plan.enough) == (3, 12, 0, True)
    assert "epochs 3: DPO's default, as TRL's" in plan.chosen[-1]
    refuse_short(plan, options)  # not refused as short: DPO has no minimum
    first, _, schedule_line, *_ = plan.lines()
    assert first == (
        "training plan: DPO at β 0.2 from local:base+adapter (the live version, also the reference): "
        "the t trainer on base"
    )
    assert "at least" not in schedule_line
    assert schedule(prepared(16), TrainOptions(), "base").epochs == 8  # SFT's rule, for the contrast


def test_a_short_plan_is_refused_with_the_flags_that_fix_it_unless_forced() -> None:
    options = TrainOptions(epochs=2, batch_size=4)
    plan = schedule(prepared(12), options, "base")
    with pytest.raises(BadInputError) as refused:
        refuse_short(plan, options)
    assert refused.value.message == (
        "this training would take 6 optimizer steps (2 epochs x 3 batches of 4 over 12 sequences), and a "
        "model learns little in under 30"
    )
    # no batch of 1 or more reaches 30 steps in the 2 epochs given: more epochs, more data, or force
    fixes = [(f.argument, f.value) for f in refused.value.fixes]
    assert fixes == [("epochs", "10"), ("samples", "4"), ("force", None)]
    refuse_short(plan, TrainOptions(epochs=2, batch_size=4, force=True))  # forced: no error


def test_before_sampling_options_that_cannot_reach_the_steps_are_refused() -> None:
    with pytest.raises(BadInputError, match="would take at most 6 optimizer steps"):
        refuse_unreachable(TrainOptions(epochs=2, batch_size=2, samples=1), cases=3)  # 3 cases x best 2
    refuse_unreachable(TrainOptions(samples=1), cases=3)  # the default plan reaches 30 on 6
