"""``Budget.reserve``: every model call holds the most it can cost while in flight, so a cap is hard under
concurrency, the boundary is exact, and impossible usage is a failed call charged at its reservation."""

from __future__ import annotations

import anyio
import pytest

from machine import BadInputError, Budget, BudgetExceeded, Usage
from machine.budget import parse_budget
from machine.budget._budget import MAX_TOKENS_PER_CALL  # the ceiling itself, on purpose
from machine.errors import UsageRefused

QWEN = "Qwen/Qwen3.6-35B-A3B"  # $0.54 input, $0.108 cached input, $1.335 output per million tokens
MILLION_OUT = Usage(output_tokens=1_000_000)  # $1.335 at QWEN
LIMIT = 10  # seconds any test's waits may take


def cost_of(usage: Usage) -> float:
    return Budget(None).cost(QWEN, usage)


async def test_spent_equal_to_the_cap_refuses_the_next_call() -> None:
    budget = Budget(1.335)
    async with budget.reserve(QWEN, MILLION_OUT) as hold:
        hold.settle(MILLION_OUT)
    assert budget.spent == pytest.approx(1.335) and budget.spent >= budget.usd  # type: ignore[operator]
    with pytest.raises(BudgetExceeded, match="is spent"):
        async with budget.reserve(QWEN, Usage(output_tokens=1)):
            pytest.fail("a call started with the budget spent")
    assert budget.reserved == 0.0 and budget.in_flight == 0


async def test_a_call_costing_exactly_what_is_left_is_allowed() -> None:
    budget = Budget(2 * 1.335)  # room for exactly two calls of MILLION_OUT
    async with budget.reserve(QWEN, MILLION_OUT) as hold:
        hold.settle(MILLION_OUT)
    assert budget.remaining == 1.335  # exactly one call's cost is left
    async with budget.reserve(QWEN, MILLION_OUT) as hold:
        assert hold.amount == budget.remaining
        hold.settle(MILLION_OUT)
    assert budget.spent == budget.usd
    with pytest.raises(BudgetExceeded):
        budget.check()


async def test_a_call_in_flight_holds_its_reservation_so_others_wait_then_are_refused() -> None:
    budget = Budget(1.0)
    order: list[str] = []
    first_in = anyio.Event()

    async def first() -> None:
        async with budget.reserve(QWEN, MILLION_OUT) as hold:  # reserves $1.335, over the cap
            first_in.set()
            await anyio.sleep(0.2)
            order.append("first settles")
            hold.settle(MILLION_OUT)

    async def second() -> None:
        await first_in.wait()
        assert budget.reserved == pytest.approx(1.335)
        try:
            async with budget.reserve(QWEN, MILLION_OUT):
                order.append("second started")
        except BudgetExceeded:
            order.append("second refused")

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(first)
            group.start_soon(second)
    assert order == ["first settles", "second refused"]  # it waited, then the spending decided
    assert budget.spent == pytest.approx(1.335)


async def test_a_waiting_call_starts_when_the_call_in_flight_gives_its_hold_back() -> None:
    budget = Budget(1.0)
    small = Usage(output_tokens=1000)
    started = anyio.Event()

    async def first() -> None:
        async with budget.reserve(QWEN, MILLION_OUT) as hold:
            started.set()
            await anyio.sleep(0.1)
            hold.settle(small)  # it cost far less than it could have

    async def second() -> None:
        await started.wait()
        async with budget.reserve(QWEN, small) as hold:
            hold.settle(small)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(first)
            group.start_soon(second)
    assert budget.spent == pytest.approx(2 * cost_of(small))


async def test_concurrent_calls_overshoot_by_less_than_one_reservation() -> None:
    cap, bound = 0.01, Usage(input_tokens=5000, output_tokens=4000)
    budget = Budget(cap)
    one_call = cost_of(bound)
    calls = 0

    async def worker() -> None:
        nonlocal calls
        for _ in range(20):
            try:
                async with budget.reserve(QWEN, bound) as hold:
                    calls += 1
                    await anyio.sleep(0.01)
                    hold.settle(bound)  # every call costs the most it can
            except BudgetExceeded:
                return

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(worker)
    assert budget.spent < cap + one_call
    assert calls == pytest.approx(budget.spent / one_call)


