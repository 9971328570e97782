import pytest

from machine import BadInputError, Budget, BudgetExceeded, UnknownPriceError, Usage
from machine.budget import parse_budget, price_of
from machine.budget._pricing import FREE  # the free price itself, on purpose

QWEN = "Qwen/Qwen3.6-35B-A3B"  # $0.54 input, $0.108 cached input, $1.335 output per million tokens
CHECKPOINT = "tinker://3f9a/sampler_weights/000100"


def usage(input_tokens: int = 0, cached: int = 0, output: int = 0) -> Usage:
    return Usage(input_tokens=input_tokens, cached_input_tokens=cached, output_tokens=output)


def test_charges_cached_input_at_its_own_rate() -> None:
    budget = Budget(10)
    cost = budget.charge(QWEN, usage(1_000_000, cached=400_000, output=200_000))
    # 600k uncached * 0.54 + 400k cached * 0.108 + 200k output * 1.335, per million
    assert cost == pytest.approx(0.324 + 0.0432 + 0.267)
    assert budget.spent == pytest.approx(0.6342)
    assert budget.remaining == pytest.approx(10 - 0.6342)


def test_zero_usage_costs_nothing_even_at_unknown_price() -> None:
    assert Budget(1).charge("mystery/model", usage()) == 0.0


def test_refuses_new_work_once_limit_is_reached() -> None:
    budget = Budget(0.5)
    budget.check()
    budget.charge(QWEN, usage(output=1_000_000))  # $1.335: in-flight work still charges past the cap
    assert budget.spent == pytest.approx(1.335)
    assert budget.exhausted
    assert budget.remaining == 0.0
    with pytest.raises(BudgetExceeded, match=r"budget of \$0\.5000 is spent"):
        budget.check()


def test_no_cap_never_refuses() -> None:
    budget = Budget(None)
    budget.charge(QWEN, usage(output=10_000_000))
    budget.check()
    assert budget.remaining is None
    assert not budget.exhausted


def test_spent_tracked_per_kind() -> None:
    budget = Budget(None)
    budget.charge(QWEN, usage(output=1_000_000))
    budget.charge(QWEN, usage(input_tokens=1_000_000), kind="judge")
    budget.charge(QWEN, usage(input_tokens=1_000_000), kind="judge")
    assert budget.spent_by_kind == pytest.approx({"runs": 1.335, "judge": 1.08})
    assert budget.spent == pytest.approx(2.415)
    assert "judge $1.0800" in budget.describe()
    assert "no cap" in budget.describe()


def test_unknown_price_under_budget_raises() -> None:
    budget = Budget(5)
    with pytest.raises(UnknownPriceError, match=r"'mystery/model' has no known price.*price_as="):
        budget.charge("mystery/model", usage(input_tokens=10))
    assert budget.spent == 0.0


def test_unknown_price_is_a_budget_refusal() -> None:
    assert issubclass(UnknownPriceError, BudgetExceeded)


def test_unknown_price_without_cap_costs_zero() -> None:
    assert Budget(None).charge("mystery/model", usage(input_tokens=10)) == 0.0


def test_price_as_charges_checkpoint_at_base() -> None:
    budget = Budget(5, price_as={CHECKPOINT: QWEN})
    assert budget.charge(CHECKPOINT, usage(output=1_000_000)) == pytest.approx(1.335)


def test_price_as_for_every_unlisted_model_leaves_listed_prices_alone() -> None:
    budget = Budget(5, price_as={"*": QWEN})
    assert budget.charge(CHECKPOINT, usage(output=1_000_000)) == pytest.approx(1.335)
    assert budget.charge("Qwen/Qwen3.8-27B", usage(output=1_000_000)) == pytest.approx(5.595)


def test_checkpoint_without_price_as_is_refused_under_budget() -> None:
    with pytest.raises(UnknownPriceError):
        Budget(5).charge(CHECKPOINT, usage(output=1))


@pytest.mark.parametrize(
    "model",
    [
        "meta-llama/llama-3.3-70b-instruct:free",
        "openrouter/meta-llama/llama-3.3-70b-instruct:free",
        "echo",
        "scripted",
    ],
)
def test_free_models_cost_nothing_under_budget(model: str) -> None:
    assert price_of(model) == FREE
    assert Budget(1).charge(model, usage(1000, output=1000)) == 0.0


def test_a_tinker_prefix_finds_the_listed_price() -> None:
    assert price_of(f"tinker/{QWEN}") == price_of(QWEN)


@pytest.mark.parametrize("model", [f"openrouter/{QWEN}", QWEN.lower()])
def test_openrouter_ids_and_other_spellings_are_not_charged_tinker_prices(model: str) -> None:
    assert price_of(model) is None


def test_unknown_openrouter_model_has_no_price() -> None:
    assert price_of("openrouter/vendor/unknown-model") is None


@pytest.mark.parametrize("value", ["none", " None ", None])
def test_parse_budget_none_lifts_cap(value: str | None) -> None:
    assert parse_budget(value) is None


@pytest.mark.parametrize(("value", "usd"), [("2.5", 2.5), (3, 3.0), ("0", 0.0)])
def test_parse_budget_numbers(value: str | float, usd: float) -> None:
    assert parse_budget(value) == usd


def test_parse_budget_rejects_non_number() -> None:
    with pytest.raises(BadInputError, match=r"budget 'abc' is not a number of USD.*; pass budget=2\.5"):
        parse_budget("abc")


@pytest.mark.parametrize("value", ["-1", -0.01, "nan", "inf"])
def test_parse_budget_rejects_negative_and_non_finite(value: str | float) -> None:
    with pytest.raises(BadInputError, match="must be a non-negative number of USD"):
        parse_budget(value)


def test_budget_constructor_validates() -> None:
    assert Budget("none").usd is None  # type: ignore[arg-type]
    with pytest.raises(BadInputError):
        Budget(-1)
