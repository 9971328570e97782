"""RL's plan is counted and priced before anything runs: samples are steps x cases a step x group, every
sample is graded (checks free, a call per judge criterion, one per panel), and sampling, judging and
training are priced at the pricing table's rates, a checkpoint as its base."""

from __future__ import annotations

import math

import pytest
from helpers.training import BASE

from machine import check, define_evaluator, define_machine, define_rubric, judge, judge_panel
from machine.budget import TINKER_PRICES, TINKER_TRAIN_PRICES
from machine.grade import DEFAULT_JUDGE_MODEL
from machine.learn.rl import RLOptions, judge_calls, plan_rl
from machine.learn.rl._plan import JUDGE_PROMPT_TOKENS, JUDGE_REPLY_TOKENS
from machine.spec import Case, Machine

INSTRUCTIONS = "Answer the sum with the number alone, please"  # 44 characters
CASES = [Case(id="a", input="add 2 and 3"), Case(id="b", input="add 10 and 20, now")]  # 11 and 18
PROMPT = math.ceil((44 + 14.5) / 4)  # instructions and the mean input, at 4 characters a token
RUBRIC = define_rubric({"right": "The number is right.", "kind": "The reply is kind."})


def summing(model: str = BASE, **graders: object) -> Machine:
    """A machine with a check (``right``) and a judge (``kind``) criterion, unless told other graders."""
    chosen = graders or {"right": check("right", lambda run: True), "kind": judge()}
    return define_machine(
        name="sums",
        intent="Do sums.",
        instructions=INSTRUCTIONS,
        model=model,
        rubric=RUBRIC,
        evaluator=define_evaluator(RUBRIC, chosen),  # type: ignore[arg-type]
    )


def test_a_check_and_a_judge_counted_and_priced() -> None:
    options = RLOptions(group=4, cases_per_step=2, rl_steps=3, max_tokens=100)
    plan = plan_rl(summing(), CASES, options)
    assert (plan.samples, plan.runs, plan.steps) == (24, 24, 3)
    assert plan.checks == ["right"]
    assert [(c.kind, c.criteria, c.model) for c in plan.judging] == [("judge", ["kind"], DEFAULT_JUDGE_MODEL)]
    assert plan.judge_calls == 24
    assert (plan.prompt_tokens, plan.reply_tokens) == (PROMPT, 100)
    assert plan.training_tokens == 24 * (PROMPT + 100)

    sampling = TINKER_PRICES[BASE]
    judging = TINKER_PRICES[DEFAULT_JUDGE_MODEL]
    judged = JUDGE_PROMPT_TOKENS + PROMPT + 100 + math.ceil(len("The reply is kind.") / 4)
    expected = {
        "sampling": 24 * (PROMPT * sampling.input + 100 * sampling.output) / 1e6,
        "judging": 24 * (judged * judging.input + JUDGE_REPLY_TOKENS * judging.output) / 1e6,
        "training": 24 * (PROMPT + 100) * TINKER_TRAIN_PRICES[BASE] / 1e6,
    }
    assert plan.prices == pytest.approx(expected)
    assert plan.price_usd == pytest.approx(sum(expected.values()))
    said = plan.describe()
    assert "at most 24 runs (a group of 4 of each of 2 cases a step, graded)" in said
    assert "3 RL steps of 8 samples (importance_sampling, one optimizer step each)" in said
    assert (
        f"24 judge calls, about {24 * (PROMPT + 100):,} training tokens, about ${plan.price_usd:.2f}" in said
    )
    assert plan.warnings == []


def test_ppo_trains_each_batch_once_a_pass() -> None:
    one = plan_rl(summing(), CASES, RLOptions(max_tokens=100))
    ppo = plan_rl(summing(), CASES, RLOptions.of(loss="ppo", ppo_epochs=3, max_tokens=100))
    assert ppo.training_tokens == 3 * one.training_tokens
    assert ppo.prices["training"] == pytest.approx(3 * (one.prices["training"] or 0))
    assert "3 optimizer steps each, clip 0.2" in ppo.describe()


def test_a_panel_is_one_call_for_its_criteria_and_the_judge_model_can_be_chosen() -> None:
    panel = judge_panel(RUBRIC, ["right", "kind"])
    assert [(c.kind, c.criteria) for c in judge_calls(summing(**panel).evaluator)] == [
        ("panel", ["right", "kind"])
    ]
    two = summing(right=judge(model="Qwen/Qwen3.6-27B"), kind=judge())
    calls = judge_calls(two.evaluator)
    assert [c.model for c in calls] == ["Qwen/Qwen3.6-27B", DEFAULT_JUDGE_MODEL]
    assert [c.model for c in judge_calls(two.evaluator, "Qwen/Qwen3.6-35B-A3B")] == [
        "Qwen/Qwen3.6-35B-A3B"
    ] * 2
    plan = plan_rl(two, CASES, RLOptions(rl_steps=1, cases_per_step=1, group=2))
    assert (plan.judge_calls, plan.checks) == (4, [])


def test_a_local_model_with_checks_alone_costs_nothing() -> None:
    checks = {"right": check("right", lambda run: True), "kind": check("kind", lambda run: True)}
    plan = plan_rl(summing("local:smollm2-135m", **checks), CASES)
    assert plan.judge_calls == 0 and plan.judging == []
    assert plan.prices == {"sampling": 0.0, "judging": 0.0, "training": 0.0}
    assert plan.price_usd == 0.0 and plan.samples == 640


def test_an_unlisted_price_leaves_the_plan_unpriced_and_says_so() -> None:
    plan = plan_rl(summing("some/unlisted-model"), CASES, judge_model="another/unlisted-judge")
    assert plan.price_usd is None
    assert plan.prices == {"sampling": None, "judging": None, "training": None}
    assert any("'some/unlisted-model' has no listed price" in w for w in plan.warnings)
    assert any("judge model another/unlisted-judge has no listed price" in w for w in plan.warnings)
    assert "price unknown (sampling unpriced" in plan.describe()


def test_a_checkpoint_is_priced_as_its_base_and_no_cases_is_a_warning() -> None:
    plan = plan_rl(summing("local:x"), [], base_model=BASE)
    assert plan.model == BASE and plan.prices["training"] is not None and plan.prices["training"] > 0
    assert any("has no cases to sample" in w for w in plan.warnings)


def test_a_kl_penalty_prices_the_bases_log_probabilities() -> None:
    plan = plan_rl(summing(), CASES, RLOptions(max_tokens=100), kl=0.05)
    tokens = plan.samples * (PROMPT + 100)
    assert plan.prices["reference"] == pytest.approx(tokens * TINKER_PRICES[BASE].input / 1e6)
    assert plan.price_usd == pytest.approx(sum(p or 0 for p in plan.prices.values()))
    assert "KL 0.05 to the base" in plan.describe()
    assert "reference" not in plan_rl(summing(), CASES).prices
