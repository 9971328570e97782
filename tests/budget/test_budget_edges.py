"""Budgets at their edges: a cap reached while calls are in flight refuses at once (it does not wait for
them), the holds of calls in flight add up and go back exactly, spending is kept under the kind the call
named, a call the request does not bound holds nothing, refusals carry their figures and what to do, and
a refusal of impossible usage says which count was wrong."""

from __future__ import annotations

import anyio
import pytest

from machine import BadInputError, Budget, BudgetExceeded, Usage
from machine.budget import parse_budget
from machine.errors import Fix, UsageRefused

QWEN = "Qwen/Qwen3.6-35B-A3B"  # $0.54 input, $0.108 cached input, $1.335 output per million tokens
MILLION_OUT = Usage(output_tokens=1_000_000)
LIMIT = 5  # seconds any test's waits may take


def cost_of(usage: Usage) -> float:
    return Budget(None).cost(QWEN, usage)


def arguments(fixes: tuple[Fix, ...]) -> list[tuple[str, str | None]]:
    return [(fix.argument, fix.value) for fix in fixes]


@pytest.mark.parametrize("reached", ["exactly", "over"])
async def test_a_cap_reached_while_a_call_is_in_flight_refuses_the_next_call_at_once(reached: str) -> None:
    small = Usage(output_tokens=1000)
    cap = cost_of(MILLION_OUT) if reached == "exactly" else cost_of(MILLION_OUT) / 2
    budget = Budget(cap)
    holding, done = anyio.Event(), anyio.Event()
    outcome: list[str] = []

    async def in_flight() -> None:
        async with budget.reserve(QWEN, small) as hold:
            holding.set()
            await done.wait()  # it stays in flight until the other call has its answer
            hold.settle(small)

    async def next_call() -> None:
        await holding.wait()
        budget.charge(QWEN, MILLION_OUT)  # a host's call reported after the fact reaches the cap
        try:
            with anyio.fail_after(1):  # a refusal does not wait for the call in flight
                async with budget.reserve(QWEN, small):
                    outcome.append("started")
        except BudgetExceeded:
            outcome.append("refused")
        finally:
            done.set()

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(in_flight)
            group.start_soon(next_call)
    assert outcome == ["refused"]
    assert budget.spent == pytest.approx(cost_of(MILLION_OUT) + cost_of(small))


async def test_holds_of_calls_in_flight_add_up_and_each_goes_back_exactly() -> None:
    with anyio.fail_after(LIMIT):  # a call that can never start fails here, not hangs
        budget = Budget(1.0)
        # two amounts whose float sum, less each in turn, leaves a residue above zero
        a, b = Usage(output_tokens=2000), Usage(output_tokens=23000)
        first, second = budget.reserve(QWEN, a), budget.reserve(QWEN, b)
        await first.__aenter__()
        await second.__aenter__()
        assert (budget.in_flight, budget.reserved) == (2, pytest.approx(cost_of(a) + cost_of(b)))
        first.settle(a)
        await first.__aexit__(None, None, None)
        assert (budget.in_flight, budget.reserved) == (1, pytest.approx(cost_of(b)))
        second.settle(b)
        await second.__aexit__(None, None, None)
        assert (budget.in_flight, budget.reserved) == (0, 0.0)  # exactly: no residue left to drift
        assert budget.spent == pytest.approx(cost_of(a) + cost_of(b))


async def test_spending_is_kept_under_the_kind_the_call_named() -> None:
    with anyio.fail_after(LIMIT):  # a call that can never start fails here, not hangs
        budget = Budget(5.0)
        async with budget.reserve(QWEN, MILLION_OUT) as hold:
            hold.settle(MILLION_OUT)
        async with budget.reserve(QWEN, MILLION_OUT, kind="judge") as hold:
            hold.settle(Usage(output_tokens=200_000))
        assert budget.spent_by_kind == pytest.approx({"runs": 1.335, "judge": 0.267})


