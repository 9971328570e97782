"""A tool-using machine and its runs, as the chat harness records them, for the trainers' tests: a step
whose only tool call failed, then a good call, then the answer, each with its reasoning; and the turn of
a conversation a person marked good after marking the reply before it bad."""

from __future__ import annotations

from machine import Machine, Run, check, define_evaluator, define_machine, define_rubric, tool
from machine.runs import Message, Tag, ToolCall

INKLING = "thinkingmachines/Inkling"
INSTRUCTIONS = "You are a helpful agent. Use the weather tool."

FAILED_REASONING = "The tool takes a town, I think."
CALL_REASONING = "I should call the weather tool with the city."
ANSWER_REASONING = "The tool said 18 C, so answer."
BAD_REPLY = "Always sunny in Rome, trust me."
"""The earlier reply of a conversation, which the person marked bad."""


@tool
def get_weather(city: str) -> str:
    """Get the weather in a city."""
    return "18 C"


def weather_machine() -> Machine:
    rubric = define_rubric({"correct": "Gives the weather the tool reported."})
    return define_machine(
        name="weather",
        intent="Tell the weather.",
        instructions=INSTRUCTIONS,
        model=INKLING,
        rubric=rubric,
        evaluator=define_evaluator(rubric, {"correct": check("correct", lambda run: True)}),
        tools=[get_weather],
    )


def answer(city: str) -> str:
    return f"It is 18 C in {city}."


def weather_run(city: str = "Paris", *, failed_first: bool = True) -> Run:
    """A run that (optionally) first calls the tool wrongly, then rightly, then answers."""
    steps: list[Message] = [Message(role="user", content=f"Weather in {city}?")]
    if failed_first:
        steps += [
            Message(
                role="assistant",
                reasoning=FAILED_REASONING,
                tool_calls=[ToolCall(id="c0", name="get_weather", arguments={"town": city})],
            ),
            Message(role="tool", tool_call_id="c0", content="error: unknown argument 'town'", is_error=True),
        ]
    steps += [
        Message(
            role="assistant",
            reasoning=CALL_REASONING,
            tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": city})],
        ),
        Message(role="tool", tool_call_id="c1", content="18 C"),
        Message(role="assistant", reasoning=ANSWER_REASONING, content=answer(city)),
    ]
    return Run(
        machine="weather",
        model=INKLING,
        harness="chat",
        effort=0.9,
        instructions=INSTRUCTIONS,
        input=f"Weather in {city}?",
        trajectory=steps,
        output=answer(city),
        case_id=city.lower(),
    )


def after_a_bad_reply() -> Run:
    """The second turn of a conversation, marked good (its whole trace): its history holds the first
    turn's reply, which the person marked bad, as an assistant message before it."""
    history = [Message(role="user", content="Weather in Rome?"), Message(role="assistant", content=BAD_REPLY)]
    run = weather_run(failed_first=False)
    return run.model_copy(update={"history": history, "tags": [Tag(kind="good", trace=True)]})