@pytest.mark.parametrize(
    ("reported", "why"),
    [
        (Usage(input_tokens=10, output_tokens=-4_000_000), "negative"),
        (Usage(input_tokens=-5, output_tokens=10), "negative"),
        (Usage(input_tokens=10, cached_input_tokens=-10), "negative"),
        (Usage(input_tokens=10, cached_input_tokens=20), "more than the 10 sent"),
        (Usage(input_tokens=10, output_tokens=501), "more than the 500 max_tokens"),
        (Usage(input_tokens=2001, output_tokens=1), "more than the prompt can hold"),
        (Usage(input_tokens=MAX_TOKENS_PER_CALL + 1), "ceiling"),
    ],
)
async def test_impossible_usage_fails_the_call_charged_at_its_reservation(reported: Usage, why: str) -> None:
    budget = Budget(5.0)
    bound = Usage(input_tokens=2000, output_tokens=500)
    with pytest.raises(UsageRefused, match=why) as refused:
        async with budget.reserve(QWEN, bound) as hold:
            hold.settle(reported)
    assert cost_of(bound) > 0 and refused.value.charged == pytest.approx(cost_of(bound))
    assert budget.spent == pytest.approx(cost_of(bound))  # never less than before, never subtracted
    assert budget.reserved == 0.0


async def test_usage_refused_while_reading_the_reply_is_charged_at_the_reservation() -> None:
    budget = Budget(5.0)
    bound = Usage(input_tokens=2000, output_tokens=500)
    with pytest.raises(UsageRefused):
        async with budget.reserve(QWEN, bound):
            raise UsageRefused("the endpoint reported prompt_tokens=nan")
    assert budget.spent == pytest.approx(cost_of(bound))


async def test_a_call_that_fails_otherwise_gives_its_hold_back_and_costs_nothing() -> None:
    budget = Budget(5.0)
    with pytest.raises(RuntimeError):
        async with budget.reserve(QWEN, MILLION_OUT):
            raise RuntimeError("connection reset")
    assert budget.spent == 0.0 and budget.reserved == 0.0


def test_charge_after_the_fact_refuses_impossible_usage_and_spends_nothing() -> None:
    budget = Budget(None)
    budget.charge(QWEN, MILLION_OUT)
    with pytest.raises(UsageRefused, match="negative"):
        budget.charge(QWEN, Usage(input_tokens=10, output_tokens=-3_000_000_000))
    assert budget.spent == pytest.approx(1.335)


async def test_a_budget_spends_from_its_parent_and_the_parent_cap_holds_across_children() -> None:
    allowance = Budget(2.0, label="allowance")
    calls = [Budget(1.5, parent=allowance) for _ in range(4)]

    async def spend(budget: Budget) -> None:
        for _ in range(10):
            try:
                async with budget.reserve(QWEN, MILLION_OUT) as hold:
                    await anyio.sleep(0.01)
                    hold.settle(MILLION_OUT)
            except BudgetExceeded:
                return

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            for budget in calls:
                group.start_soon(spend, budget)
    assert allowance.spent == pytest.approx(sum(b.spent for b in calls))
    assert allowance.spent < 2.0 + 1.335  # less than the cap plus one call's reservation
    with pytest.raises(BudgetExceeded, match="allowance"):
        Budget(10, parent=allowance).check()


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_is_not_a_budget(value: bool) -> None:
    with pytest.raises(BadInputError, match="not a number"):
        parse_budget(value)
    with pytest.raises(BadInputError):
        Budget(value)


async def test_a_hard_budget_starts_a_call_only_when_its_most_fits_in_what_is_left() -> None:
    """What a person approved ("at most $2") is never passed: a call whose reservation would pass it
    waits for the calls in flight, and is refused once none could give room back."""
    budget = Budget(2.0, hard=True)  # room for one MILLION_OUT reservation ($1.335), not two
    entered = anyio.Event()
    order: list[str] = []

    async def first() -> None:
        async with budget.reserve(QWEN, MILLION_OUT) as hold:
            entered.set()
            await anyio.sleep(0.2)
            order.append("first settles")
            hold.settle(Usage(output_tokens=500_000))  # $0.6675: $1.3325 left, under one reservation

    async def second() -> None:
        await entered.wait()
        with pytest.raises(BudgetExceeded, match=r"could cost up to \$1.3350, more than the \$1.3325 left"):
            async with budget.reserve(QWEN, MILLION_OUT):
                order.append("second ran")
        order.append("second refused")

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(first)
            group.start_soon(second)
    assert order == ["first settles", "second refused"]
    assert budget.spent == pytest.approx(0.6675) and budget.spent <= budget.usd  # type: ignore[operator]
    plain = Budget(2.0)  # a plain cap lets that call start, and end past the cap
    async with plain.reserve(QWEN, MILLION_OUT) as hold:
        hold.settle(Usage(output_tokens=500_000))
    async with plain.reserve(QWEN, MILLION_OUT) as hold:
        hold.settle(MILLION_OUT)
    assert plain.spent > 2.0


async def test_a_hard_budget_above_holds_the_calls_of_a_plain_one_below() -> None:
    approved = Budget(1.0, hard=True)
    call = Budget(None, parent=approved)
    with pytest.raises(BudgetExceeded, match="more than the"):
        async with call.reserve(QWEN, MILLION_OUT):
            pytest.fail("a call started past what was approved")
    assert approved.reserved == 0.0 and call.in_flight == 0