async def test_a_call_the_request_does_not_bound_holds_nothing_and_is_charged_what_it_used() -> None:
    with anyio.fail_after(LIMIT):  # a call that can never start fails here, not hangs
        budget = Budget(0.5)
        async with budget.reserve(QWEN) as hold:
            assert (hold.amount, budget.reserved, budget.in_flight) == (0.0, 0.0, 1)
            hold.settle(Usage(output_tokens=100_000))
        assert budget.spent == pytest.approx(0.1335)
        with pytest.raises(UsageRefused) as refused:
            async with budget.reserve(QWEN):
                raise UsageRefused("the endpoint reported prompt_tokens=nan")
        assert refused.value.charged == 0.0 and budget.spent == pytest.approx(0.1335)


async def test_usage_refused_and_caught_inside_the_call_is_still_charged_at_the_reservation() -> None:
    with anyio.fail_after(LIMIT):  # a call that can never start fails here, not hangs
        budget = Budget(5.0)
        bound = Usage(input_tokens=2000, output_tokens=500)
        async with budget.reserve(QWEN, bound) as hold:
            try:
                hold.settle(Usage(output_tokens=-1))
            except UsageRefused as refused:  # a harness that records the failed call and goes on
                charged = refused.charged
        assert charged == pytest.approx(cost_of(bound)) and charged > 0
        assert budget.spent == pytest.approx(cost_of(bound))
        assert (budget.reserved, budget.in_flight) == (0.0, 0)


async def test_a_reservation_is_settled_once() -> None:
    with anyio.fail_after(LIMIT):  # a call that can never start fails here, not hangs
        budget = Budget(5.0)
        async with budget.reserve(QWEN, MILLION_OUT) as hold:
            hold.settle(MILLION_OUT)
            with pytest.raises(RuntimeError, match=r"^a reservation is settled once$"):
                hold.settle(MILLION_OUT)
        assert budget.spent == pytest.approx(1.335)  # the second settle charged nothing


def test_impossible_usage_after_the_fact_is_refused_charging_nothing() -> None:
    with pytest.raises(UsageRefused) as refused:
        Budget(5.0).charge(QWEN, Usage(output_tokens=-1))
    assert refused.value.charged == 0.0


@pytest.mark.parametrize(
    ("reported", "why"),
    [
        (Usage(input_tokens=-5, output_tokens=10), "-5 prompt tokens is negative"),
        (Usage(input_tokens=10, cached_input_tokens=-10), "-10 cached prompt tokens is negative"),
        (Usage(input_tokens=10, output_tokens=-4), "-4 output tokens is negative"),
        (Usage(output_tokens=10_000_001), "10000001 output tokens is over the ceiling of 10,000,000 a call"),
    ],
)
def test_a_refusal_of_usage_names_the_count_that_is_wrong(reported: Usage, why: str) -> None:
    with pytest.raises(UsageRefused) as refused:
        Budget(None).charge(QWEN, reported)
    assert str(refused.value) == f"{QWEN!r} reported usage that cannot be right: {why}"


def test_a_refusal_of_a_zero_cap_says_zero_and_how_to_go_on() -> None:
    budget = Budget(0)
    with pytest.raises(BudgetExceeded) as refused:
        budget.check()
    assert refused.value.message == "the budget of $0.0000 is spent ($0.0000)"
    assert arguments(refused.value.fixes) == [("budget", "USD")]


@pytest.mark.parametrize("value", [True, "-1", float("nan")])
def test_a_budget_refused_says_what_to_pass(value: object) -> None:
    with pytest.raises(BadInputError) as refused:
        parse_budget(value)  # type: ignore[arg-type]
    assert arguments(refused.value.fixes) == [("budget", "2.5")]


@pytest.mark.parametrize(
    ("cap", "spend", "words"),
    [
        (None, [], "spent $0.0000 of no cap"),
        (2.5, [], "spent $0.0000 of budget $2.50"),
        (
            0.001,
            [("runs", 1_000_000), ("judge", 200_000)],
            "spent $1.6020 (judge $0.2670, runs $1.3350) of budget $0.001",
        ),
    ],
)
def test_describe_says_the_spending_by_kind_against_the_cap(
    cap: float | None, spend: list[tuple[str, int]], words: str
) -> None:
    budget = Budget(cap)
    for kind, tokens in spend:
        budget.charge(QWEN, Usage(output_tokens=tokens), kind=kind)
    assert budget.describe() == words
