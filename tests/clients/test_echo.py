import anyio

from machine import Budget, Event, Harness, HarnessRequest, ToolContext, tool
from machine.clients.echo import EchoHarness


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def request(budget: Budget, events: list[Event]) -> HarnessRequest:
    return HarnessRequest(
        run_id="r1",
        machine="calc",
        instructions="Add.",
        input="add 2 and 3",
        model="echo",
        tools=[add],
        tool_context=ToolContext(run_id="r1"),
        budget=budget,
        on_event=events.append,
    )


def test_echo_is_a_harness() -> None:
    assert isinstance(EchoHarness(), Harness)
    assert EchoHarness.name == "echo"


async def test_echo_replies_with_input_in_one_free_turn() -> None:
    budget, events = Budget(0.01), []
    result = await EchoHarness().run(request(budget, events))
    assert result.output == "add 2 and 3"
    assert [(m.role, m.content) for m in result.trajectory] == [
        ("user", "add 2 and 3"),
        ("assistant", "add 2 and 3"),
    ]
    assert result.stop_reason == "end_turn"
    assert result.cost_usd == 0.0
    assert budget.spent == 0.0
    assert [e.type for e in events] == ["assistant"]


async def test_a_cancelled_echo_run_stops_at_its_model_call() -> None:
    """Even a reply that costs nothing is a point where cancellation (Ctrl-C) reaches the run."""
    events: list[Event] = []
    finished = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        await EchoHarness().run(request(Budget(None), events))
        finished = True
    assert scope.cancelled_caught and not finished
    assert events == []  # it stopped before its reply
